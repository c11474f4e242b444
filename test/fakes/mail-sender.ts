/**
 * Run inside a sandbox as the agent child's uid: posts Gmail sends straight to the credential
 * proxy (not through send_email), one per case, each in parallel or in order as the test asks,
 * and prints what each got back as JSON. Argv: the cases file. Env: MAIL_PROXY_URL, MAIL_API_KEY.
 */
import { readFileSync } from 'node:fs';

interface Case {
  id: string;
  /** The RFC 5322 message, or a whole JSON body as a string when `body` is set. */
  raw?: string;
  body?: string;
}

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Case[];
const url = `${process.env.MAIL_PROXY_URL}/gmail/mail/v1/users/me/messages/send`;
const key = process.env.MAIL_API_KEY ?? '';

async function send(c: Case): Promise<{ id: string; status: number; code: string | null; ms: number }> {
  const t0 = Date.now();
  const body = c.body ?? JSON.stringify({ raw: Buffer.from(c.raw ?? '').toString('base64url') });
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    await res.text();
    return { id: c.id, status: res.status, code: res.headers.get('x-airlock-error'), ms: Date.now() - t0 };
  } catch (err) {
    return { id: c.id, status: 0, code: (err as Error).name, ms: Date.now() - t0 };
  }
}

const out = [];
for (const c of cases) out.push(await send(c));
process.stdout.write(JSON.stringify(out));
