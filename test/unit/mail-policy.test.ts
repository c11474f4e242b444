/**
 * The proxy's reading of a sent message (core/mail-policy.ts) against mailparser's reading of
 * the same bytes: generated messages (nodemailer's composer with To, Cc and Bcc kept, random
 * ASCII names, attachments and subjects, then folded) must yield the same recipients; what the
 * strict reading refuses (LF-only, encoded-word names, names that look like addresses, groups,
 * Resent-*) is refused; and the policy's verdicts follow its rules. The differential test against
 * three other readers is test/unit/mail-differential.test.ts.
 */
import t from 'tap';
import fc from 'fast-check';
import MailComposer from 'nodemailer/lib/mail-composer';
import { simpleParser, type AddressObject } from 'mailparser';
import { domainMatches, judge, rawMessage, summarise, type MailPolicy } from '../../core/mail-policy.js';

const local = fc
  .stringMatching(/^[a-z][a-z0-9._-]{0,10}[a-z0-9]$/)
  .filter((s) => !/\.\./.test(s) && !/[._-]$/.test(s) && !/\.[_-]|[_-]\./.test(s));
const domain = fc.constantFrom('example.com', 'corp.example', 'a.example.org', 'evil.example', 'mail.corp.example');
const addr = fc.tuple(local, domain).map(([l, d]) => `${l}@${d}`);
const name = fc.oneof(fc.constant(''), fc.constantFrom('Ann Lee', 'Lee, Ann', 'Bob (the boss)', "O'Hara"));
const mailbox = fc.tuple(name, addr).map(([n, a]) => ({ name: n, address: a }));
const list = fc.array(mailbox, { minLength: 0, maxLength: 5 });

async function build(m: {
  to: { name: string; address: string }[];
  cc: { name: string; address: string }[];
  bcc: { name: string; address: string }[];
  subject: string;
  files: { name: string; size: number }[];
}): Promise<Buffer> {
  const composer = new MailComposer({
    from: 'me@corp.example',
    to: m.to.length ? m.to : undefined,
    cc: m.cc.length ? m.cc : undefined,
    bcc: m.bcc.length ? m.bcc : undefined,
    subject: m.subject,
    text: 'hello',
    attachments: m.files.map((f) => ({ filename: f.name, content: Buffer.alloc(f.size, 7) })),
  });
  const mail = composer.compile();
  (mail as unknown as { keepBcc: boolean }).keepBcc = true;
  return mail.build();
}

function parsedAddresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const out: string[] = [];
  for (const o of a ? (Array.isArray(a) ? a : [a]) : []) {
    for (const v of o.value) {
      if (v.address) out.push(v.address.toLowerCase());
      for (const g of v.group ?? []) if (g.address) out.push(g.address.toLowerCase());
    }
  }
  return out;
}

/** Rewrite a message's header block: fold long lines, or switch to LF (refused). */
function mangle(raw: Buffer, how: 'fold' | 'lf' | 'none'): Buffer {
  const s = raw.toString('latin1');
  const cut = s.indexOf('\r\n\r\n');
  let head = s.slice(0, cut);
  const body = s.slice(cut);
  if (how === 'fold') head = head.replace(/(To|Cc|Bcc): ([^\r\n]*?), /g, '$1: $2,\r\n\t ');
  if (how === 'lf') return Buffer.from((head + body).replace(/\r\n/g, '\n'), 'latin1');
  return Buffer.from(head + body, 'latin1');
}

t.test('recipients, subject and attachments as mailparser reads them (generated messages)', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      list,
      list,
      list,
      fc.constantFrom('Report', 'Q3 — résumé ✓', '=?utf-8?q?not_encoded?=', 'a'.repeat(120)),
      fc.array(
        fc.record({
          name: fc.constantFrom('chart.png', 'données.csv', 'a b.txt'),
          size: fc.integer({ min: 0, max: 3000 }),
        }),
        { maxLength: 3 },
      ),
      fc.constantFrom('fold', 'none') as fc.Arbitrary<'fold' | 'lf' | 'none'>,
      async (to, cc, bcc, subject, files, how) => {
        const raw = mangle(await build({ to, cc, bcc, subject, files }), how);
        const mine = summarise(raw);
        const theirs = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
        const expected = [
          ...new Set([...parsedAddresses(theirs.to), ...parsedAddresses(theirs.cc), ...parsedAddresses(theirs.bcc)]),
        ];
        runs++;
        return (
          JSON.stringify([...mine.recipients].sort()) === JSON.stringify([...expected].sort()) &&
          mine.to === parsedAddresses(theirs.to).length &&
          mine.cc === parsedAddresses(theirs.cc).length &&
          mine.bcc === parsedAddresses(theirs.bcc).length &&
          mine.subject === (theirs.subject ?? '') &&
          mine.attachments.length === theirs.attachments.length &&
          mine.attachments.every(
            (a, i) => a.name === theirs.attachments[i].filename && a.size === theirs.attachments[i].size,
          )
        );
      },
    ),
    { numRuns: 150, seed: 2611 },
  );
  t.equal(runs, 150, 'every generated message was compared');
});

