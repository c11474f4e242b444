/**
 * The differential test of the proxy's strict reading of a mail (core/mail-address.ts,
 * docs/proxy.md#reading-the-message): generated hostile header blocks (comments, nested
 * comments, groups, encoded words, quoted names holding addresses, missing and doubled commas,
 * two @, bare CR and LF, folding, repeated and Resent-* headers) and the red team's fixed corpus
 * are read by four readers besides the proxy: nodemailer's addressparser, mailparser, and Python
 * 3's `email` package with its default and compat32 policies (test/helpers/mail-readers.ts).
 * Wherever the strict reading accepts a message, every reader sees exactly its recipients; so
 * wherever two readers disagree, the strict reading refused.
 */
import t from 'tap';
import fc from 'fast-check';
import { judge, rawHead, rawMessage, summarise } from '../../core/mail-policy.js';
import { disagree, readAll, READERS } from '../helpers/mail-readers.js';
import { AMBIGUOUS_MAILS, HOSTILE_MAILS, hostileMessage } from '../helpers/mail-hostile.js';

type Strict = { ok: true; recipients: string[] } | { ok: false; code: string; message: string };

function strict(raw: Buffer): Strict {
  try {
    return { ok: true, recipients: [...summarise(raw).recipients].sort() };
  } catch (err) {
    const e = err as { code?: string; message: string };
    return { ok: false, code: e.code ?? 'none', message: e.message };
  }
}

const local = fc.constantFrom('a', 'x', 'ann.lee', "o'hara", 'b+tag', 'z_9');
const domain = fc.constantFrom('corp.example', 'evil.example', 'Corp.Example', 'sub.corp.example');
const addr = fc.tuple(local, domain).map(([l, d]) => `${l}@${d}`);
// Internationalised domains in valid punycode (mailparser shows them decoded; compared in their
// ASCII form), also with an upper-case ACE prefix: accepted, and every reader agrees.
const idnAddr = fc
  .tuple(local, fc.constantFrom('xn--evil-9ya.example.test', 'XN--vil-bma.example', 'sub.xn--pple-43d.example'))
  .map(([l, d]) => `${l}@${d}`);
// Labels that are not valid punycode (mailparser decodes some anyway), and source-routing local parts.
const badIdnAddr = fc
  .tuple(local, fc.constantFrom('xn--evil-.example', 'xn--abc.example', 'xn--a.example'))
  .map(([l, d]) => `${l}@${d}`);
const routedAddr = fc
  .tuple(fc.constantFrom('x%evil.example', 'evil.example!x', 'a%b%c'), domain)
  .map(([l, d]) => `${l}@${d}`);
const word = fc.constantFrom(
  'Ann',
  'Lee',
  'team',
  'x@evil.example',
  '=?utf-8?b?eEBldmlsLmV4YW1wbGU=?=',
  '=?utf-8?q?a=2C_b?=',
  '"Lee, Ann"',
  '"x@evil.example"',
  '"a\\"b"',
  "we're",
);
/** One entry of an address list, friendly or hostile. */
const entry: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: addr },
  {
    weight: 3,
    arbitrary: fc.tuple(fc.array(word, { minLength: 1, maxLength: 2 }), addr).map(([w, a]) => `${w.join(' ')} <${a}>`),
  },
  { weight: 1, arbitrary: addr.map((a) => `<${a}>`) },
  { weight: 1, arbitrary: fc.tuple(addr, addr).map(([a, b]) => `${a} (${b})`) },
  { weight: 1, arbitrary: fc.tuple(addr, addr, word).map(([a, b, w]) => `(${w} (${w}) ${b}, c) ${a}`) },
  { weight: 1, arbitrary: fc.tuple(word, addr, addr).map(([w, a, b]) => `${w}: ${a}, ${b};`) },
  { weight: 1, arbitrary: fc.tuple(addr, addr).map(([a, b]) => `${a}@${b.split('@')[1]}`) },
  { weight: 1, arbitrary: fc.tuple(addr, addr).map(([a, b]) => `${a} <${b}>`) },
  { weight: 1, arbitrary: idnAddr },
  { weight: 1, arbitrary: badIdnAddr },
  { weight: 1, arbitrary: routedAddr },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      'undisclosed-recipients:;',
      'bob',
      '<a@corp.example',
      'a@[127.0.0.1]',
      'a@corp.example.',
    ),
  },
);
const sep = fc.constantFrom(', ', ', ', ',', ' ', ',\r\n ', ',\r\n\t', '\r\n ', ', ,', ',\r ', ',\n ', ';');
const list = fc
  .tuple(entry, fc.array(fc.tuple(sep, entry), { maxLength: 3 }))
  .map(([first, rest]) => first + rest.map(([s, e]) => s + e).join(''));
