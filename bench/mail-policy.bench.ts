import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Agent, request } from 'undici';
import { silentLogger } from '../core/index.js';
import { EgressGatewayService } from '../daemon/host/egress.js';
import { buildProfile } from '../daemon/host/overlay.js';
import { start as startUpstream } from '../emulator/fake-upstream.js';
import { startCredentialProxy } from '../proxy/index.js';
import { round, stats, type BenchResult } from './lib.js';
import { googleRoutesTo, megabyteMailBody } from './rig.js';

const N = 600;
const WARMUP = 30;

/**
 * A 1 MiB mail send (a PNG-sized attachment, base64 in `raw`) through the proxy with the send
 * policy (decode, header and MIME reading, verdict, a hold answered at once) vs the same send
 * through a proxy without it, interleaved request by request in one run, so both see the same
 * machine. The budget: at most +1 ms p50.
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-mail-'));
  const upstream = await startUpstream();
  const routes = googleRoutesTo(upstream.url);
  const gw = new EgressGatewayService({ log: silentLogger() });
  const token = 'ya29.bench-real-token-0123456789abcdef';
  const placeholder = 'bench-placeholder-0123456789abcdefghij';
  const tokens = { MAIL_ACCESS_TOKEN: token, SHEETS_ACCESS_TOKEN: token, SEARCH_ACCESS_TOKEN: token };
  const mailPolicy = {
    allow_domains: ['corp.example'],
    block_domains: ['evil.example'],
    other: 'ask' as const,
    max_recipients: 50,
    max_per_hour: 1_000_000,
    approval_timeout_s: 60,
  };
  // Two sessions: one without the send policy, one with it on both walls (the proxy reads the
  // message, the gateway on the host reads it again and holds it; the hold is answered at once).
  const plainSock = join(dir, 'plain.sock');
  const policedSock = join(dir, 'policed.sock');
  const plainGw = await gw.open('bench-plain', plainSock, { userId: 1, routes, tokens });
  const policedGw = await gw.open('bench-policed', policedSock, {
    userId: 1,
    routes,
    tokens,
    mailPolicy,
    hold: async () => ({ allow: true }),
  });
  const common = { profile: buildProfile('bench', 0, routes), getPlaceholder: () => placeholder };
  const plain = await startCredentialProxy({ ...common, egressSocket: plainSock });
  const policed = await startCredentialProxy({ ...common, egressSocket: policedSock, mailPolicy });
  // Upstream requests are recorded by the fake; keep its memory flat over the run.
  const { body, rawBytes } = await megabyteMailBody();
  const dispatcher = new Agent({ connections: 4 });
  const send = async (port: number) => {
    const t0 = process.hrtime.bigint();
    const r = await request(`http://127.0.0.1:${port}/gmail/mail/v1/users/me/messages/send`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${placeholder}`, 'content-type': 'application/json' },
      body,
    });
    if (r.statusCode !== 200) throw new Error(`send ${r.statusCode}`);
    await r.body.dump();
    upstream.requests.length = 0;
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  try {
    for (let i = 0; i < WARMUP; i++) {
      await send(plain.port);
      await send(policed.port);
    }
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < N; i++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      if (i % 2) {
        a.push(await send(plain.port));
        b.push(await send(policed.port));
      } else {
        b.push(await send(policed.port));
        a.push(await send(plain.port));
      }
    }
    const sa = stats(a);
    const sb = stats(b);
    // Each pair ran back to back: the median of the per-pair differences is the policy's cost
    // with the machine's drift between pairs taken out.
    const paired = stats(b.map((x, i) => x - a[i]));
    return {
      name: 'mail-policy',
      rows: [
        { what: '1 MiB send, no policy', n: sa.n, rps: 0, p50_ms: sa.p50, p99_ms: sa.p99 },
        { what: '1 MiB send, send policy', n: sb.n, rps: 0, p50_ms: sb.p50, p99_ms: sb.p99 },
        {
          what: 'added by the policy (p50 difference)',
          n: sb.n,
          rps: 0,
          p50_ms: round(sb.p50 - sa.p50),
          p99_ms: round(sb.p99 - sa.p99),
        },
        { what: 'added by the policy (paired)', n: paired.n, rps: 0, p50_ms: paired.p50, p99_ms: paired.p99 },
      ],
      ratios: {
        policy_p50_vs_plain: sb.p50 / sa.p50,
        policy_added_p50_ms: round(sb.p50 - sa.p50),
        policy_added_paired_p50_ms: paired.p50,
      },
      notes: `message ${rawBytes} bytes (${body.length} as JSON); interleaved pairs, alternating order; the hold is answered at once (the daemon's per-hour check is a database read, measured in the store bench)`,
    };
  } finally {
    await dispatcher.close();
    await plain.close();
    await policed.close();
    await plainGw.close();
    await policedGw.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
