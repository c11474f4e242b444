import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { atRestEncryptor, hashPassword, loadConfig, silentLogger } from '../core/index.js';
import { DbSessionStore, startWebServer } from '../web/index.js';
import { webOnlyServices } from '../test/helpers/app.js';
import { LocalTurnRunner } from '../daemon/dev/local-runner.js';
import { serve } from '../daemon/serve.js';
import { buildSandboxImage, createDocker } from '../daemon/runtime/index.js';
import { start as startModel, type ModelServer as ModelEmulator } from '../emulator/model-openai.js';
import { benchLogin, benchServeEnv, nowMs, stats, type BenchResult } from './lib.js';
import { openDatabase, type Sql } from '../domain/db/index.js';
import { createUser } from '../domain/users.js';

const N = 60;
/** Turns a first session serves before the measured one starts: the server's code is warm (JIT). */
const SERVER_WARM_TURNS = 120;
const DIST = dirname(dirname(fileURLToPath(import.meta.url)));
const ROOT = join(DIST, '..');
const TAG = 'airlock/sandbox:bench';
const MODEL_KEY = 'sk-bench-model-key-0123456789abcdef';

type Row = Record<string, string | number>;

type Turn = ((message: string) => Promise<{ total: number; first: number }>) & { newChat: () => void };