const name = fc.constantFrom('To', 'To', 'Cc', 'Bcc', 'TO', 'bcc', 'Resent-Bcc', 'To ');
const eol = fc.constantFrom('\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r');
const header = fc.tuple(name, list, eol).map(([n, l, e]) => `${n}: ${l}${e}`);
const hostile = fc.array(header, { minLength: 1, maxLength: 3 });
/** Well-formed lists in the accepted subset: names with commas and apostrophes, folding, case. */
const friendlyEntry = fc.oneof(
  addr,
  idnAddr,
  fc
    .tuple(fc.constantFrom('Ann', 'Ann Lee', '"Lee, Ann"', "we're", '"team (sales)"', '""'), addr)
    .map(([w, a]) => `${w} <${a}>`),
  addr.map((a) => `<${a}>`),
);
const friendlyList = fc
  .tuple(
    friendlyEntry,
    fc.array(fc.tuple(fc.constantFrom(', ', ',', ',\r\n ', ',\r\n\t', ' ,  '), friendlyEntry), { maxLength: 4 }),
  )
  .map(([first, rest]) => first + rest.map(([s, e]) => s + e).join(''));
const friendly = fc
  .tuple(fc.subarray(['To', 'Cc', 'bcc'], { minLength: 1 }), fc.array(friendlyList, { minLength: 3, maxLength: 3 }))
  .map(([names, lists]) => names.map((n, i) => `${n}: ${lists[i]}\r\n`));
const message = fc
  .oneof(hostile, friendly)
  .map((hs) => Buffer.from(`From: me@corp.example\r\n${hs.join('')}Subject: hi\r\n\r\nbody\r\n`, 'latin1'));

t.test('generated hostile headers: where the strict reading accepts, all four readers agree with it', async (t) => {
  const raws = fc.sample(message, { numRuns: 600, seed: 3101 });
  const read = await readAll(raws);
  const stats = { accepted: 0, refused: 0, readersDisagree: 0, refusedDisagreements: 0 };
  const failures: string[] = [];
  for (let i = 0; i < raws.length; i++) {
    const s = strict(raws[i]);
    const split = disagree(read[i]);
    if (split) stats.readersDisagree++;
    if (!s.ok) {
      stats.refused++;
      if (split) stats.refusedDisagreements++;
      if (s.code !== 'ERR_MAIL_AMBIGUOUS' && s.code !== 'ERR_MAIL_UNPARSEABLE')
        failures.push(`unexpected error ${s.code}: ${s.message}`);
      continue;
    }
    stats.accepted++;
    for (const r of READERS) {
      if (JSON.stringify(read[i][r]) !== JSON.stringify(s.recipients)) {
        failures.push(
          `${JSON.stringify(raws[i].toString('latin1'))}: strict ${JSON.stringify(s.recipients)}, ${r} ${JSON.stringify(read[i][r])}`,
        );
      }
    }
  }
  t.same(failures.slice(0, 10), [], 'every accepted message is read the same by every reader');
  t.ok(stats.accepted >= 200, `friendly shapes are accepted (${stats.accepted} of ${raws.length})`);
  t.ok(
    stats.readersDisagree >= 150,
    `the generator makes readers disagree (${stats.readersDisagree} of ${raws.length})`,
  );
  t.equal(stats.refusedDisagreements, stats.readersDisagree, 'every message the readers disagree on is refused');
  t.comment(JSON.stringify(stats));
});

t.test("the red team's categories: readers disagree, and the strict reading refuses each as ambiguous", async (t) => {
  const raws = HOSTILE_MAILS.map((m) => Buffer.from(hostileMessage(m), 'latin1'));
  const read = await readAll(raws);
  for (let i = 0; i < HOSTILE_MAILS.length; i++) {
    const m = HOSTILE_MAILS[i];
    t.test(m.name, async (t) => {
      t.ok(disagree(read[i]), `the readers disagree: ${JSON.stringify(read[i])}`);
      t.ok(
        READERS.some((r) => read[i][r]?.some((a) => a.includes('evil.example'))),
        'some reader sees an outside recipient',
      );
      const s = strict(raws[i]);
      t.match(s, { ok: false, code: 'ERR_MAIL_AMBIGUOUS', message: m.says });
    });
  }
});

t.test('further ambiguous shapes are refused too', async (t) => {
  for (const m of AMBIGUOUS_MAILS)
    t.match(
      strict(Buffer.from(hostileMessage(m), 'latin1')),
      { ok: false, code: 'ERR_MAIL_AMBIGUOUS', message: m.says },
      m.name,
    );
});

