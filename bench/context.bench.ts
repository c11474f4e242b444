import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { hashPassword, loadConfig, silentLogger } from '../core/index.js';
import { serve } from '../daemon/serve.js';
import { buildSandboxImage, createDocker } from '../daemon/runtime/index.js';
import { start as startModel, type ModelServer } from '../emulator/model-openai.js';
import { benchLogin, benchServeEnv, nowMs, stats, type BenchResult } from './lib.js';
import { createUser } from '../domain/users.js';
import { branchTranscript } from '../domain/chat/transcript.js';

/**
 * The conversation belongs to the service (docs/chat.md): what it costs.
 * - Warm path: the sandbox turn overhead of the 50th turn of a chat against its first turns. Each
 *   turn's baseline is the very request the agent just made (the chat's history so far), sent
 *   straight to the model: the overhead is the turn beyond the model, whatever the history's size.
 *   The warm path neither reads nor sends the transcript, so the two should match.
 * - After a lost sandbox (docker kill): the first turn of a 50-turn chat against the first turn of
 *   a 1-turn chat, both claiming a ready pool member: the difference is reading the branch from the
 *   store and handing it to the new agent.
 */
const DIST = dirname(dirname(fileURLToPath(import.meta.url)));
const ROOT = join(DIST, '..');
const TAG = 'airlock/sandbox:bench';
const KEY = 'sk-bench-model-key-0123456789abcdef';
const TURNS = 60;
const LOST_ROUNDS = 16;

interface Client {
  turn(message: string, sessionId?: string): Promise<{ ms: number; sessionId: string }>;
}

async function client(url: string): Promise<Client> {
  const { cookie, token } = await benchLogin(url, 'bench', 'bench-password');
  return {
    async turn(message, sessionId) {
      const t0 = nowMs();
      const res = await fetch(`${url}/api/chat/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
        body: JSON.stringify({ message, ...(sessionId ? { session_id: sessionId } : {}) }),
      });
      const text = await res.text();
      const ms = nowMs() - t0;
      const done = JSON.parse(text.trim().split('\n').at(-1)!);
      if (done.stop_reason !== 'end_turn') throw new Error(`turn ended ${text.slice(0, 300)}`);
      return { ms, sessionId: done.session_id };
    },
  };
}

/** The agent's last request, sent again straight to the model: its cost at this history size. */
async function replayLast(model: ModelServer): Promise<number> {
  const body = model.requests.at(-1)!.body;
  const t0 = nowMs();
  const res = await fetch(`${model.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  await res.text();
  return nowMs() - t0;
}

export async function run(): Promise<BenchResult> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: TAG } });
  await docker.ping();
  await buildSandboxImage({ docker, tag: TAG, root: ROOT, log: silentLogger() });
  const model = await startModel({
    apiKey: KEY,
    respond: () => ({ kind: 'reply', text: 'ok, noted: a short answer of a few words' }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-context-'));
  const config = loadConfig(benchServeEnv({ dataDir: dir, image: TAG, modelUrl: model.url, modelKey: KEY, pool: 2 }));
  const d = await serve(config, {
    log: silentLogger(),
    runtime: { owner: `airlock-bench-${randomUUID().slice(0, 8)}` },
  });
  try {
    await createUser(d.database.sql, {
      username: 'bench',
      email: 'bench@example.test',
      passwordHash: await hashPassword('bench-password'),
    });
    const c = await client(d.web.url);
    const sessions = d.runtime!.sessions;
    // A server that has served turns (its code is warm), as in the chat bench.
    let warm = await c.turn('warm up');
    for (let i = 0; i < 60; i++) await c.turn(`warming ${i}`, warm.sessionId);

    // One chat of TURNS turns: the overhead beyond the model, per turn.
    const overhead: number[] = [];
    let sid: string | undefined;
    for (let i = 0; i < TURNS; i++) {
      const r = await c.turn(`turn ${i}: tell me something about item ${i} of the list`, sid);
      sid = r.sessionId;
      overhead.push(r.ms - (await replayLast(model)));
    }
    // The daemon's own part of handing a lost sandbox the conversation: reading the branch.
    const reads: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 40; i++) {
      const t0 = nowMs();
      const items = await branchTranscript(d.database.sql, sid!, config.model.contextTokens);
      reads.push(nowMs() - t0);
      bytes = Buffer.byteLength(JSON.stringify(items));
    }
    const read = stats(reads);
    const early = stats(overhead.slice(1, 11));
    const late = stats(overhead.slice(TURNS - 10));

    // After a lost sandbox: a 50-turn chat vs a 1-turn chat, alternating.
    const kill = async (sessionId: string) => {
      const sb = sessions.list().find((s) => s.sessionId === sessionId)!;
      await docker.getContainer(sb.containerId).kill();
      for (let i = 0; i < 400 && sessions.list().some((s) => s.sessionId === sessionId && s.state !== 'dead'); i++)
        await new Promise((r) => setTimeout(r, 10));
      // Both turns must claim a ready pool member (not wait for a refill's cold start), and the
      // engine's clean-up of the killed container settles first.
      await sessions.poolReady();
      await new Promise((r) => setTimeout(r, 300));
    };
    const long = sid!;
    warm = await c.turn('a short chat');
    const short = warm.sessionId;
    const lostLong: number[] = [];
    const lostShort: number[] = [];
    for (let i = 0; i < LOST_ROUNDS; i++) {
      for (const [id, into] of [
        [long, lostLong],
        [short, lostShort],
      ] as const) {
        await kill(id);
        into.push((await c.turn(`after loss ${i}`, id)).ms);
      }
    }
    const ll = stats(lostLong);
    const ls = stats(lostShort);
    const contextItems = model.requests.at(-2)?.body.messages.length ?? 0;
    return {
      name: 'context',
      rows: [
        {
          what: 'sandbox turn overhead beyond the model, turns 2-11 of a chat',
          n: early.n,
          p50_ms: early.p50,
          p99_ms: early.p99,
        },
        {
          what: `sandbox turn overhead beyond the model, turns ${TURNS - 9}-${TURNS} of the same chat`,
          n: late.n,
          p50_ms: late.p50,
          p99_ms: late.p99,
        },
        {
          what: `reading a ${TURNS}-turn chat's branch from the store (${Math.round(bytes / 1024)} KiB of context)`,
          n: read.n,
          p50_ms: read.p50,
          p99_ms: read.p99,
        },
        {
          what: `first turn after a lost sandbox, ${TURNS}+-turn chat (pool claim + context)`,
          n: ll.n,
          p50_ms: ll.p50,
          p99_ms: ll.p99,
        },
        { what: 'first turn after a lost sandbox, 1-turn chat (pool claim)', n: ls.n, p50_ms: ls.p50, p99_ms: ls.p99 },
      ],
      ratios: {
        late_minus_early_overhead_ms: Math.round((late.p50 - early.p50) * 100) / 100,
        lost_long_minus_short_ms: Math.round((ll.p50 - ls.p50) * 100) / 100,
      },
      notes: `zero-latency scripted model; each turn's baseline is the agent's own request replayed to the model; the long chat's request after a loss held ${contextItems} messages; pool of 2`,
    };
  } finally {
    await d.runtime?.close({ removeContainers: true });
    await d.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
