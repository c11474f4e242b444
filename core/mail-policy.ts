/**
 * The send policy the proxy enforces on every mail send, on the message itself.
 *
 * The child sends Gmail's `users.messages.send` with a JSON body `{ "raw": <base64url RFC 5322
 * message> }` (no key twice). The proxy decodes `raw` and reads what a policy needs: the header
 * block and its address headers in one strict subset of RFC 5322 (core/mail-address.ts: anything
 * two mail readers could read differently is refused), the subject (RFC 2047 words decoded) and
 * the MIME tree (attachment names and decoded sizes). Nothing here keeps or logs the body.
 *
 * A message that cannot be read this way is refused: a reader that gives up must never let a
 * message through that the upstream would read differently.
 */
import type { MailPolicy, MailSummary } from './sandbox-protocol.js';
import libmime from 'libmime';
import {
  ambiguous,
  duplicateJsonKey,
  MailParseError,
  readAddressList,
  splitStrictHead,
  strictFields,
} from './mail-address.js';

// libmime's functions are methods of its default export (they use `this`).
const decodeWords = (s: string): string => libmime.decodeWords(s);
const parseHeaderValue = (s: string) => libmime.parseHeaderValue(s);

export type { MailPolicy, MailSummary };
export type MailAttachment = MailSummary['attachments'][number];

export type MailVerdict =
  | { verdict: 'allow' | 'ask'; summary: MailSummary; ask: string[] }
  | { verdict: 'block'; summary: MailSummary; reason: string };

export { MailParseError };

const RECIPIENT_HEADERS = ['to', 'cc', 'bcc'] as const;
const HEADER_LINE = /^([!-9;-~]+)[ \t]*:(.*)$/s;
const MAX_DEPTH = 8;
const MAX_PARTS = 200;
const BODY_KEYS = new Set(['raw', 'threadId']);
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const FAST_HEAD = Buffer.from('{"raw":"');

/**
 * The decoded message of a `users.messages.send` JSON body. The common body, `{"raw":"<base64>"}`
 * exactly, is read without a JSON parse (a string of base64 characters has no escape, so its
 * bytes are its value); anything else goes through JSON.parse and the same checks.
 */
