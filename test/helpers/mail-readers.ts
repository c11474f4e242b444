/**
 * Independent readers of a mail's recipients, for the differential test of the proxy's strict
 * reading (test/unit/mail-differential.test.ts, docs/proxy.md#reading-the-message):
 * - `addressparser`: a lenient header split (LF or CRLF, unfolded, every To/Cc/Bcc line) and
 *   nodemailer's addressparser, the reading the proxy had before the strict one;
 * - `mailparser`: mailparser's simpleParser, the reader of the Gmail emulator;
 * - `python-default` and `python-compat32`: Python 3's standard `email` package with its two
 *   policies (one python3 process reads a whole batch).
 * Each answers the sorted, lower-cased recipient set, or null when it could not read the message.
 */
import { spawnSync } from 'node:child_process';
import addressparser from 'nodemailer/lib/addressparser';
import { domainToASCII } from 'node:url';
import { simpleParser, type AddressObject } from 'mailparser';

export type Recipients = string[] | null;
export const READERS = ['addressparser', 'mailparser', 'python-default', 'python-compat32'] as const;
export type ReaderName = (typeof READERS)[number];

/**
 * A reader's address in the form the wire and the policy use: lower case, the domain in its ASCII
 * (A-label) form. mailparser shows an internationalised domain decoded (`x@įevil.example.test`
 * for `x@xn--evil-9ya.example.test`): the same domain, compared here as the recipient's server sees
 * it; a label it decodes that IDNA does not (`xn--evil-.example` → `evil.example`) stays a
 * different domain, a disagreement.
 */
function wireForm(a: string): string {
  const at = a.lastIndexOf('@');
  if (at < 0 || !/[\u0080-\uffff]/.test(a.slice(at + 1))) return a;
  return a.slice(0, at + 1) + (domainToASCII(a.slice(at + 1)) || a.slice(at + 1));
}

const norm = (list: string[]): string[] =>
  [...new Set(list.map((a) => wireForm(a.trim().toLowerCase())).filter((a) => a !== ''))].sort();

function byAddressparser(raw: Buffer): Recipients {
  const s = raw.toString('latin1');
  const m = /\r?\n\r?\n/.exec(s);
  const head = m ? s.slice(0, m.index) : s;
  const out: string[] = [];
  for (const line of head.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/)) {
    const f = /^([!-9;-~]+)[ \t]*:(.*)$/s.exec(line);
    if (!f || !['to', 'cc', 'bcc'].includes(f[1].toLowerCase())) continue;
    for (const a of addressparser(f[2], { flatten: true })) if ('address' in a && a.address) out.push(a.address);
  }
  return norm(out);
}

function addressesOf(a: AddressObject | AddressObject[] | undefined): string[] {
  const out: string[] = [];
  for (const o of a ? (Array.isArray(a) ? a : [a]) : []) {
    for (const v of o.value) {
      if (v.address) out.push(v.address);
      for (const g of v.group ?? []) if (g.address) out.push(g.address);
    }
  }
  return out;
}

async function byMailparser(raw: Buffer): Promise<Recipients> {
  try {
    const m = await simpleParser(raw, {
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
    });
    return norm([...addressesOf(m.to), ...addressesOf(m.cc), ...addressesOf(m.bcc)]);
  } catch {
    return null;
  }
}

const PYTHON = `
import sys, json, base64, email, email.policy, email.utils
out = []
for b in json.load(sys.stdin):
    raw = base64.b64decode(b)
    r = {}
    try:
        m = email.message_from_bytes(raw, policy=email.policy.default)
        got = []
        for h in ('to', 'cc', 'bcc'):
            for v in m.get_all(h, []):
                for a in v.addresses:
                    got.append(a.addr_spec)
        r['default'] = got
    except Exception:
        r['default'] = None
    try:
        m = email.message_from_bytes(raw, policy=email.policy.compat32)
        got = []
        for h in ('to', 'cc', 'bcc'):
            for n, a in email.utils.getaddresses([str(v) for v in m.get_all(h, [])]):
                got.append(a)
        r['compat32'] = got
    except Exception:
        r['compat32'] = None
    out.append(r)
json.dump(out, sys.stdout)
`;

/** Python's two readings of each message (one process for the batch). */
export function byPython(raws: Buffer[]): { default: Recipients; compat32: Recipients }[] {
  const r = spawnSync('python3', ['-c', PYTHON], {
    input: JSON.stringify(raws.map((b) => b.toString('base64'))),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr.toString().slice(0, 500)}`);
  const rows = JSON.parse(r.stdout.toString()) as { default: string[] | null; compat32: string[] | null }[];
  return rows.map((x) => ({ default: x.default && norm(x.default), compat32: x.compat32 && norm(x.compat32) }));
}

/** Every reader's recipients of every message. */
export async function readAll(raws: Buffer[]): Promise<Record<ReaderName, Recipients>[]> {
  const py = byPython(raws);
  const out: Record<ReaderName, Recipients>[] = [];
  for (let i = 0; i < raws.length; i++) {
    out.push({
      addressparser: byAddressparser(raws[i]),
      mailparser: await byMailparser(raws[i]),
      'python-default': py[i].default,
      'python-compat32': py[i].compat32,
    });
  }
  return out;
}

/** Do the readers disagree on the recipients (a reader that gave up counts as disagreeing)? */
export function disagree(r: Record<ReaderName, Recipients>): boolean {
  const first = JSON.stringify(r[READERS[0]]);
  return READERS.some((n) => r[n] === null || JSON.stringify(r[n]) !== first);
}
