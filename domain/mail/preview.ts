/**
 * What the user sees of a held mail send before deciding (docs/chat.md#approvals): From, To, Cc,
 * Bcc and Subject as the send policy read them (core/mail-address.ts, strictly), the plain-text
 * part and the HTML part (the page renders it sanitised in a sandboxed frame), whether the two say
 * different things, and each attachment by name, type and size, the images (PNG, JPEG, GIF, WebP)
 * with their bytes for a thumbnail.
 *
 * Faithful or nothing: a message whose parts the card cannot show as a mail client would (an
 * alternative of another type, more than one body part of a kind, another multipart type, nesting
 * deeper than the composer's, an unknown transfer encoding or charset, a body part over its bound)
 * throws PreviewIncomplete with the reason, and the send is refused (ERR_MAIL_PREVIEW_INCOMPLETE),
 * never sent on a partial preview.
 *
 * Built on the host by the egress gateway from the exact bytes it forwards, kept in memory with
 * the pending hold only (domain/mail/gate.ts), and bounded: never written to the event log, the
 * database or a log line.
 */
import libmime from 'libmime';
import { readAddressList, splitStrictHead, strictFields } from '../../core/mail-address.js';
import type { MailPreview } from '../../core/seams.js';

/** The plain-text part shown, at most (characters); a longer one cannot be approved. */
export const PREVIEW_TEXT_CHARS = 256 * 1024;
/** The HTML part shown, at most (characters); a longer one cannot be approved. */
export const PREVIEW_HTML_CHARS = 1024 * 1024;
/** One image kept for its thumbnail, at most (bytes); a larger one is listed by name and size. */
export const PREVIEW_IMAGE_BYTES = 5 * 1024 * 1024;
/** All images of one preview together, at most (bytes). */
export const PREVIEW_IMAGES_TOTAL_BYTES = 12 * 1024 * 1024;
const MAX_PARTS = 100;
/** mixed › related › alternative › related: the deepest the send_email composer nests, and then some. */
const MAX_DEPTH = 4;
const MULTIPARTS = new Set(['multipart/mixed', 'multipart/alternative', 'multipart/related']);
const ENCODINGS = new Set(['', '7bit', '8bit', 'binary', 'base64', 'quoted-printable']);

/** A message the card cannot show faithfully: `reason` says why (shown to the agent and the user). */
export class PreviewIncomplete extends Error {}
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export type { MailPreview };
export type PreviewAttachment = MailPreview['attachments'][number];

interface Part {
  type: string;
  charset: string;
  name: string | undefined;
  disposition: string;
  body: Buffer;
  /** The multipart/alternative it is a direct child of. */
  inAlternative: boolean;
}

const decodeWords = (s: string): string => libmime.decodeWords(s);
const parseHeaderValue = (s: string) => libmime.parseHeaderValue(s);

/** Unfolded header fields of a MIME part's header block (lenient: the policy already read the message strictly). */
function partHeaders(head: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of head.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/)) {
    const m = /^([!-9;-~]+)[ \t]*:(.*)$/s.exec(line);
    if (m && !out.has(m[1].toLowerCase())) out.set(m[1].toLowerCase(), m[2].trim());
  }
  return out;
}

function splitPart(buf: Buffer): { head: string; body: Buffer } {
  if (buf[0] === 0x0a) return { head: '', body: buf.subarray(1) };
  if (buf[0] === 0x0d && buf[1] === 0x0a) return { head: '', body: buf.subarray(2) };
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  const [at, len] = crlf >= 0 && (lf < 0 || crlf < lf) ? [crlf, 4] : lf >= 0 ? [lf, 2] : [buf.length, 0];
  return { head: buf.toString('latin1', 0, at), body: buf.subarray(Math.min(buf.length, at + len)) };
}

function decodeQp(b: Buffer): Buffer {
  const s = b.toString('latin1').replace(/=\r?\n/g, '');
  const out = Buffer.alloc(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out[n++] = parseInt(s.slice(i + 1, i + 3), 16);
      i += 2;
    } else out[n++] = s.charCodeAt(i) & 0xff;
  }
  return out.subarray(0, n);
}

function decodeBody(body: Buffer, encoding: string): Buffer {
  if (encoding === 'base64') return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  if (encoding === 'quoted-printable') return decodeQp(body);
  return body;
}

function asText(b: Buffer, charset: string): string {
  let d: TextDecoder;
  try {
    d = new TextDecoder(charset || 'utf-8');
  } catch {
    throw new PreviewIncomplete(`a body part in an unknown character set (${charset.slice(0, 40)})`);
  }
  return d.decode(b);
}