export function rawMessage(body: Buffer): Buffer {
  if (isPlainRaw(body)) return decodeBase64Bytes(body, FAST_HEAD.length, body.length - 2);
  let v: unknown;
  const text = body.toString('utf8');
  try {
    v = JSON.parse(text);
  } catch {
    throw new MailParseError('the send request is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new MailParseError('the send request is not a JSON object');
  // JSON.parse keeps the last of two equal keys; another reader may keep the first.
  const dup = duplicateJsonKey(text);
  if (dup !== null) throw ambiguous(`the send request has the key "${dup.slice(0, 40)}" more than once`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!BODY_KEYS.has(k))
      throw new MailParseError(`the send request has a field the proxy does not read: ${k.slice(0, 40)}`);
  if (typeof o.raw !== 'string' || !o.raw) throw new MailParseError('the send request has no raw message');
  return decodeBase64(o.raw);
}

/** The body is `{"raw":"<characters without a quote or backslash>"}` exactly. */
function isPlainRaw(body: Buffer): boolean {
  if (
    body.length <= FAST_HEAD.length + 2 ||
    !body.subarray(0, FAST_HEAD.length).equals(FAST_HEAD) ||
    body[body.length - 1] !== 0x7d ||
    body[body.length - 2] !== 0x22
  )
    return false;
  return body.indexOf(0x22, FAST_HEAD.length) === body.length - 2 && body.indexOf(0x5c, FAST_HEAD.length) === -1;
}

/**
 * The start of the decoded message up to its first CRLF CRLF (its header block, as the strict
 * reading ends it: splitStrictHead sees the same bytes before that point), for a wall that
 * judges recipients only (the in-sandbox proxy: docs/proxy.md#send-policy); decoded step by step,
 * so a 25 MiB message costs what its head costs. Null when the body is not the plain
 * `{"raw":"…"}` shape, a step is not clean base64, or the message has no empty line: read the
 * whole message then (rawMessage). The rest of the message is not checked here.
 */
export function rawHead(body: Buffer): Buffer | null {
  if (!isPlainRaw(body)) return null;
  const end = body.length - 2;
  const steps: Buffer[] = [];
  for (let i = FAST_HEAD.length; i < end; i += DECODE_STEP) {
    const to = Math.min(end, i + DECODE_STEP);
    const step = Buffer.from(body.toString('latin1', i, to), 'base64url');
    if (to < end && step.length !== ((to - i) / 4) * 3) return null;
    steps.push(step);
    const sofar = steps.length === 1 ? step : Buffer.concat(steps);
    // Where the strict reading (splitStrictHead) ends the header block: the first CRLF CRLF.
    const at = sofar.indexOf('\r\n\r\n');
    if (at >= 0) return sofar.subarray(0, at + 4);
  }
  return null;
}

/** Base64 characters decoded per step: small strings stay in V8's young generation (cheap to collect). */
const DECODE_STEP = 32 * 1024;

/** decodeBase64 of a byte range, step by step, without one large string of the whole value. */
function decodeBase64Bytes(src: Buffer, start: number, end: number): Buffer {
  let pad = 0;
  while (pad < 2 && end - pad > start && src[end - 1 - pad] === 0x3d) pad++;
  const chars = end - start - pad;
  const want = Math.floor((chars * 3) / 4);
  if (chars % 4 === 1) throw new MailParseError('raw is not base64');
  const out = Buffer.allocUnsafe(want + 3);
  let w = 0;
  for (let i = start; i < end; i += DECODE_STEP)
    w += out.write(src.toString('latin1', i, Math.min(end, i + DECODE_STEP)), w, 'base64url');
  // Fewer bytes than the characters promise: one was outside the alphabet ('=' inside too).
  if (w !== want) throw new MailParseError('raw is not base64');
  return out.subarray(0, want);
}

/**
 * Decode base64 (URL-safe or standard alphabet, optional padding), refusing any other character:
 * Node's decoder skips characters outside the alphabet, so the decoded length tells whether
 * every character was one of it.
 */
function decodeBase64(s: string): Buffer {
  const out = Buffer.from(s, 'base64url');
  let pad = 0;
  while (pad < 2 && s.charCodeAt(s.length - 1 - pad) === 0x3d) pad++;
  const chars = s.length - pad;
  // A character outside the alphabet (also '=' before the end) is skipped or ends the decoding:
  // either way fewer bytes come out than the characters promise.
  if (chars % 4 === 1 || out.length !== Math.floor((chars * 3) / 4)) throw new MailParseError('raw is not base64');
  return out;
}

interface Headers {
  /** name (lower case) → every value, unfolded, in order. */
  all: Map<string, string[]>;
}

/** Split a header block (no trailing blank line) into unfolded header fields. */
function parseHeaderBlock(block: string): Headers {
  const all = new Map<string, string[]>();
  // Unfold: a line break followed by a space or tab continues the field (RFC 5322 §2.2.3).
  const lines = block.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/);
  for (const line of lines) {
    if (line === '') continue;
    const m = HEADER_LINE.exec(line);
    if (!m) throw new MailParseError('a header line has no name');
    const name = m[1].toLowerCase();
    const list = all.get(name);
    if (list) list.push(m[2].trim());
    else all.set(name, [m[2].trim()]);
  }
  return { all };
}

/** Where the header block ends: the first empty line (CRLF or LF), found line by line. */
function splitHead(buf: Buffer, from = 0, to = buf.length): { head: string; bodyStart: number } {
  // A part may start with its blank line (no headers at all).
  if (buf[from] === 0x0a) return { head: '', bodyStart: from + 1 };
  if (buf[from] === 0x0d && buf[from + 1] === 0x0a) return { head: '', bodyStart: from + 2 };
  for (let nl = buf.indexOf(0x0a, from); nl >= 0 && nl < to; nl = buf.indexOf(0x0a, nl + 1)) {
    if (buf[nl + 1] === 0x0a) return { head: buf.toString('latin1', from, nl), bodyStart: nl + 2 };
    if (buf[nl + 1] === 0x0d && buf[nl + 2] === 0x0a)
      return { head: buf.toString('latin1', from, nl), bodyStart: nl + 3 };
  }
  return { head: buf.toString('latin1', from, to), bodyStart: to };
}

/** The domain of an address (lower case, no trailing dot), or null when it has none. */
export function domainOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const d = address
    .slice(at + 1)
    .replace(/\.$/, '')
    .toLowerCase();
  return DOMAIN.test(d) ? d : null;
}

