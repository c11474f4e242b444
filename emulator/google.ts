import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { googleError, readBody, type RecordedRequest } from './google-common.js';
import { driveService, SPREADSHEET_MIME, type DriveFile } from './google-drive.js';
import { gmailService, type MailboxMessage } from './google-gmail.js';
import { mailboxPages } from './google-mailbox.js';
import { sheetsService, type SeedSheet } from './google-sheets.js';

export { SPREADSHEET_MIME, parseDriveQuery } from './google-drive.js';
export { parseA1, type SeedSheet } from './google-sheets.js';
export { resolveCids } from './google-mailbox.js';
export type { MailAttachment, MailboxMessage } from './google-gmail.js';
export type { RecordedRequest } from './google-common.js';

/**
 * A Google-shaped stand-in for Gmail send, Sheets values.get and Drive files.list, as a real
 * HTTP server on 127.0.0.1. Used by tests and by `airlock demo`. Each service is a file of its own
 * (google-gmail.ts, google-sheets.ts, google-drive.ts, google-mailbox.ts); this one composes them
 * on one server with the shared token check. OAuth (google-oauth.ts) and the Admin SDK Directory
 * (directory.ts) are servers of their own.
 *
 *   POST /gmail/v1/users/me/messages/send        {raw} (base64url RFC 2822) → {id, threadId, labelIds}
 *   POST /mail/v1/users/me/messages/send         alias, so tools can be pointed here without the proxy
 *                                                 (in a session the proxy rewrites /mail/v1 → /gmail/v1)
 *   GET  /v4/spreadsheets/{id}/values/{range}    → {range, majorDimension, values}
 *   GET  /drive/v3/files?q=…&pageSize=…&orderBy=… → {kind, incompleteSearch, files:[{kind,id,name,mimeType,modifiedTime}]}
 *   GET  /mailbox                                 HTML page of received messages
 *   GET  /mailbox/{id}                            one message, HTML body with cid: images resolved
 *   GET  /mailbox.json                            the mailbox as JSON (no attachment bytes)
 *
 * API calls need `Authorization: Bearer <token>` with a token from `acceptTokens`
 * (401 UNAUTHENTICATED otherwise, as Google answers an expired token). The mailbox pages
 * need no token: they stand for the recipient's inbox in a demo.
 */

export interface GoogleSeed {
  spreadsheets?: SeedSheet[];
  /** Extra Drive files that are not spreadsheets (for q filtering). */
  files?: { id: string; name: string; mimeType: string; modifiedTime?: string }[];
}

export interface GoogleEmulatorOptions {
  /** Bearer tokens to accept (default: one random token, returned as `token`). */
  acceptTokens?: string[];
  seed?: GoogleSeed;
  /** The account's address; used as From when a message has none, as Gmail does. */
  userEmail?: string;
  /** Also accept a bearer token this function approves (e.g. one the OAuth emulator issued). */
  authorize?: (token: string) => boolean;
  /**
   * Runs before an API request (not a mailbox page) is answered. A test holds a call open by
   * returning a promise it settles later, e.g. to see a tool shown as running for as long as it likes.
   */
  before?: (request: RecordedRequest) => Promise<void> | void;
}

export interface GoogleEmulator {
  url: string;
  /** The first accepted token. */
  token: string;
  requests: RecordedRequest[];
  mailbox: MailboxMessage[];
  /** Replace the accepted tokens (e.g. [] to make every call 401 like an expired token). */
  acceptTokens(tokens: string[]): void;
  seed(data: GoogleSeed): void;
  close(): Promise<void>;
}

/** Start the emulator on 127.0.0.1:0. */
export async function start(opts: GoogleEmulatorOptions = {}): Promise<GoogleEmulator> {
  let accepted = new Set(opts.acceptTokens ?? [`ya29.emulator-${randomBytes(12).toString('hex')}`]);
  const token = [...accepted][0] ?? '';
  const requests: RecordedRequest[] = [];
  const mailbox: MailboxMessage[] = [];
  const sheets = new Map<string, SeedSheet>();
  const files: DriveFile[] = [];
  const userEmail = opts.userEmail ?? 'me@example.test';

  const seed = (data: GoogleSeed) => {
    for (const s of data.spreadsheets ?? []) {
      sheets.set(s.id, s);
      files.push({
        id: s.id,
        name: s.name,
        mimeType: s.mimeType ?? SPREADSHEET_MIME,
        modifiedTime: s.modifiedTime ?? new Date().toISOString(),
      });
    }
    for (const f of data.files ?? []) files.push({ ...f, modifiedTime: f.modifiedTime ?? new Date().toISOString() });
  };
  if (opts.seed) seed(opts.seed);

  const authorized = (req: IncomingMessage) => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    return !!m && (accepted.has(m[1]) || !!opts.authorize?.(m[1]));
  };

  const services = [
    mailboxPages(mailbox),
    gmailService(mailbox, userEmail),
    sheetsService(sheets),
    driveService(files),
  ];

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): Promise<void> {
    // The mailbox pages need no token: they stand for the recipient's inbox.
    if (await services[0](req, res, url, body)) return;
    if (!authorized(req)) {
      googleError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
      return;
    }
    for (const s of services.slice(1)) if (await s(req, res, url, body)) return;
    googleError(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body: '',
      status: 0,
      at: new Date().toISOString(),
    };
    if (!url.pathname.startsWith('/mailbox')) requests.push(rec);
    res.on('finish', () => {
      rec.status = res.statusCode;
    });
    readBody(req)
      .then(async (body) => {
        rec.body = body.toString('utf8');
        if (!url.pathname.startsWith('/mailbox')) await opts.before?.(rec);
        return handle(req, res, url, body);
      })
      .catch((err: { status?: number }) => {
        if (!res.headersSent)
          googleError(
            res,
            err.status ?? 500,
            err.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INTERNAL',
            'Internal error encountered.',
          );
        else res.destroy();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    mailbox,
    acceptTokens(tokens) {
      accepted = new Set(tokens);
    },
    seed,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
