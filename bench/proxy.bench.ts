import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Agent, request } from 'undici';
import { silentLogger } from '../core/index.js';
import { EgressGatewayService } from '../daemon/host/egress.js';
import { buildProfile } from '../daemon/host/overlay.js';
import { start as startUpstream } from '../emulator/fake-upstream.js';
import { startCredentialProxy, TUNNEL_IDLE_MS } from '../proxy/index.js';
import { measure, round, stats, type BenchResult } from './lib.js';
import { googleRoutesTo } from './rig.js';

const N = 1000;
const WARMUP = 50;
const CONCURRENCY = 8;
const PATH = '/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3?majorDimension=ROWS';

/**
 * Sheets values.get through proxy + egress gateway (placeholder check and normalisation in the
 * proxy, plain HTTP over the unix socket, the gateway's second admission, token injection and
 * response scrubbing on the host) vs the same fake upstream directly.
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-proxy-'));
  const upstream = await startUpstream();
  const routes = googleRoutesTo(upstream.url);
  const gw = new EgressGatewayService({ log: silentLogger() });
  const sock = join(dir, 'egress.sock');
  const token = 'ya29.bench-real-token-0123456789abcdef';
  const handle = await gw.open('bench', sock, {
    userId: 1,
    routes,
    tokens: { MAIL_ACCESS_TOKEN: token, SHEETS_ACCESS_TOKEN: token, SEARCH_ACCESS_TOKEN: token },
  });
  const placeholder = 'bench-placeholder-0123456789abcdefghij';
  const proxy = await startCredentialProxy({
    profile: buildProfile('bench', 0, routes),
    getPlaceholder: () => placeholder,
    egressSocket: sock,
  });
  const dispatcher = new Agent({ connections: CONCURRENCY });
  const direct = async () => {
    const r = await request(upstream.url + PATH, { dispatcher, headers: { authorization: `Bearer ${token}` } });
    if (r.statusCode !== 200) throw new Error(`direct ${r.statusCode}`);
    await r.body.dump();
  };
  const viaProxy = async () => {
    const r = await request(`http://127.0.0.1:${proxy.port}/sheets${PATH}`, {
      dispatcher,
      headers: { authorization: `Bearer ${placeholder}` },
    });
    if (r.statusCode !== 200) throw new Error(`proxy ${r.statusCode}`);
    await r.body.dump();
  };
  try {
    await measure(WARMUP, direct);
    await measure(WARMUP, viaProxy);
    const d = await measure(N, direct);
    const p = await measure(N, viaProxy);
    const ds = stats(d.samples);
    const ps = stats(p.samples);
    return {
      name: 'proxy',
      rows: [
        { what: 'direct to upstream', n: ds.n, rps: Math.round(d.rps), p50_ms: ds.p50, p99_ms: ds.p99 },
        { what: 'via proxy + egress', n: ps.n, rps: Math.round(p.rps), p50_ms: ps.p50, p99_ms: ps.p99 },
        { what: 'added latency', n: ps.n, rps: 0, p50_ms: round(ps.p50 - ds.p50), p99_ms: round(ps.p99 - ds.p99) },
      ],
      ratios: {
        proxy_p50_vs_direct: ps.p50 / ds.p50,
        proxy_p99_vs_direct: ps.p99 / ds.p99,
        direct_rps_vs_proxy_rps: d.rps / p.rps,
      },
      notes: `GET Sheets values at concurrency ${CONCURRENCY}; connections to the egress unix socket are kept alive and reused (idle ${TUNNEL_IDLE_MS} ms); shared 2-core host, compare ratios not absolutes`,
    };
  } finally {
    await dispatcher.close();
    await proxy.close();
    await handle.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
