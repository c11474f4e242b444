/**
 * The one strict reading of a sent message's header block and of its address headers
 * (docs/proxy.md#reading-the-message). Mail readers disagree on comments, groups, encoded words,
 * bare line breaks, missing commas and repeated headers; a message that any two of them could
 * read differently is refused here (ERR_MAIL_AMBIGUOUS) before anyone is asked, so the recipients
 * the policy judges are the ones every reader, and the upstream, sees.
 *
 * The subset accepted, for To, Cc, Bcc, From, Reply-To and Sender:
 * - a comma-separated list of `addr-spec` or `display-name <addr-spec>`;
 * - `addr-spec`: a dot-atom local part (no quoted local part) without `%` or `!` (source routing:
 *   `x%outside.example@allowed.example` is relayed on by the allowed domain's server), one `@`,
 *   a domain of DNS labels (no domain literal, no trailing dot) whose `xn--` labels are the
 *   canonical punycode of a non-ASCII label (mailparser decodes punycode leniently:
 *   `xn--evil-.example` reads as `evil.example` there); domains stay in that ASCII (A-label)
 *   form, the form on the wire, in the policy and on the approval card;
 * - `display-name`: words of atom characters separated by spaces, or one quoted string without
 *   backslashes; never holding an `@`;
 * - printable ASCII only: no comments `( )`, no groups `name: …;`, no encoded words `=?…?=`,
 *   no backslash, no empty entry;
 * - each of these headers at most once; no `Resent-*` header at all;
 * - the header block ends at the first CRLF CRLF and holds no other CR or LF than CRLF pairs,
 *   no NUL, no whitespace between a field name and its colon, no continuation line first.
 */

import { domainToASCII, domainToUnicode } from 'node:url';

export type MailReadCode = 'ERR_MAIL_UNPARSEABLE' | 'ERR_MAIL_AMBIGUOUS';

/**
 * The message could not be read (ERR_MAIL_UNPARSEABLE) or could be read more than one way (ERR_MAIL_AMBIGUOUS).
 * A plain Error, not an AppError: the parser is shared with the sandbox's proxy bundle, and its
 * one reader (core/egress/mail.ts) turns it into a ProxyRefusal with the same code at once.
 */
export class MailParseError extends Error {
  override readonly name = 'MailParseError';
  constructor(
    message: string,
    readonly code: MailReadCode = 'ERR_MAIL_UNPARSEABLE',
  ) {
    super(message);
  }
}

export const ambiguous = (message: string): MailParseError => new MailParseError(message, 'ERR_MAIL_AMBIGUOUS');

/** Address headers read strictly, with the spelling used in messages. */
export const ADDRESS_HEADERS: Readonly<Record<string, string>> = {
  to: 'To',
  cc: 'Cc',
  bcc: 'Bcc',
  from: 'From',
  'reply-to': 'Reply-To',
  sender: 'Sender',
};

