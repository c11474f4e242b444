import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { simpleParser, type AddressObject } from 'mailparser';
import { failed, sent, type ServiceHandler } from './google-common.js';

/**
 * Gmail API messages.send: POST /gmail/v1/users/me/messages/send {raw} (base64url RFC 2822) →
 * {id, threadId, labelIds}; also at /mail/v1/…, so tools can be pointed here without the proxy
 * (in a session the proxy rewrites /mail/v1 → /gmail/v1). Sent messages land in the mailbox.
 */

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

function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  if (!a) return [];
  return (Array.isArray(a) ? a : [a]).flatMap((x) => x.value.map((v) => v.address ?? '')).filter(Boolean);
}

/** The messages.send handler; `userEmail` is the From of a message without one, as Gmail does. */
export function gmailService(mailbox: MailboxMessage[], userEmail: string): ServiceHandler {
  return async (req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): Promise<boolean> => {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (path === '/gmail/v1/users/me/messages/send' || path === '/mail/v1/users/me/messages/send') {
      if (method !== 'POST') return failed(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      let parsedBody: { raw?: unknown };
      try {
        parsedBody = JSON.parse(body.toString('utf8')) as { raw?: unknown };
      } catch {
        return failed(res, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
      }
      if (typeof parsedBody.raw !== 'string' || parsedBody.raw === '' || !/^[A-Za-z0-9_=-]+$/.test(parsedBody.raw)) {
        return failed(
          res,
          400,
          'INVALID_ARGUMENT',
          "'raw' RFC822 payload message string or uploading message via /upload/* URL required",
        );
      }
      const raw = Buffer.from(parsedBody.raw, 'base64url');
      const mail = await simpleParser(raw, { keepCidLinks: true });
      const to = addresses(mail.to);
      const cc = addresses(mail.cc);
      const bcc = addresses(mail.bcc);
      if (to.length + cc.length + bcc.length === 0) return failed(res, 400, 'INVALID_ARGUMENT', 'Invalid To header');
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
      return sent(res, 200, { id, threadId: id, labelIds: ['SENT'] });
    }
    return false;
  };
}
