/**
 * The red team's mail categories (docs/proxy.md#reading-the-message), as a fixed corpus shared by
 * the unit differential test, the proxy integration test and the Docker test. Each `head` is the
 * address header block of a message whose recipients two readers see differently (the proxy's old
 * reading saw only corp.example; mailparser, the Gmail emulator's reader, or Python's saw an
 * outside recipient), or which is ambiguous on its face; the strict reading refuses each with
 * ERR_MAIL_AMBIGUOUS before anyone is asked.
 */
export interface HostileMail {
  name: string;
  /** Header lines (CRLF unless the case is about line endings), without Subject and body. */
  head: string;
  /** The words the refusal's message must hold. */
  says: RegExp;
}

export const HOSTILE_MAILS: readonly HostileMail[] = [
  { name: 'an address comment', head: 'To: a@corp.example (c (d) x@evil.example)', says: /comments/ },
  { name: 'a nested comment', head: 'To: (a (b) x@evil.example, c) a@corp.example', says: /comments/ },
  { name: 'a comment-led list', head: 'To: (hi (there) x@evil.example), a@corp.example', says: /comments/ },
  {
    name: 'a group whose display name is an RFC 2047 encoded word',
    head: 'To: =?utf-8?b?eEBldmlsLmV4YW1wbGU=?=: a@corp.example;',
    says: /encoded words/,
  },
  {
    name: 'an encoded word where an address belongs',
    head: 'To: =?utf-8?q?team?= <a@corp.example>, =?utf-8?b?eEBldmlsLmV4YW1wbGU=?=',
    says: /encoded words/,
  },
  { name: 'a bare CR inside a header', head: 'To: a@corp.example\rBcc: x@evil.example', says: /bare CR/ },
  { name: 'two addresses without a comma', head: 'To: a@corp.example x@evil.example', says: /without a comma/ },
  {
    name: 'a display name that is itself an address',
    head: 'To: a@corp.example <x@evil.example>',
    says: /looks like an address/,
  },
  { name: 'two @ in one address', head: 'To: a@corp.example@evil.example', says: /more than one @/ },
  // A label cannot end in a hyphen (so the DNS-label rule refuses it); mailparser decodes it to `evil`.
  {
    name: 'invalid punycode that mailparser decodes (xn--evil- → evil)',
    head: 'To: a@corp.example, x@xn--evil-.example',
    says: /not a plain e-mail address/,
  },
];

/** Further ambiguous shapes the strict reading refuses (not all make readers disagree). */
export const AMBIGUOUS_MAILS: readonly HostileMail[] = [
  { name: 'a bare LF inside the header block', head: 'To: a@corp.example\nBcc: x@evil.example', says: /bare LF/ },
  { name: 'To twice', head: 'To: a@corp.example\r\nTo: x@evil.example', says: /more than one To/ },
  { name: 'a Resent-Bcc', head: 'To: a@corp.example\r\nResent-Bcc: x@evil.example', says: /Resent-/ },
  {
    name: 'source routing with % inside an allowed domain',
    head: 'To: x%evil.example@corp.example',
    says: /% or ! in its local part/,
  },
  {
    name: 'source routing with ! inside an allowed domain',
    head: 'To: evil.example!x@corp.example',
    says: /% or ! in its local part/,
  },
  { name: 'punycode that decodes to itself', head: 'To: x@xn--a.example', says: /not valid punycode/ },
];

/** The whole message of a corpus entry. */
export const hostileMessage = (m: HostileMail): string =>
  `From: me@corp.example\r\n${m.head}\r\nSubject: hostile\r\n\r\nthe body\r\n`;

/** A send request whose `raw` appears twice: JSON.parse keeps the last (outside), another reader the first. */
export function rawTwiceBody(): string {
  const inside = Buffer.from('From: me@corp.example\r\nTo: a@corp.example\r\nSubject: raw twice\r\n\r\nx\r\n').toString(
    'base64url',
  );
  const outside = Buffer.from(
    'From: me@corp.example\r\nTo: x@evil.example\r\nSubject: raw twice\r\n\r\nx\r\n',
  ).toString('base64url');
  return `{"raw":"${inside}","raw":"${outside}"}`;
}