t.test('tricks: Bcc only, folded recipient headers, case', async (t) => {
  const cases: { raw: string; want: string[]; counts?: [number, number, number] }[] = [
    {
      raw: 'From: a@corp.example\r\nBcc: hidden@evil.example\r\nSubject: x\r\n\r\nbody',
      want: ['hidden@evil.example'],
      counts: [0, 0, 1],
    },
    {
      raw: 'To: a@corp.example,\r\n b@evil.example\r\nSubject: x\r\n\r\nbody',
      want: ['a@corp.example', 'b@evil.example'],
    },
    { raw: 'To: "Lee, Ann" <real@evil.example>\r\nSubject: x\r\n\r\nbody', want: ['real@evil.example'] },
    {
      raw: 'To: a@corp.example\r\nCc:\r\n\tb@evil.example\r\nSubject: x\r\n\r\nbody',
      want: ['a@corp.example', 'b@evil.example'],
    },
    { raw: 'To: A@Corp.Example\r\nCc: a@corp.example\r\n\r\nbody', want: ['a@corp.example'], counts: [1, 1, 0] },
    { raw: 'To: a@corp.example\r\n', want: ['a@corp.example'] },
  ];
  for (const c of cases) {
    const s = summarise(Buffer.from(c.raw));
    t.same(s.recipients, c.want, JSON.stringify(c.raw.slice(0, 60)));
    if (c.counts) t.same([s.to, s.cc, s.bcc], c.counts, 'counted per header');
  }
});

t.test('what the strict reading refuses as ambiguous (ERR_MAIL_AMBIGUOUS), with what was wrong', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['repeated To', 'To: a@corp.example\r\nTO: c@evil.example\r\n\r\nbody', /more than one To/],
    ['a group', 'To: friends: x@evil.example, y@corp.example;\r\n\r\nbody', /groups/],
    ['an empty group', 'To: undisclosed-recipients:;\r\nBcc: q@evil.example\r\n\r\nbody', /groups/],
    [
      'a quoted name holding an address',
      'To: "z@corp.example" <real@evil.example>\r\n\r\nbody',
      /looks like an address/,
    ],
    ['a comment', 'To: a@corp.example (c@evil.example)\r\n\r\nbody', /comments/],
    ['Resent-Bcc', 'To: a@corp.example\r\nResent-Bcc: r@evil.example\r\n\r\nbody', /Resent-/],
    ['LF only', 'To: a@corp.example\nCc:\n\tb@evil.example\n\nbody', /bare LF/],
    ['an encoded-word name', 'To: =?utf-8?q?Zo=C3=AB?= <z@corp.example>\r\n\r\nbody', /encoded words/],
    ['8-bit in an address header', 'To: Zoë <z@corp.example>\r\n\r\nbody', /printable ASCII/],
    ['whitespace before the colon', 'To : a@corp.example\r\n\r\nbody', /whitespace between/],
    ['a continuation line first', ' To: a@corp.example\r\n\r\nbody', /continuation/],
    ['an empty entry', 'To: a@corp.example,,b@corp.example\r\n\r\nbody', /empty entry/],
    ['an empty To', 'To: \r\nCc: a@corp.example\r\n\r\nbody', /empty/],
    ['a bare word', 'To: bob\r\n\r\nbody', /not an e-mail address/],
    ['a From with a comment', 'From: me@corp.example (x)\r\nTo: a@corp.example\r\n\r\nbody', /From: comments/],
    [
      'two Reply-To',
      'Reply-To: a@corp.example\r\nReply-To: b@corp.example\r\nTo: a@corp.example\r\n\r\nbody',
      /more than one Reply-To/,
    ],
    ['a quoted local part', 'To: <"a b"@corp.example>\r\n\r\nbody', /space|quoted/],
    ['a domain literal', 'To: a@[127.0.0.1]\r\n\r\nbody', /domain literals/],
    ['a NUL in the header block', 'To: a@corp.example\r\nX-Note: a\0b\r\n\r\nbody', /NUL/],
    ['a backslash', 'To: "a\\"b" <a@corp.example>\r\n\r\nbody', /backslash/],
  ];
  for (const [what, raw, msg] of cases) {
    t.throws(
      () => summarise(Buffer.from(raw)),
      { name: 'MailParseError', code: 'ERR_MAIL_AMBIGUOUS', message: msg },
      what,
    );
  }
});

