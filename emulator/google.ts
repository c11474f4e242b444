import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { simpleParser, type AddressObject } from 'mailparser';

/**
 * A Google-shaped stand-in for Gmail send, Sheets values.get and Drive files.list, as a real
 * HTTP server on 127.0.0.1. Used by tests and by `airlock demo`.
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

export const SPREADSHEET_MIME = 'application/vnd.google-apps.spreadsheet';
const MAX_BODY_BYTES = 36 * 1024 * 1024; // Gmail's 35 MB limit for messages.send via JSON

export interface SeedSheet {
  /** Spreadsheet id as in its URL. */
  id: string;
  name: string;
  modifiedTime?: string;
  mimeType?: string;
  /** Tabs by title: rows of cell values (the first tab is the default for ranges without a title). */
  sheets: Record<string, (string | number | boolean | null)[][]>;
}

export interface GoogleSeed {
  spreadsheets?: SeedSheet[];
  /** Extra Drive files that are not spreadsheets (for q filtering). */
  files?: { id: string; name: string; mimeType: string; modifiedTime?: string }[];
}

export interface RecordedRequest {
  method: string;
  /** The request target exactly as received (path and raw query, escapes untouched). */
  target: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  status: number;
  at: string;
}

export interface MailAttachment {
  filename?: string;
  contentType: string;
  contentId?: string;
  cid?: string;
  contentDisposition?: string;
  content: Buffer;
  size: number;
}

export interface MailboxMessage {
  id: string;
  threadId: string;
  receivedAt: string;
  /** The decoded RFC 2822 bytes exactly as received. */
  raw: Buffer;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text?: string;
  html?: string;
  attachments: MailAttachment[];
}