const FIELD = /^([!-9;-~]+):(.*)$/s;
const SPACE_BEFORE_COLON = /^[!-9;-~]+[ \t]+:/;
const ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-";
const LOCAL = new RegExp(`^[${ATEXT}]+(?:\\.[${ATEXT}]+)*$`);
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const DOMAIN = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`);
const PHRASE = new RegExp(`^[${ATEXT}]+(?:[ \\t]+[${ATEXT}]+)*$`);
const QUOTED = /^"[^"\\]*"$/;
const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * Where the top-level header block ends (the first CRLF CRLF, or the end of a message without
 * a body), refusing a bare CR, a bare LF or a NUL inside it.
 */
export function splitStrictHead(buf: Buffer): { head: string; bodyStart: number } {
  if (buf[0] === 0x0d && buf[1] === 0x0a) return { head: '', bodyStart: 2 };
  const at = buf.indexOf(CRLF2);
  const end = at < 0 ? buf.length : at + 2;
  for (let i = buf.indexOf(0x0d); i >= 0 && i < end; i = buf.indexOf(0x0d, i + 1)) {
    if (buf[i + 1] !== 0x0a)
      throw ambiguous('a bare CR (not followed by LF) in the header block; only CRLF line endings are accepted');
  }
  for (let i = buf.indexOf(0x0a); i >= 0 && i < end; i = buf.indexOf(0x0a, i + 1)) {
    if (i === 0 || buf[i - 1] !== 0x0d)
      throw ambiguous('a bare LF (not after CR) in the header block; only CRLF line endings are accepted');
  }
  if (buf.subarray(0, end).indexOf(0) >= 0) throw ambiguous('a NUL byte in the header block');
  return { head: buf.toString('latin1', 0, end), bodyStart: at < 0 ? buf.length : at + 4 };
}

/** The header block's fields (CRLF lines, already checked): name (lower case) → unfolded values, in order. */
export function strictFields(head: string): Map<string, string[]> {
  const all = new Map<string, string[]>();
  const lines = head.split('\r\n');
  if (lines[lines.length - 1] === '') lines.pop();
  let last: { name: string; list: string[] } | undefined;
  for (const line of lines) {
    if (line[0] === ' ' || line[0] === '\t') {
      if (!last) throw ambiguous('the header block starts with a continuation line');
      // Unfolding removes the CRLF only (RFC 5322 §2.2.3).
      last.list[last.list.length - 1] += line;
      continue;
    }
    if (SPACE_BEFORE_COLON.test(line)) throw ambiguous('whitespace between a header name and its colon');
    const m = FIELD.exec(line);
    if (!m) throw new MailParseError('a header line has no name');
    const name = m[1].toLowerCase();
    const list = all.get(name) ?? [];
    list.push(m[2]);
    all.set(name, list);
    last = { name, list };
  }
  for (const [name, values] of all) {
    if (name.startsWith('resent-')) throw ambiguous(`Resent-* headers are not accepted (${name})`);
    const label = ADDRESS_HEADERS[name];
    if (label && values.length > 1) throw ambiguous(`the message has more than one ${label} header`);
  }
  for (const values of all.values())
    for (let i = 0; i < values.length; i++) values[i] = values[i].replace(/^[ \t]+|[ \t]+$/g, '');
  return all;
}

/** Split an address list at the commas outside quoted strings. */
function entries(label: string, value: string): string[] {
  const out: string[] = [];
  let quoted = false;
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '"') quoted = !quoted;
    else if (quoted) continue;
    else if (c === '(' || c === ')')
      throw ambiguous(`${label}: comments in parentheses are not accepted in address headers`);
    else if (c === ':' || c === ';') throw ambiguous(`${label}: groups (name: …;) are not accepted in address headers`);
    else if (c === '[' || c === ']') throw ambiguous(`${label}: domain literals [ … ] are not accepted`);
    else if (c === ',') {
      out.push(value.slice(from, i));
      from = i + 1;
    }
  }
  if (quoted) throw ambiguous(`${label}: a quoted string is not closed`);
  out.push(value.slice(from));
  return out.map((e) => e.replace(/^[ \t]+|[ \t]+$/g, ''));
}

/** One plain address (`local@domain`), lower-cased; anything else is refused with what was wrong. */
function addrSpec(label: string, a: string): string {
  const ats = a.split('@').length - 1;
  if (/[ \t]/.test(a))
    throw ambiguous(
      ats > 1 ? `${label}: two addresses without a comma between them` : `${label}: an address with a space in it`,
    );
  if (ats === 0) throw ambiguous(`${label}: "${a.slice(0, 80)}" is not an e-mail address`);
  if (ats > 1) throw ambiguous(`${label}: an address with more than one @`);
  const [local, domain] = a.split('@');
  if (a.includes('"')) throw ambiguous(`${label}: quoted local parts are not accepted`);
  if (!LOCAL.test(local) || !DOMAIN.test(domain))
    throw ambiguous(`${label}: "${a.slice(0, 80)}" is not a plain e-mail address`);
  if (/[%!]/.test(local))
    throw ambiguous(
      `${label}: "${a.slice(0, 80)}" has % or ! in its local part (source routing: the receiving server may relay it to another domain)`,
    );
  for (const l of domain.toLowerCase().split('.')) {
    if (l.startsWith('xn--') && !canonicalPunycode(l))
      throw ambiguous(
        `${label}: the domain label "${l.slice(0, 63)}" is not valid punycode (readers would decode it differently)`,
      );
  }
  return a.toLowerCase();
}

/**
 * Is an `xn--` label (lower case) the one ASCII form of a non-ASCII label? Node's IDNA (UTS #46)
 * decodes it and encodes it back to the same label; an invalid one decodes to itself.
 */
function canonicalPunycode(label: string): boolean {
  const u = domainToUnicode(label);
  return u !== '' && u !== label && /[\u0080-\uffff]/.test(u) && domainToASCII(u) === label;
}

/** One entry: `addr-spec` or `display-name <addr-spec>`. */
function mailbox(label: string, e: string): string {
  if (e === '') throw ambiguous(`${label}: an empty entry in the address list (two commas, or a comma at an end)`);
  const lt = e.indexOf('<');
  if (lt < 0) {
    if (e.includes('>')) throw ambiguous(`${label}: a > without <`);
    return addrSpec(label, e);
  }
  const gt = e.indexOf('>');
  if (e.indexOf('<', lt + 1) >= 0 || gt < lt || e.indexOf('>', gt + 1) >= 0)
    throw ambiguous(`${label}: more than one <…> in one address (a missing comma?)`);
  if (gt !== e.length - 1) throw ambiguous(`${label}: text after <…> (a missing comma?)`);
  const name = e.slice(0, lt).replace(/[ \t]+$/, '');
  if (name.includes('@'))
    throw ambiguous(`${label}: a display name that looks like an address ("${name.slice(0, 80)}")`);
  if (name !== '' && !PHRASE.test(name) && !QUOTED.test(name))
    throw ambiguous(`${label}: the display name "${name.slice(0, 80)}" must be plain words or one quoted string`);
  return addrSpec(label, e.slice(lt + 1, gt));
}

/** The addresses of one address header's value (unfolded), lower-cased, in order. */
export function readAddressList(name: string, value: string): string[] {
  const label = ADDRESS_HEADERS[name] ?? name;
  if (/[^\x20-\x7e\t]/.test(value)) throw ambiguous(`${label}: only printable ASCII is accepted in address headers`);
  if (value.includes('=?')) throw ambiguous(`${label}: encoded words (=?…?=) are not accepted in address headers`);
  if (value.includes('\\')) throw ambiguous(`${label}: backslash escapes are not accepted in address headers`);
  if (value === '') throw ambiguous(`${label}: the header is empty`);
  return entries(label, value).map((e) => mailbox(label, e));
}

/**
 * The name of a key that appears twice in one object of a JSON text (at any depth), or null.
 * `text` must be valid JSON (JSON.parse accepted it); keys are compared decoded (`"r\u0061w"` is `raw`).
 */
export function duplicateJsonKey(text: string): string | null {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = text.indexOf('"', i + 1);
      // A quote after an odd run of backslashes is escaped.
      for (;;) {
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((j - 1 - k) % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.has(key)) return key;
        top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b) {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b) {
      stack.push(null);
      expectKey = false;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c) {
      expectKey = stack.length > 0 && stack[stack.length - 1] !== null;
    }
  }
  return null;
}