/**
 * The proxy judges on the header block alone (rawHead + summarise headOnly); the gateway on the host
 * reads the whole message. Over the generated messages, each in a send body with a body part large
 * enough to span many decoding steps: wherever the whole reading accepts, the head reading sees the
 * same recipients, counts and subject; wherever the head reading refuses, the whole reading refuses
 * with the same code. So the proxy never refuses what the host would send, and what it lets through
 * is read again in full on the host.
 */
t.test("the proxy's head-only reading agrees with the host's whole reading", async (t) => {
  const raws = fc.sample(message, { numRuns: 400, seed: 3102 });
  const filler = Buffer.from(`${'A'.repeat(76)}\r\n`.repeat(2000));
  const failures: string[] = [];
  const read = (f: () => unknown) => {
    try {
      return { ok: true as const, v: JSON.stringify({ ...(f() as object), attachments: undefined, bytes: undefined }) };
    } catch (err) {
      return { ok: false as const, code: (err as { code?: string }).code ?? 'none' };
    }
  };
  let headsRead = 0;
  for (const raw of raws) {
    const msg = Buffer.concat([raw, filler]);
    const body = Buffer.from(JSON.stringify({ raw: msg.toString('base64url') }));
    const head = rawHead(body);
    if (head) headsRead++;
    const h = read(() => (head ? summarise(head, { headOnly: true }) : summarise(rawMessage(body))));
    const w = read(() => summarise(rawMessage(body)));
    if (w.ok && (!h.ok || h.v !== w.v))
      failures.push(
        `whole accepts, head ${h.ok ? h.v : h.code}: ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`,
      );
    if (!h.ok && (w.ok || w.code !== h.code))
      failures.push(`head refuses ${h.code}, whole ${w.ok ? 'accepts' : w.code}`);
  }
  t.same(failures.slice(0, 10), [], 'the same reading wherever it matters');
  t.ok(headsRead >= 300, `the head was read without the rest of the message (${headsRead} of ${raws.length})`);
  const big = Buffer.from(
    JSON.stringify({
      raw: Buffer.concat([
        Buffer.from('To: a@corp.example\r\nSubject: s\r\n\r\n'),
        Buffer.alloc(4 << 20, 0x41),
      ]).toString('base64url'),
    }),
  );
  t.equal(
    rawHead(big)?.toString(),
    'To: a@corp.example\r\nSubject: s\r\n\r\n',
    'a 4 MiB message: only its header block is decoded',
  );
  t.equal(
    rawHead(Buffer.from('{"raw":"x","threadId":"t"}')),
    null,
    'another body shape: no head reading (the whole message is read)',
  );
});

/**
 * Internationalised domains (docs/proxy.md#reading-the-message): the strict reading keeps the ASCII
 * (A-label) form, which is what the recipient's server routes on and what the policy's domain
 * lists hold (they accept ASCII only); mailparser shows the same domain decoded. A rule written in
 * the A-label form matches however the prefix is cased, and source-routing local parts are refused
 * before any policy is applied.
 */
t.test('punycode and source routing: one domain for the policy and the wire', async (t) => {
  const raw = Buffer.from('From: me@corp.example\r\nTo: x@XN--evil-9ya.example.test\r\nSubject: s\r\n\r\nb\r\n');
  const s = summarise(raw);
  t.same(s.recipients, ['x@xn--evil-9ya.example.test'], 'the strict reading keeps the A-label form');
  const [read] = await readAll([
    Buffer.from('From: me@corp.example\r\nTo: x@xn--evil-9ya.example.test\r\nSubject: s\r\n\r\nb\r\n'),
  ]);
  t.same(
    read.mailparser,
    ['x@xn--evil-9ya.example.test'],
    "mailparser's decoded domain is the same domain in ASCII form",
  );
  const policy = {
    other: 'allow' as const,
    allow_domains: ['example.test'],
    block_domains: ['xn--evil-9ya.example.test'],
    max_recipients: 50,
    max_per_hour: 60,
    approval_timeout_s: 90,
  };
  t.match(
    judge(policy, s),
    { verdict: 'block', reason: /xn--evil-9ya\.example\.test is blocked/ },
    'a rule in A-label form blocks it',
  );
  for (const to of ['evil%outside.example@example.test', 'outside!evil@example.test']) {
    t.match(
      strict(Buffer.from(`From: me@corp.example\r\nTo: ${to}\r\nSubject: s\r\n\r\nb\r\n`)),
      { ok: false, code: 'ERR_MAIL_AMBIGUOUS', message: /source routing/ },
      `${to}: refused inside an allowed domain`,
    );
  }
});
