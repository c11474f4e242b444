import type MailComposerType from 'nodemailer/lib/mail-composer';
import { ToolError } from './result.js';

/**
 * nodemailer loads on the first message, not at the tools server's start: its ESM build imports
 * node:http, whose ESM facade loads Node's undici (~34 ms of CPU), which a session start should
 * not pay (docs/runtime.md, "Cold start, step by step").
 */
let composerModule: Promise<typeof MailComposerType> | undefined;
const loadComposer = (): Promise<typeof MailComposerType> =>
  (composerModule ??= import('nodemailer/lib/mail-composer').then((m) => m.default));

export interface EmailInput {
  to: string[];
  cc?: string[];
  bcc?: string[];
  subject: string;
  text?: string;
  html?: string;
}

export interface InlinePng {
  /** The attachment's file name (<uuid>.png); also its Content-ID, so HTML says cid:<name>. */
  filename: string;
  /** The file name the message gives it (the chart's title, slugged); the UUID name when absent. */
  name?: string;
  content: Buffer;
  /** Its Content-Type; absent for a PNG. Anything but a PNG is a plain attachment, not inline. */
  type?: string;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Build the RFC 2822 message with nodemailer's MIME composer.
 * - No attachments and no html: a single text/plain message.
 * - html given, or any PNG: multipart/alternative (text + html) with the PNGs in a
 *   multipart/related part, each inline with Content-ID <filename>. An attachment the HTML
 *   does not reference as cid:<filename> is appended as <img src="cid:…">, so every PNG
 *   is shown. With attachments but only text, the HTML is the escaped text plus images.
 * From is MAIL_FROM when the session knows the account address; otherwise it is left out
 * and Gmail fills in the authenticated account, as it does for every send.
 */
export async function buildMessage(input: EmailInput, images: InlinePng[], from?: string): Promise<Buffer> {
  let html = input.html;
  const inline = images.filter((img) => !img.type || img.type === 'image/png');
  if (inline.length > 0) {
    html ??= `<div style="white-space:pre-wrap">${escapeHtml(input.text ?? '')}</div>`;
    const missing = inline.filter((img) => !html!.includes(`cid:${img.filename}`));
    if (missing.length) html += missing.map((img) => `<p><img src="cid:${img.filename}" alt="chart"></p>`).join('');
  }
  const MailComposer = await loadComposer();
  const composer = new MailComposer({
    ...(from ? { from } : {}),
    to: input.to,
    cc: input.cc?.length ? input.cc : undefined,
    bcc: input.bcc?.length ? input.bcc : undefined,
    subject: input.subject,
    text: input.text ?? (html !== undefined ? undefined : ''),
    html,
    attachments: images.map((img) =>
      inline.includes(img)
        ? {
            filename: img.name ?? img.filename,
            content: img.content,
            contentType: 'image/png',
            cid: img.filename,
            contentDisposition: 'inline' as const,
          }
        : {
            filename: img.name ?? img.filename,
            content: img.content,
            contentType: img.type,
            contentDisposition: 'attachment' as const,
          },
    ),
    // Gmail needs Bcc in the raw message to deliver to it; it strips the header on delivery.
    keepBcc: true,
    disableFileAccess: true,
    disableUrlAccess: true,
  } as ConstructorParameters<typeof MailComposerType>[0]);
  const node = composer.compile();
  // keepBcc lives on the MimeNode in nodemailer.
  (node as unknown as { keepBcc: boolean }).keepBcc = true;
  return new Promise<Buffer>((resolve, reject) => {
    node.build((err: Error | null, buf: Buffer) => {
      if (err)
        reject(
          new ToolError('ERR_TOOL_MESSAGE_BUILD', `the message could not be built: ${err.message}`, { cause: err }),
        );
      else resolve(buf);
    });
  });
}
