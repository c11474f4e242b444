import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  atRestEncryptor,
  hashPassword,
  loadConfig,
  silentLogger,
  type TurnRequest,
  type TurnResult,
} from '../core/index.js';
import { openDatabase, type Database } from '../domain/db/index.js';
import { claimNonce, ownSandbox, registerNode } from '../domain/fleet.js';
import { createUser } from '../domain/users.js';
import { DbSessionStore, startWebServer, type WebServer } from '../web/index.js';
import { freePort, webOnlyServices } from '../test/helpers/app.js';
import { streamTurn } from '../test/helpers/chat.js';
import { Client } from '../test/helpers/client.js';
import { createPgDatabase, pgUnavailable, startPgCluster } from '../test/helpers/postgres.js';
import { nowMs, stats, type BenchResult } from './lib.js';

/**
 * A chat turn forwarded through a second node vs the same turn sent to the node that owns the
 * session (docs/deploy.md): two web apps of one fleet on one PostgreSQL, the owner running a
 * zero-latency turn runner (one text event, then done), so the figure is what forwarding adds —
 * the other node's login check, the owner lookup, the signed request (its nonce claimed in the
 * database, timed on its own too) and the piped NDJSON.
 * Interleaved, same run; the added p50 is the target (≤ 2 ms).
 */
const N = 300;
const SECRET = 'bench-fleet-node-secret-0123456789abcdef';

const instant = {
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    req.onEvent({ type: 'text_delta', text: 'ok' });
    return { stop_reason: 'end_turn' };
  },
};

async function node(database: Database, id: string): Promise<{ web: WebServer; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), `airlock-bench-fleet-${id}-`));
  const port = await freePort();
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_PORT: String(port),
    AIRLOCK_NODE_ID: id,
    AIRLOCK_NODE_SECRET: SECRET,
    AIRLOCK_FLEET_ALLOW_HTTP: 'true',
    AIRLOCK_LOG_LEVEL: 'silent',
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const web = await startWebServer(
    {
      config,
      database,
      log: silentLogger(),
      sessions: new DbSessionStore(database.sql),
      encryptor: atRestEncryptor(config),
      services: webOnlyServices(database, atRestEncryptor(config), { chat: { runner: instant } }),
    },
    port,
    '127.0.0.1',
  );
  await registerNode(database.sql, { id, url: web.url, version: 'bench', capacity: 32 });
  return { web, dir };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const why = pgUnavailable();
  if (why) return { skipped: `no PostgreSQL for a fleet: ${why}` };
  const cluster = startPgCluster(await freePort());
  const dirs: string[] = [];
  try {
    const pg = await createPgDatabase(cluster.url);
    const database = await openDatabase({ url: pg.url });
    const a = await node(database, 'node-a');
    const b = await node(database, 'node-b');
    dirs.push(a.dir, b.dir);
    await createUser(database.sql, { username: 'bench', passwordHash: await hashPassword('bench-password-0123') });
    const viaA = new Client(a.web.url);
    const viaB = new Client(b.web.url);
    await viaA.login('bench', 'bench-password-0123');
    await viaB.login('bench', 'bench-password-0123');
    const first = await streamTurn(viaA, { message: 'hello' });
    const sessionId = first.events.at(-1).session_id as string;
    const me = await database.sql
      .selectFrom('users')
      .select('id')
      .where('username', '=', 'bench')
      .executeTakeFirstOrThrow();
    await ownSandbox(database.sql, { sessionId, userId: me.id, nodeId: 'node-a', state: 'live' });
    const turn = async (c: Client): Promise<{ ms: number; servedBy: string | null }> => {
      const t0 = nowMs();
      const r = await streamTurn(c, { message: 'hi', session_id: sessionId });
      if (r.events.at(-1)?.type !== 'done')
        throw new Error(`turn failed: ${JSON.stringify(r.error ?? r.events.at(-1))}`);
      return { ms: nowMs() - t0, servedBy: r.headers.get('x-airlock-served-by') };
    };
    for (let i = 0; i < 20; i++) await Promise.all([turn(viaA), turn(viaB)].map((p) => p.catch(() => undefined)));
    const direct: number[] = [];
    const forwarded: number[] = [];
    const nonces: number[] = [];
    for (let i = 0; i < N; i++) {
      const d = await turn(viaA);
      const f = await turn(viaB);
      if (f.servedBy !== 'node-a') throw new Error('the turn through node-b was not forwarded');
      direct.push(d.ms);
      forwarded.push(f.ms);
      // The part of forwarding that keeps it replay-proof: the receiver's fleet-wide nonce claim.
      const t0 = nowMs();
      if (!(await claimNonce(database.sql, randomBytes(12).toString('hex'), 'node-b', Date.now() + 31_000)))
        throw new Error('a fresh nonce was refused');
      nonces.push(nowMs() - t0);
    }
    await a.web.close(100);
    await b.web.close(100);
    await database.close();
    const [sd, sf, sn] = [stats(direct), stats(forwarded), stats(nonces)];
    return {
      name: 'fleet',
      rows: [
        { what: 'turn sent to the owner node (baseline)', n: sd.n, p50_ms: sd.p50, p99_ms: sd.p99 },
        { what: 'the same turn through another node (forwarded)', n: sf.n, p50_ms: sf.p50, p99_ms: sf.p99 },
        {
          what: 'added by forwarding',
          n: sf.n,
          p50_ms: Math.round((sf.p50 - sd.p50) * 1000) / 1000,
          p99_ms: Math.round((sf.p99 - sd.p99) * 1000) / 1000,
        },
        { what: 'of which the nonce claim (one INSERT on node_nonces)', n: sn.n, p50_ms: sn.p50, p99_ms: sn.p99 },
      ],
      ratios: { forwarded_vs_owner_p50: sf.p50 / sd.p50 },
      notes:
        'two web apps in one process on one PostgreSQL (local cluster), a zero-latency turn runner, interleaved turns, keep-alive between the nodes',
    };
  } finally {
    cluster.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