/** A logged-in browser-like client of one web app: turn() streams one chat turn; newChat() makes the next turn start a new chat. */
async function chatClient(url: string, db: Sql): Promise<Turn> {
  await createUser(db, {
    username: 'bench',
    email: 'bench@example.test',
    passwordHash: await hashPassword('bench-password'),
  });
  const { cookie, token } = await benchLogin(url, 'bench', 'bench-password');
  let sessionId: string | undefined;
  const turn = async (message: string): Promise<{ total: number; first: number }> => {
    const t0 = nowMs();
    const res = await fetch(`${url}/api/chat/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
      body: JSON.stringify({ message, ...(sessionId ? { session_id: sessionId } : {}) }),
    });
    if (res.status !== 200) throw new Error(`chat ${res.status}: ${await res.text()}`);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let first = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!first) first = nowMs() - t0;
      buf += dec.decode(value, { stream: true });
    }
    const lines = buf
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const done = lines[lines.length - 1];
    if (done.type !== 'done' || done.stop_reason !== 'end_turn') throw new Error(`turn ended ${JSON.stringify(done)}`);
    sessionId = done.session_id;
    return { total: nowMs() - t0, first };
  };
  return Object.assign(turn, { newChat: () => (sessionId = undefined) });
}

/** The same model request the agent makes, straight to the model server: the baseline. */
function directModel(model: ModelEmulator) {
  return async (): Promise<number> => {
    const t0 = nowMs();
    const res = await fetch(`${model.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_KEY}` },
      body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.text();
    return nowMs() - t0;
  };
}

/** N warm turns of the current chat interleaved with baseline model requests. */
async function sample(turn: Turn, direct: () => Promise<number>) {
  for (let i = 0; i < 5; i++) await direct();
  const base: number[] = [];
  const totals: number[] = [];
  const firsts: number[] = [];
  const overhead: number[] = [];
  for (let i = 0; i < N; i++) {
    const b = await direct();
    const r = await turn(`hello ${i}`);
    base.push(b);
    totals.push(r.total);
    firsts.push(r.first);
    overhead.push(r.total - b);
  }
  return { base: stats(base), total: stats(totals), first: stats(firsts), overhead: stats(overhead) };
}

/**
 * Two samples, rows labelled with `where`. First the server's first chat, right after it started
 * (its code not yet compiled by the JIT). Then, once that chat served SERVER_WARM_TURNS more
 * turns, a new chat on the now warm server: its agent (process or sandbox) is new, as for a user
 * who opens a chat on a server that has been serving others. The second is the headline figure.
 */
async function measure(where: string, turn: Turn, direct: () => Promise<number>, withTools: boolean) {
  const coldT0 = nowMs();
  await turn('warm up'); // starts the chat's agent (process or sandbox)
  const cold = nowMs() - coldT0;
  const justStarted = await sample(turn, direct);
  for (let i = 0; i < SERVER_WARM_TURNS; i++) await turn(`warming ${i}`);
  turn.newChat();
  const newT0 = nowMs();
  await turn('warm up'); // the new chat's own agent
  const newCold = nowMs() - newT0;
  const warm = await sample(turn, direct);
  const tools: number[] = [];
  if (withTools) for (let i = 0; i < N / 2; i++) tools.push((await turn(`tool ${i}`)).total);
  const { base: sb, total: st, first: sf, overhead: so } = warm;
  const rows: Row[] = [
    { what: `${where}: model request alone (baseline)`, n: sb.n, p50_ms: sb.p50, p99_ms: sb.p99 },
    { what: `${where}: chat turn, text only, warm`, n: st.n, p50_ms: st.p50, p99_ms: st.p99 },
    { what: `${where}: turn overhead beyond the model`, n: so.n, p50_ms: so.p50, p99_ms: so.p99 },
    { what: `${where}: time to first event`, n: sf.n, p50_ms: sf.p50, p99_ms: sf.p99 },
    {
      what: `${where}: turn overhead, server just started (its first chat)`,
      n: justStarted.overhead.n,
      p50_ms: justStarted.overhead.p50,
      p99_ms: justStarted.overhead.p99,
    },
  ];
  if (tools.length) {
    const stt = stats(tools);
    rows.push({
      what: `${where}: chat turn, 1 MCP tool call (2 model calls)`,
      n: stt.n,
      p50_ms: stt.p50,
      p99_ms: stt.p99,
    });
  }
  rows.push({
    what: `${where}: first turn incl. agent start (cold, server just started)`,
    n: 1,
    p50_ms: Math.round(cold),
    p99_ms: Math.round(cold),
  });
  rows.push({
    what: `${where}: first turn of a new chat (warm server)`,
    n: 1,
    p50_ms: Math.round(newCold),
    p99_ms: Math.round(newCold),
  });
  return {
    rows,
    turnP50: st.p50,
    baseP50: sb.p50,
    overheadP50: so.p50,
    justStartedOverheadP50: justStarted.overhead.p50,
    toolP50: tools.length ? stats(tools).p50 : NaN,
  };
}

/** Local development runner: the real agent child on the host, no container. */
async function local(model: ModelEmulator) {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-chat-'));
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  const runner = new LocalTurnRunner({
    env: {
      AGENT_MODEL_PROVIDER: 'openai',
      AGENT_MODEL: 'bench',
      AGENT_MODEL_BASE_URL: model.url,
      AGENT_MODEL_API_KEY: MODEL_KEY,
      AGENT_MCP_SERVERS: JSON.stringify([
        { name: 'fake', command: process.execPath, args: [join(DIST, 'test', 'fakes', 'mcp-server.js')] },
      ]),
      AGENT_MAX_STEPS: '4',
    },
    log: silentLogger(),
    readyTimeoutMs: 120_000,
  });
  const web = await startWebServer(
    {
      config,
      database,
      log: silentLogger(),
      sessions: new DbSessionStore(database.sql),
      encryptor: atRestEncryptor(config),
      services: webOnlyServices(database, atRestEncryptor(config), { chat: { runner } }),
    },
    0,
    '127.0.0.1',
  );
  try {
    return await measure('local runner', await chatClient(web.url, database.sql), directModel(model), true);
  } finally {
    await web.close(100);
    await runner.close();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The product path: the daemon (serve) with a real hardened container per session; the model is
 * reached through the in-container credential proxy and the egress gateway, NDJSON back.
 */
async function sandbox(model: ModelEmulator): Promise<Awaited<ReturnType<typeof measure>> | string> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: TAG } });
  try {
    await docker.ping();
  } catch (err) {
    return `no Docker engine (${(err as Error).message})`;
  }
  await buildSandboxImage({ docker, tag: TAG, root: ROOT, log: silentLogger() });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-chat-sb-'));
  const config = loadConfig(
    benchServeEnv({ dataDir: dir, image: TAG, modelUrl: model.url, modelKey: MODEL_KEY, pool: 0 }),
  );
  const d = await serve(config, {
    log: silentLogger(),
    runtime: { owner: `airlock-bench-${randomUUID().slice(0, 8)}` },
  });
  try {
    return await measure('sandbox', await chatClient(d.web.url, d.database.sql), directModel(model), false);
  } finally {
    await d.runtime?.close({ removeContainers: true });
    await d.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Chat turn overhead beyond the model's own time, warm chat, zero-latency scripted model (a new
 * chat on a server that has served turns, and the server's first chat right after it started):
 * the same model request made directly (baseline) vs a whole turn through the chat route and
 * back as NDJSON: once with the local development runner (agent child on the host) and once
 * through the real sandbox (container, control socket, credential proxy, egress gateway).
 * Also time to the first event, and (local) a turn with one MCP tool call.
 */
export async function run(): Promise<BenchResult> {
  const model = await startModel({
    apiKey: MODEL_KEY,
    respond: (body) => {
      const last = body.messages[body.messages.length - 1];
      if (String(last.content).startsWith('tool') && last.role === 'user')
        return { kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: 1, b: 2 } }] };
      return { kind: 'reply', text: 'ok done' };
    },
  });
  try {
    const l = await local(model);
    const s = await sandbox(model);
    const ratios: Record<string, number> = {
      local_turn_p50_vs_model_p50: l.turnP50 / l.baseP50,
      local_tool_turn_p50_vs_text_turn_p50: l.toolP50 / l.turnP50,
    };
    if (typeof s !== 'string') {
      ratios.sandbox_turn_p50_vs_model_p50 = s.turnP50 / s.baseP50;
      ratios.sandbox_turn_p50_vs_local_turn_p50 = s.turnP50 / l.turnP50;
      ratios.sandbox_overhead_warm_server_vs_just_started = s.overheadP50 / s.justStartedOverheadP50;
    }
    return {
      name: 'chat',
      rows: [...l.rows, ...(typeof s === 'string' ? [] : s.rows)],
      ratios,
      notes:
        `zero-latency scripted OpenAI-compatible model; history grows over the run; warm rows: a new chat after the server's first chat served ${N + SERVER_WARM_TURNS} turns; ` +
        (typeof s === 'string'
          ? `sandbox part skipped: ${s}`
          : 'sandbox = daemon + hardened container, model via the in-container proxy and the egress gateway'),
    };
  } finally {
    await model.close();
  }
}