t.test('unreadable messages are refused, never passed', async (t) => {
  t.throws(() => summarise(Buffer.from('no header block at all')), { name: 'MailParseError' });
  t.throws(() => summarise(Buffer.from('To: a@x.example\r\nthis is no header\r\n\r\nbody')), {
    name: 'MailParseError',
  });
  t.throws(
    () => summarise(Buffer.from('To: a@x.example\r\nSubject: a\r\nSubject: b\r\n\r\nbody')),
    { name: 'MailParseError' },
    'two subjects',
  );
  t.throws(
    () => summarise(Buffer.from('To: a@x.example\r\nContent-Type: multipart/mixed\r\n\r\nbody')),
    { name: 'MailParseError' },
    'multipart without boundary',
  );
  t.throws(() => rawMessage(Buffer.from('{"raw":"aGk=","payload":{}}')), { name: 'MailParseError' }, 'unknown field');
  t.throws(() => rawMessage(Buffer.from('{"raw":"***"}')), { name: 'MailParseError' }, 'not base64');
  t.throws(() => rawMessage(Buffer.from('[1]')), { name: 'MailParseError' });
  const raw = Buffer.from('To: a@corp.example\r\n\r\nx').toString('base64url');
  const evil = Buffer.from('To: a@evil.example\r\n\r\nx').toString('base64url');
  for (const body of [
    `{"raw":"${raw}","raw":"${evil}"}`,
    `{"raw":"${raw}","r\\u0061w":"${evil}"}`,
    `{"threadId":"t","raw":"${raw}","threadId":"u"}`,
    `{"raw":"${raw}","threadId":{"a":1,"a":2}}`,
  ]) {
    t.throws(
      () => rawMessage(Buffer.from(body)),
      { name: 'MailParseError', code: 'ERR_MAIL_AMBIGUOUS', message: /more than once/ },
      body.slice(0, 60),
    );
  }
  t.equal(
    rawMessage(
      Buffer.from(
        JSON.stringify({ raw: Buffer.from('To: a@b.example\r\n\r\nx').toString('base64url'), threadId: 't' }),
      ),
    ).toString(),
    'To: a@b.example\r\n\r\nx',
  );
});

t.test('verdicts: blocked wins, allowed domains and subdomains, ask for the rest, limits', async (t) => {
  const policy: MailPolicy = {
    allow_domains: ['corp.example'],
    block_domains: ['evil.example'],
    other: 'ask',
    max_recipients: 3,
    max_per_hour: 10,
    approval_timeout_s: 60,
  };
  const v = (raw: string) => judge(policy, summarise(Buffer.from(raw)));
  t.equal(v('To: a@corp.example, b@mail.corp.example\r\n\r\nx').verdict, 'allow', 'own domain and its subdomain');
  t.equal(v('To: a@corp.example\r\nBcc: b@evil.example\r\n\r\nx').verdict, 'block', 'a blocked Bcc blocks the message');
  t.equal(v('To: a@sub.evil.example\r\n\r\nx').verdict, 'block', 'a subdomain of a blocked domain');
  const ask = v('To: a@corp.example, x@other.example\r\n\r\nx');
  t.equal(ask.verdict, 'ask');
  t.same(ask.verdict === 'ask' ? ask.ask : null, ['x@other.example'], 'only the unknown recipient is asked about');
  t.equal(
    v('To: a@corp.example, b@corp.example, c@corp.example, d@corp.example\r\n\r\nx').verdict,
    'block',
    'over max_recipients',
  );
  t.equal(v('Subject: none\r\n\r\nx').verdict, 'block', 'no recipient');
  t.equal(
    judge({ ...policy, other: 'block' }, summarise(Buffer.from('To: x@other.example\r\n\r\nx'))).verdict,
    'block',
  );
  t.equal(
    judge({ ...policy, other: 'allow' }, summarise(Buffer.from('To: x@other.example\r\n\r\nx'))).verdict,
    'allow',
  );
  t.ok(domainMatches('a.corp.example', 'corp.example'));
  t.notOk(domainMatches('evilcorp.example', 'corp.example'), 'a suffix is not a subdomain');
});
