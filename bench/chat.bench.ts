import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createUser, hashPassword, loadConfig, openDatabase, silentLogger } from '../core/index.js';
import { SqliteSessionStore, startWebServer } from '../web/index.js';
import { LocalTurnRunner } from '../daemon/local-runner.js';
import { start as startModel } from '../emulator/model-openai.js';
import { nowMs, stats, type BenchResult } from './lib.js';

const N = 60;
const DIST = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * Chat turn overhead beyond the model's own time, warm session, zero-latency scripted model:
 * the same model request made directly (baseline) vs a whole turn through the chat route,
 * the local runner (the real agent child on the host; the container adds its control-socket
 * hop, ~30 µs) and back as NDJSON. Also time to the first event, and a turn with one MCP
 * tool call (two model calls + one tool).
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-chat-'));
  const model = await startModel({
    respond: (body) => {
      const last = body.messages[body.messages.length - 1];
      if (String(last.content).startsWith('tool') && last.role === 'user') return { kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: 1, b: 2 } }] };
      return { kind: 'reply', text: 'ok done' };
    },
  });
  const config = loadConfig({ AIRLOCK_DATA_DIR: dir, MCP_INTERNAL_SECRET: 'bench-secret-0123456789', AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789' });
  const db = await openDatabase(join(dir, 'airlock.db'));
  createUser(db, { username: 'bench', email: 'bench@example.test', passwordHash: await hashPassword('bench-password') });
  const runner = new LocalTurnRunner({
    env: {
      AGENT_MODEL_PROVIDER: 'openai',
      AGENT_MODEL: 'bench',
      AGENT_MODEL_BASE_URL: model.url,
      AGENT_MCP_SERVERS: JSON.stringify([{ name: 'fake', command: process.execPath, args: [join(DIST, 'test', 'fakes', 'mcp-server.js')] }]),
      AGENT_MAX_STEPS: '4',
    },
    log: silentLogger(),
    readyTimeoutMs: 120_000,
  });
  const web = await startWebServer({ config, db, log: silentLogger(), sessions: new SqliteSessionStore(db), services: { chat: { runner } } }, 0, '127.0.0.1');
  try {
    // Log in like a browser.
    const csrf = await fetch(`${web.url}/api/auth/csrf`);
    let cookie = csrf.headers.getSetCookie()[0].split(';')[0];
    let token = ((await csrf.json()) as { csrf_token: string }).csrf_token;
    const login = await fetch(`${web.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
      body: JSON.stringify({ username: 'bench', password: 'bench-password' }),
    });
    cookie = login.headers.getSetCookie()[0].split(';')[0];
    token = ((await login.json()) as { csrf_token: string }).csrf_token;

    let sessionId: string | undefined;
    const turn = async (message: string): Promise<{ total: number; first: number }> => {
      const t0 = nowMs();
      const res = await fetch(`${web.url}/api/chat/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
        body: JSON.stringify({ message, ...(sessionId ? { session_id: sessionId } : {}) }),
      });
      if (res.status !== 200) throw new Error(`chat ${res.status}`);
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
      const lines = buf.trim().split('\n').map((l) => JSON.parse(l));
      const done = lines[lines.length - 1];
      if (done.type !== 'done' || done.stop_reason !== 'end_turn') throw new Error(`turn ended ${JSON.stringify(done)}`);
      sessionId = done.session_id;
      return { total: nowMs() - t0, first };
    };
    const direct = async (): Promise<number> => {
      const t0 = nowMs();
      const res = await fetch(`${model.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.text();
      return nowMs() - t0;
    };

    const coldT0 = nowMs();
    await turn('warm up'); // spawns the session's warm process
    const cold = nowMs() - coldT0;
    for (let i = 0; i < 5; i++) await direct();
    const base: number[] = [];
    const totals: number[] = [];
    const firsts: number[] = [];
    const overhead: number[] = [];
    const tools: number[] = [];
    for (let i = 0; i < N; i++) {
      const b = await direct();
      const r = await turn(`hello ${i}`);
      base.push(b);
      totals.push(r.total);
      firsts.push(r.first);
      overhead.push(r.total - b);
    }
    for (let i = 0; i < N / 2; i++) tools.push((await turn(`tool ${i}`)).total);
    const sb = stats(base);
    const st = stats(totals);
    const sf = stats(firsts);
    const so = stats(overhead);
    const stt = stats(tools);
    return {
      name: 'chat',
      rows: [
        { what: 'model request alone (baseline)', n: sb.n, p50_ms: sb.p50, p99_ms: sb.p99 },
        { what: 'chat turn, text only, warm session', n: st.n, p50_ms: st.p50, p99_ms: st.p99 },
        { what: 'turn overhead beyond the model', n: so.n, p50_ms: so.p50, p99_ms: so.p99 },
        { what: 'time to first event', n: sf.n, p50_ms: sf.p50, p99_ms: sf.p99 },
        { what: 'chat turn, 1 MCP tool call (2 model calls)', n: stt.n, p50_ms: stt.p50, p99_ms: stt.p99 },
        { what: 'first turn incl. process spawn (cold)', n: 1, p50_ms: Math.round(cold), p99_ms: Math.round(cold) },
      ],
      ratios: { turn_p50_vs_model_p50: st.p50 / sb.p50, tool_turn_p50_vs_text_turn_p50: stt.p50 / st.p50 },
      notes: 'local development runner (agent child on the host, no container); zero-latency scripted OpenAI-compatible model; history grows over the run',
    };
  } finally {
    await web.close(100);
    await runner.close();
    await model.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