/** Every leaf part of a MIME entity, depth first; past the bounds the message is not shown at all. */
function leaves(buf: Buffer, depth: number, out: Part[], inAlternative = false): void {
  if (out.length >= MAX_PARTS) throw new PreviewIncomplete(`more than ${MAX_PARTS} parts`);
  if (depth > MAX_DEPTH) throw new PreviewIncomplete(`multiparts nested deeper than ${MAX_DEPTH}`);
  const { head, body } = splitPart(buf);
  const h = partHeaders(head);
  const ct = parseHeaderValue(h.get('content-type') ?? 'text/plain');
  const type = String(ct.value || 'text/plain').toLowerCase();
  if (type.startsWith('multipart/')) {
    if (!MULTIPARTS.has(type)) throw new PreviewIncomplete(`a ${type.slice(0, 60)} part`);
    const boundary = ct.params.boundary;
    if (!boundary) throw new PreviewIncomplete('a multipart without a boundary');
    const chunks = body
      .toString('latin1')
      .split(
        new RegExp(`(?:^|\\r?\\n)--${boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:--)?[ \\t]*(?:\\r?\\n|$)`),
      );
    for (const c of chunks.slice(1))
      if (c.trim()) leaves(Buffer.from(c, 'latin1'), depth + 1, out, type === 'multipart/alternative');
    return;
  }
  const cd = h.get('content-disposition');
  const disp = cd ? parseHeaderValue(cd) : undefined;
  const rawName = disp?.params.filename ?? ct.params.name;
  const enc = String(h.get('content-transfer-encoding') ?? '')
    .trim()
    .toLowerCase();
  if (!ENCODINGS.has(enc)) throw new PreviewIncomplete(`a part in an unknown transfer encoding (${enc.slice(0, 40)})`);
  out.push({
    inAlternative,
    type,
    charset: String(ct.params.charset ?? 'utf-8'),
    name: rawName ? decodeWords(String(rawName)).slice(0, 255) : undefined,
    disposition: String(disp?.value ?? '').toLowerCase(),
    body: decodeBody(body, enc),
  });
}

/** HTML as readable text: scripts and styles dropped, block ends as line breaks, entities decoded. */
export function htmlToText(html: string): string {
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
  return html
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<img\b[^>]*>/gi, '')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|h[1-6]|li|tr|table|blockquote)\s*>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#') {
        const cp = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return cp > 0 && cp < 0x110000 ? String.fromCodePoint(cp) : '';
      }
      return entities[e.toLowerCase()] ?? m;
    })
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function addresses(fields: Map<string, string[]>, name: string): string[] {
  const v = fields.get(name);
  return v ? readAddressList(name, v[0]) : [];
}

/**
 * The words of a text, for comparing the two parts: letters and digits only, lower-cased, NFKC;
 * so layout, punctuation, bullets and spacing never count as a difference, and any word added,
 * dropped or changed does.
 */
export function words(s: string): string[] {
  return (
    s
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Whether the plain-text part and the visible text of the HTML part say different things. */
export function partsDiffer(text: string, html: string): boolean {
  const a = words(text);
  const b = words(htmlToText(html));
  return a.length !== b.length || a.some((w, i) => w !== b[i]);
}

/** The one body part of a type, or none; two of a kind (clients differ in which they show) cannot be shown faithfully. */
function bodyPart(parts: Part[], type: string): Part | undefined {
  const all = parts.filter((p) => p.type === type);
  if (all.length > 1) throw new PreviewIncomplete(`more than one ${type} body part`);
  return all[0];
}

/** Read the preview of a decoded RFC 5322 message (one the send policy has already read strictly); throws PreviewIncomplete. */
export function mailPreview(raw: Buffer): MailPreview {
  const fields = strictFields(splitStrictHead(raw).head);
  const parts: Part[] = [];
  leaves(raw, 0, parts);
  const isBody = (p: Part) =>
    (p.type === 'text/plain' || p.type === 'text/html') && p.disposition !== 'attachment' && p.name === undefined;
  const other = parts.find((p) => p.inAlternative && !isBody(p));
  if (other) throw new PreviewIncomplete(`an alternative part of type ${other.type.slice(0, 60)}`);
  const plain = bodyPart(parts.filter(isBody), 'text/plain');
  const htmlPart = bodyPart(parts.filter(isBody), 'text/html');
  const text = plain ? asText(plain.body, plain.charset).replace(/\r\n?/g, '\n') : '';
  const html = htmlPart ? asText(htmlPart.body, htmlPart.charset) : null;
  if (text.length > PREVIEW_TEXT_CHARS)
    throw new PreviewIncomplete(`a text part over ${PREVIEW_TEXT_CHARS} characters`);
  if (html !== null && html.length > PREVIEW_HTML_CHARS)
    throw new PreviewIncomplete(`an HTML part over ${PREVIEW_HTML_CHARS} characters`);
  let imageBytes = 0;
  const attachments: PreviewAttachment[] = parts
    .filter((p) => !isBody(p))
    .map((p) => {
      const a: PreviewAttachment = {
        name: p.name ?? '(unnamed)',
        content_type: p.type.slice(0, 100),
        size: p.body.length,
      };
      if (
        IMAGE_TYPES.has(p.type) &&
        p.body.length <= PREVIEW_IMAGE_BYTES &&
        imageBytes + p.body.length <= PREVIEW_IMAGES_TOTAL_BYTES
      ) {
        imageBytes += p.body.length;
        a.data = Buffer.from(p.body); // a copy: the message's buffer is let go
      }
      return a;
    });
  const subject = fields.get('subject')?.[0];
  return {
    from: addresses(fields, 'from'),
    to: addresses(fields, 'to'),
    cc: addresses(fields, 'cc'),
    bcc: addresses(fields, 'bcc'),
    subject: subject
      ? decodeWords(subject)
          .replace(/[\r\n\t]+/g, ' ')
          .slice(0, 998)
      : '',
    text: plain ? text : html !== null ? htmlToText(html) : '',
    truncated: false,
    text_from: plain ? 'plain' : html !== null ? 'html' : 'none',
    html,
    parts_differ: plain !== undefined && html !== null && partsDiffer(text, html),
    attachments,
  };
}