/** Does `domain` equal `rule` or lie under it (`a.example.com` under `example.com`)? */
export function domainMatches(domain: string, rule: string): boolean {
  return domain === rule || domain.endsWith('.' + rule);
}

function decodedSize(buf: Buffer, start: number, end: number, encoding: string): number {
  const len = Math.max(0, end - start);
  if (encoding !== 'base64') return len;
  // Base64 bodies are lines of alphabet characters, nearly always of one length: check each line
  // end where a fixed length puts it; only an irregular body has its line breaks counted one by one.
  let breaks = 0;
  const first = buf.indexOf(0x0a, start);
  const step = first - start + 1;
  const term = first > start && buf[first - 1] === 0x0d ? 2 : 1;
  let regular = first >= 0 && first < end && step > term;
  let at = first;
  let lines = 0;
  for (; regular && at < end; at += step) {
    if (buf[at] !== 0x0a) regular = false;
    else lines++;
  }
  if (regular && buf.indexOf(0x0a, at - step + 1) < end && buf.indexOf(0x0a, at - step + 1) !== -1) regular = false;
  if (regular && buf.indexOf(0x0d, at - step + 1) !== -1 && buf.indexOf(0x0d, at - step + 1) < end) regular = false;
  if (regular && term === 1 && buf.indexOf(0x0d, start) !== -1 && buf.indexOf(0x0d, start) < end) regular = false;
  if (regular) breaks = lines * term;
  else {
    for (let i = buf.indexOf(0x0a, start); i >= 0 && i < end; i = buf.indexOf(0x0a, i + 1)) breaks++;
    for (let i = buf.indexOf(0x0d, start); i >= 0 && i < end; i = buf.indexOf(0x0d, i + 1)) breaks++;
  }
  let e = end;
  while (e > start && (buf[e - 1] === 0x20 || buf[e - 1] === 0x09)) {
    e--;
    breaks++;
  }
  let pad = 0;
  for (let i = e - 1; i >= start && pad < 3; i--) {
    const c = buf[i];
    if (c === 0x3d) pad++;
    else if (c !== 0x0a && c !== 0x0d) break;
  }
  const chars = len - breaks;
  return Math.max(0, Math.floor((chars * 3) / 4) - pad);
}

/** Walk one MIME entity: attachments of its leaves, recursing into multiparts. */
function walk(
  buf: Buffer,
  start: number,
  end: number,
  depth: number,
  out: MailAttachment[],
  counter: { parts: number },
  headers?: Headers,
): void {
  if (++counter.parts > MAX_PARTS) throw new MailParseError('the message has too many MIME parts');
  let h = headers;
  let bodyStart = start;
  if (!h) {
    const s = splitHead(buf, start, end);
    h = parseHeaderBlock(s.head);
    bodyStart = s.bodyStart;
  }
  const ct = parseHeaderValue(h.all.get('content-type')?.[0] ?? 'text/plain');
  const type = String(ct.value || 'text/plain').toLowerCase();
  if (type.startsWith('multipart/')) {
    if (depth >= MAX_DEPTH) throw new MailParseError('the message nests MIME parts too deeply');
    const boundary = ct.params.boundary;
    if (!boundary) throw new MailParseError('a multipart part has no boundary');
    const delim = Buffer.from('--' + boundary);
    // Delimiter lines: at the start of the body or after a line break; the line break before a
    // delimiter belongs to it (RFC 2046 §5.1.1). A missing close delimiter ends the part at the end.
    let partStart = -1;
    let i = bodyStart;
    for (;;) {
      const at = buf.indexOf(delim, i);
      if (at < 0 || at >= end) break;
      i = at + delim.length;
      if (!(at === bodyStart || buf[at - 1] === 0x0a)) continue;
      const close = buf[i] === 0x2d && buf[i + 1] === 0x2d;
      // `--b` must not match the longer boundary `--bx`: only space, tab, CR, LF or `--` may follow.
      if (!close && i < end && ![0x20, 0x09, 0x0d, 0x0a].includes(buf[i])) continue;
      const lineBegin = at === bodyStart ? at : buf[at - 2] === 0x0d ? at - 2 : at - 1;
      if (partStart >= 0) walk(buf, partStart, Math.max(partStart, lineBegin), depth + 1, out, counter);
      if (close) {
        partStart = -1;
        break;
      }
      const nl = buf.indexOf(0x0a, i);
      partStart = nl < 0 || nl >= end ? end : nl + 1;
    }
    if (partStart >= 0 && partStart < end) walk(buf, partStart, end, depth + 1, out, counter);
    return;
  }
  const cd = h.all.get('content-disposition')?.[0];
  const disp = cd ? parseHeaderValue(cd) : undefined;
  const filename = disp?.params.filename ?? ct.params.name;
  const isAttachment = String(disp?.value ?? '').toLowerCase() === 'attachment' || filename !== undefined;
  if (type === 'message/rfc822' || isAttachment) {
    const enc = String(h.all.get('content-transfer-encoding')?.[0] ?? '')
      .trim()
      .toLowerCase();
    out.push({
      name: filename ? decodeWords(String(filename)).slice(0, 255) : '(unnamed)',
      size: decodedSize(buf, bodyStart, end, enc),
    });
  }
}