export interface GoogleEmulatorOptions {
  /** Bearer tokens to accept (default: one random token, returned as `token`). */
  acceptTokens?: string[];
  seed?: GoogleSeed;
  /** The account's address; used as From when a message has none, as Gmail does. */
  userEmail?: string;
  /** Also accept a bearer token this function approves (e.g. one the OAuth emulator issued). */
  authorize?: (token: string) => boolean;
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

type Json = Record<string, unknown>;

function googleError(res: ServerResponse, code: number, status: string, message: string): void {
  send(res, code, { error: { code, message, errors: [{ message, domain: 'global', reason: status.toLowerCase() }], status } });
}

function send(res: ServerResponse, code: number, body: Json): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// ------------------------------------------------------------------ A1 ranges

/** Column letters → 0-based index. */
function colIndex(letters: string): number {
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

function colLetters(i: number): string {
  let s = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

interface Cell {
  col?: number;
  row?: number;
}

function parseCell(ref: string): Cell | undefined {
  const m = /^([A-Za-z]{1,3})?(\d{1,7})?$/.exec(ref);
  if (!m || (!m[1] && !m[2])) return undefined;
  return { col: m[1] ? colIndex(m[1]) : undefined, row: m[2] ? Number(m[2]) - 1 : undefined };
}

/** Parse "Tab!A1:B2", "'My tab'!A:C", "A1:B2", "Tab" into a tab title and a box. */
export function parseA1(range: string, tabs: string[]): { tab: string; r0: number; r1: number; c0: number; c1: number } | undefined {
  let tab: string | undefined;
  let cells = range;
  const bang = range.lastIndexOf('!');
  if (bang >= 0) {
    tab = range.slice(0, bang);
    cells = range.slice(bang + 1);
    if (/^'.*'$/.test(tab)) tab = tab.slice(1, -1).replace(/''/g, "'");
  } else if (tabs.includes(range.replace(/^'(.*)'$/, '$1'))) {
    tab = range.replace(/^'(.*)'$/, '$1');
    cells = '';
  }
  tab ??= tabs[0];
  if (tab === undefined || !tabs.includes(tab)) return undefined;
  const INF = Number.MAX_SAFE_INTEGER;
  if (cells === '') return { tab, r0: 0, r1: INF, c0: 0, c1: INF };
  const [a, b] = cells.split(':');
  const ca = parseCell(a);
  const cb = b === undefined ? ca : parseCell(b);
  if (!ca || !cb || cells.split(':').length > 2) return undefined;
  return { tab, r0: ca.row ?? 0, r1: cb.row ?? INF, c0: ca.col ?? 0, c1: cb.col ?? INF };
}

// ------------------------------------------------------------------ Drive q

interface Term {
  field: string;
  op: string;
  value: string | boolean;
}

/** A small parser for Drive's q language: terms joined by `and` (what our tools send). */
export function parseDriveQuery(q: string): Term[] | undefined {
  const terms: Term[] = [];
  const re = /\s*(mimeType|name|trashed|fullText)\s*(=|!=|contains)\s*(?:'((?:[^'\\]|\\.)*)'|(true|false))\s*(?:and\s+|$)/iy;
  let pos = 0;
  while (pos < q.length) {
    re.lastIndex = pos;
    const m = re.exec(q);
    if (!m) return undefined;
    const value = m[4] !== undefined ? m[4] === 'true' : m[3].replace(/\\(.)/g, '$1');
    terms.push({ field: m[1], op: m[2].toLowerCase(), value });
    pos = re.lastIndex;
  }
  return terms;
}

function matches(file: { name: string; mimeType: string }, t: Term): boolean {
  const actual = t.field === 'mimeType' ? file.mimeType : t.field === 'trashed' ? false : file.name;
  if (t.op === 'contains') return typeof t.value === 'string' && String(actual).toLowerCase().includes(t.value.toLowerCase());
  if (t.op === '=') return actual === t.value;
  return actual !== t.value;
}

// ------------------------------------------------------------------ mailbox page

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The message's HTML with every cid: reference replaced by a data: URI of that part. */
export function resolveCids(html: string, attachments: MailAttachment[]): string {
  return html.replace(/cid:([^"'\s)>]+)/gi, (whole, id: string) => {
    const a = attachments.find((x) => x.cid === id || x.contentId === `<${id}>`);
    return a ? `data:${a.contentType};base64,${a.content.toString('base64')}` : whole;
  });
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:60rem}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}iframe{width:100%;min-height:32rem;border:1px solid #ccc}
.meta{color:#555}</style></head><body>${body}</body></html>`;
}

function listPage(box: MailboxMessage[]): string {
  const rows = box
    .slice()
    .reverse()
    .map((m) => `<tr><td>${esc(m.receivedAt)}</td><td>${esc(m.from)}</td><td>${esc(m.to.join(', '))}</td><td><a href="/mailbox/${esc(m.id)}">${esc(m.subject || '(no subject)')}</a></td><td>${m.attachments.length}</td></tr>`)
    .join('');
  return page('Mailbox', `<h1>Mailbox</h1><p class="meta">${box.length} message(s) sent through the emulated Gmail API.</p>
<table><thead><tr><th>Received</th><th>From</th><th>To</th><th>Subject</th><th>Parts</th></tr></thead><tbody>${rows}</tbody></table>`);
}

function messagePage(m: MailboxMessage): string {
  // The agent wrote this HTML: show it in a sandboxed iframe (no scripts, no same-origin).
  const body = m.html !== undefined ? resolveCids(m.html, m.attachments) : `<pre>${esc(m.text ?? '')}</pre>`;
  return page(m.subject, `<p><a href="/mailbox">← Mailbox</a></p><h1>${esc(m.subject || '(no subject)')}</h1>
<p class="meta">From ${esc(m.from)} · To ${esc(m.to.join(', '))}${m.cc.length ? ` · Cc ${esc(m.cc.join(', '))}` : ''} · ${esc(m.receivedAt)}</p>
<iframe sandbox="" referrerpolicy="no-referrer" srcdoc="${esc(body)}"></iframe>`);
}

function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  if (!a) return [];
  return (Array.isArray(a) ? a : [a]).flatMap((x) => x.value.map((v) => v.address ?? '')).filter(Boolean);
}

// ------------------------------------------------------------------ server

/** Start the emulator on 127.0.0.1:0. */
export async function start(opts: GoogleEmulatorOptions = {}): Promise<GoogleEmulator> {
  let accepted = new Set(opts.acceptTokens ?? [`ya29.emulator-${randomBytes(12).toString('hex')}`]);
  const token = [...accepted][0] ?? '';
  const requests: RecordedRequest[] = [];
  const mailbox: MailboxMessage[] = [];
  const sheets = new Map<string, SeedSheet>();
  const files: { id: string; name: string; mimeType: string; modifiedTime: string }[] = [];
  const userEmail = opts.userEmail ?? 'me@example.test';

  const seed = (data: GoogleSeed) => {
    for (const s of data.spreadsheets ?? []) {
      sheets.set(s.id, s);
      files.push({ id: s.id, name: s.name, mimeType: s.mimeType ?? SPREADSHEET_MIME, modifiedTime: s.modifiedTime ?? new Date().toISOString() });
    }
    for (const f of data.files ?? []) files.push({ ...f, modifiedTime: f.modifiedTime ?? new Date().toISOString() });
  };
  if (opts.seed) seed(opts.seed);

  const authorized = (req: IncomingMessage) => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    return !!m && (accepted.has(m[1]) || !!opts.authorize?.(m[1]));
  };

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): Promise<void> {
    const path = url.pathname;
    const method = req.method ?? 'GET';

    if (method === 'GET' && (path === '/mailbox' || path === '/mailbox/')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-src 'self'" });
      res.end(listPage(mailbox));
      return;
    }
    if (method === 'GET' && path === '/mailbox.json') {
      send(res, 200, { messages: mailbox.map(({ raw: _raw, attachments, ...m }) => ({ ...m, attachments: attachments.map(({ content: _c, ...a }) => a) })) });
      return;
    }
    const one = /^\/mailbox\/([A-Za-z0-9]+)$/.exec(path);
    if (method === 'GET' && one) {
      const m = mailbox.find((x) => x.id === one[1]);
      if (!m) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such message');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'" });
      res.end(messagePage(m));
      return;
    }

    if (!authorized(req)) {
      googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
      return;
    }

    if (path === '/gmail/v1/users/me/messages/send' || path === '/mail/v1/users/me/messages/send') {
      if (method !== 'POST') return googleError(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      let parsedBody: { raw?: unknown };
      try {
        parsedBody = JSON.parse(body.toString('utf8')) as { raw?: unknown };
      } catch {
        return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
      }
      if (typeof parsedBody.raw !== 'string' || parsedBody.raw === '' || !/^[A-Za-z0-9_=-]+$/.test(parsedBody.raw)) {
        return googleError(res, 400, 'INVALID_ARGUMENT', "'raw' RFC822 payload message string or uploading message via /upload/* URL required");
      }
      const raw = Buffer.from(parsedBody.raw, 'base64url');
      const mail = await simpleParser(raw, { keepCidLinks: true });
      const to = addresses(mail.to);
      const cc = addresses(mail.cc);
      const bcc = addresses(mail.bcc);
      if (to.length + cc.length + bcc.length === 0) return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid To header');
      const id = randomBytes(8).toString('hex');
      mailbox.push({
        id,
        threadId: id,
        receivedAt: new Date().toISOString(),
        raw,
        from: addresses(mail.from)[0] ?? userEmail,
        to,
        cc,
        bcc,
        subject: mail.subject ?? '',
        text: mail.text,
        html: typeof mail.html === 'string' ? mail.html : undefined,
        attachments: mail.attachments.map((a) => ({
          filename: a.filename,
          contentType: a.contentType,
          contentId: a.contentId,
          cid: a.cid,
          contentDisposition: a.contentDisposition,
          content: a.content,
          size: a.size,
        })),
      });
      return send(res, 200, { id, threadId: id, labelIds: ['SENT'] });
    }

    const values = /^\/v4\/spreadsheets\/([^/]+)\/values\/([^/]+)$/.exec(path);
    if (values) {
      if (method !== 'GET') return googleError(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      const id = decodeURIComponent(values[1]);
      const range = decodeURIComponent(values[2]);
      const s = sheets.get(id);
      if (!s) return googleError(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
      const box = parseA1(range, Object.keys(s.sheets));
      if (!box) return googleError(res, 400, 'INVALID_ARGUMENT', `Unable to parse range: ${range}`);
      const grid = s.sheets[box.tab];
      const rows = grid.slice(box.r0, box.r1 === Number.MAX_SAFE_INTEGER ? undefined : box.r1 + 1).map((r) =>
        r.slice(box.c0, box.c1 === Number.MAX_SAFE_INTEGER ? undefined : box.c1 + 1).map((v) => (v === null ? '' : String(v))),
      );
      // Google trims trailing empty rows and cells.
      const trimmed = rows.map((r) => {
        let n = r.length;
        while (n > 0 && r[n - 1] === '') n--;
        return r.slice(0, n);
      });
      while (trimmed.length && trimmed[trimmed.length - 1].length === 0) trimmed.pop();
      const width = Math.max(0, ...grid.map((r) => r.length));
      const lastCol = Math.min(box.c1, Math.max(box.c0, width - 1));
      const lastRow = Math.min(box.r1, Math.max(box.r0, grid.length - 1));
      const quoted = /^[A-Za-z0-9_]+$/.test(box.tab) ? box.tab : `'${box.tab.replace(/'/g, "''")}'`;
      const out: Json = { range: `${quoted}!${colLetters(box.c0)}${box.r0 + 1}:${colLetters(lastCol)}${lastRow + 1}`, majorDimension: 'ROWS' };
      if (trimmed.length) out.values = trimmed;
      return send(res, 200, out);
    }

    if (path === '/drive/v3/files') {
      if (method !== 'GET') return googleError(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      const terms = parseDriveQuery(url.searchParams.get('q') ?? '');
      if (!terms) return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid Value');
      const pageSize = Number(url.searchParams.get('pageSize') ?? '100');
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid Value');
      let found = files.filter((f) => terms.every((t) => matches(f, t)));
      const orderBy = url.searchParams.get('orderBy') ?? '';
      if (/^modifiedTime desc$/i.test(orderBy)) found = found.slice().sort((a, b) => b.modifiedTime.localeCompare(a.modifiedTime));
      else if (/^name$/i.test(orderBy)) found = found.slice().sort((a, b) => a.name.localeCompare(b.name));
      return send(res, 200, {
        kind: 'drive#fileList',
        incompleteSearch: false,
        files: found.slice(0, pageSize).map((f) => ({ kind: 'drive#file', id: f.id, name: f.name, mimeType: f.mimeType, modifiedTime: f.modifiedTime })),
      });
    }

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
      .then((body) => {
        rec.body = body.toString('utf8');
        return handle(req, res, url, body);
      })
      .catch((err: { status?: number }) => {
        if (!res.headersSent) googleError(res, err.status ?? 500, err.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INTERNAL', 'Internal error encountered.');
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
