import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Encryptor, silentLogger } from '../core/index.js';
import { CONNECTORS_PLACEHOLDER_ENV, connectorBaseUrlEnv } from '../core/sandbox-env.js';
import { ConnectorGateway } from '../daemon/host/connector-gateway.js';
import { EgressGatewayService } from '../daemon/host/egress.js';
import { buildProfile, connectorRoute } from '../daemon/host/overlay.js';
import { ConnectorService, connectOver } from '../domain/connectors/index.js';
import { openDatabase } from '../domain/db/index.js';
import { startCredentialProxy } from '../proxy/index.js';
import { RemoteConnectors } from '../agent/connectors.js';
import { startMcpUpstream } from '../test/helpers/mcp-upstream.js';
import { measure, round, stats, type BenchResult } from './lib.js';

const N = 400;
const WARMUP = 40;
const SECRET = 'bench-connector-secret-0123456789abcdef';

/**
 * One connector tool call (`tools/call` echo on an MCP server built with the official SDK,
 * Streamable HTTP, a bearer secret) made by the agent's client through the in-sandbox proxy and
 * the egress gateway (placeholder checks at both walls, the registry read for the user's right to
 * the tool, the gateway's own SDK call with the secret added, the answer scrubbed) vs the same
 * call made by an SDK client straight to the server from the host. Paired in one run, one call at
 * a time.
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-conn-'));
  const up = await startMcpUpstream({ requireHeader: { name: 'authorization', value: `Bearer ${SECRET}` } });
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  const enc = new Encryptor(randomBytes(32));
  const user = await database.sql
    .insertInto('users')
    .values({ username: 'bench', email: 'bench@example.test', display_name: null, password_hash: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  const svc = new ConnectorService({ db: database.sql, enc, allowHttpLoopback: true });
  const { connector } = await svc.create(
    { id: 'bench', label: 'Bench', url: up.url, auth_kind: 'bearer', auth_secret: SECRET },
    null,
  );
  const log = silentLogger();
  const gw = new EgressGatewayService({ log, connectors: new ConnectorGateway({ db: database.sql, enc, log }) });
  const sock = join(dir, 'egress.sock');
  const placeholder = 'bench-placeholder-0123456789abcdefghij';
  const routes = [connectorRoute(connector.id, connector.url)];
  const handle = await gw.open('bench', sock, {
    userId: Number(user.id),
    routes,
    tokens: { [CONNECTORS_PLACEHOLDER_ENV]: placeholder },
  });
  const proxy = await startCredentialProxy({
    profile: buildProfile('bench', 0, routes),
    getPlaceholder: () => placeholder,
    egressSocket: sock,
  });
  const agent = RemoteConnectors.fromEnv(
    {
      [CONNECTORS_PLACEHOLDER_ENV]: placeholder,
      [connectorBaseUrlEnv('bench')]: `http://127.0.0.1:${proxy.port}/connectors/bench`,
    },
    log,
  )!;
  await agent.refresh();
  const via = agent.target('bench__echo')!;
  const direct = await connectOver('streamable_http', up.url, async () => ({ authorization: `Bearer ${SECRET}` }));
  const args = { message: 'hello' };
  const callDirect = async () => {
    await direct.callTool({ name: 'echo', arguments: args });
  };
  const callVia = async () => {
    const r = await via.client.callTool({ name: 'echo', arguments: args });
    if (r.isError) throw new Error('gateway call failed');
  };
  try {
    await measure(WARMUP, callDirect, 1);
    await measure(WARMUP, callVia, 1);
    // Interleaved rounds, so both sides see the same host load.
    const d: number[] = [];
    const v: number[] = [];
    for (let i = 0; i < 4; i++) {
      d.push(...(await measure(N / 4, callDirect, 1)).samples);
      v.push(...(await measure(N / 4, callVia, 1)).samples);
    }
    const ds = stats(d);
    const vs = stats(v);
    return {
      name: 'connectors',
      rows: [
        { what: 'SDK client straight to the server', n: ds.n, rps: 0, p50_ms: ds.p50, p99_ms: ds.p99 },
        { what: 'agent client via proxy + egress gateway', n: vs.n, rps: 0, p50_ms: vs.p50, p99_ms: vs.p99 },
        { what: 'added latency', n: vs.n, rps: 0, p50_ms: round(vs.p50 - ds.p50), p99_ms: round(vs.p99 - ds.p99) },
      ],
      ratios: { gateway_p50_vs_direct: vs.p50 / ds.p50, added_p50_ms: vs.p50 - ds.p50 },
      notes: 'tools/call echo, one call at a time, 4 interleaved rounds; goal: added p50 <= 3 ms; shared 2-core host',
    };
  } finally {
    await direct.close();
    await agent.close();
    await proxy.close();
    await handle.close();
    await up.close();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