/**
 * Read a decoded RFC 5322 message into its summary, its header block strictly (core/mail-address.ts).
 * Throws MailParseError when it cannot, or when the message could be read more than one way.
 */
export function summarise(raw: Buffer, o: { headOnly?: boolean } = {}): MailSummary {
  const { head, bodyStart } = splitStrictHead(raw);
  if (!head) throw new MailParseError('the message has no header');
  const h: Headers = { all: strictFields(head) };
  for (const name of ['from', 'reply-to', 'sender']) {
    const v = h.all.get(name);
    if (v) readAddressList(name, v[0]);
  }
  const seen = new Set<string>();
  const recipients: string[] = [];
  const counts = { to: 0, cc: 0, bcc: 0 };
  const fields: { to: string[]; cc: string[]; bcc: string[] } = { to: [], cc: [], bcc: [] };
  for (const kind of RECIPIENT_HEADERS) {
    const values = h.all.get(kind);
    if (!values) continue;
    for (const a of readAddressList(kind, values[0])) {
      counts[kind]++;
      if (!fields[kind].includes(a)) fields[kind].push(a);
      if (!seen.has(a)) {
        seen.add(a);
        recipients.push(a);
      }
    }
  }
  const subjects = h.all.get('subject') ?? [];
  if (subjects.length > 1) throw new MailParseError('the message has more than one Subject');
  const subject = subjects.length
    ? decodeWords(subjects[0])
        .replace(/[\r\n\t]+/g, ' ')
        .slice(0, 998)
    : '';
  const attachments: MailAttachment[] = [];
  if (!o.headOnly) walk(raw, bodyStart, raw.length, 0, attachments, { parts: 0 }, h);
  return { recipients, ...counts, fields, subject, attachments, bytes: raw.length };
}

/**
 * Apply a policy to a message: `block` (with the reason the model is told) when a recipient's
 * domain is blocked, a recipient has no domain, there is none or too many; otherwise `ask`
 * when some recipient falls to an `ask` default (`ask` lists them), else `allow`.
 */
export function judge(policy: MailPolicy, summary: MailSummary): MailVerdict {
  if (summary.recipients.length === 0) return { verdict: 'block', summary, reason: 'the message has no recipient' };
  const total = summary.to + summary.cc + summary.bcc;
  if (total > policy.max_recipients)
    return {
      verdict: 'block',
      summary,
      reason: `the message has ${total} recipients; at most ${policy.max_recipients} are allowed`,
    };
  const ask: string[] = [];
  for (const r of summary.recipients) {
    const d = domainOf(r);
    if (!d) return { verdict: 'block', summary, reason: `${r.slice(0, 80)} is not an e-mail address with a domain` };
    if (policy.block_domains.some((b) => domainMatches(d, b)))
      return { verdict: 'block', summary, reason: `mail to ${d} is blocked by the send policy` };
    if (policy.allow_domains.some((a) => domainMatches(d, a))) continue;
    if (policy.other === 'block')
      return { verdict: 'block', summary, reason: `mail to ${d} is not allowed by the send policy` };
    if (policy.other === 'ask') ask.push(r);
  }
  return { verdict: ask.length ? 'ask' : 'allow', summary, ask };
}
