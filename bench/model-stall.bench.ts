import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { createLogger } from '../core/index.js';
import { startDemo } from '../daemon/dev/demo.js';
import { createDocker } from '../daemon/runtime/index.js';
import * as openaiModel from '../emulator/model-openai.js';
import { Client } from '../test/helpers/client.js';
import { streamTurn } from '../test/helpers/chat.js';
import { waitFor } from '../test/helpers/wait.js';
import { ensureTestImage, sweep, uniqueOwner, unmountUnder } from '../test/docker/helpers.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';

/**
 * One model stalls, another is not slowed (issue 41, docs/capacity.md "A stalling model"):
 * through `airlock demo`'s wiring (serve, pool, real sandboxes, proxy, gateway), both models
 * admin-added, default bounds. HEALTHY warm chats on the healthy model loop turns; the time from
 * the POST to the answer's first text (first event of the model's answer on the page) is sampled
 * in three phases of one run: before the stall (A), while STALLED chats on the other model all
 * hang (from their last request reaching the model to the first of them ending at the 30 s stall
 * bound), and after (B). Baseline = A and B together, so drift over the run is paired out.
 */
const STALLED = Number(process.env.AIRLOCK_STALL_BENCH_CHATS ?? 20);
const HEALTHY = 4;
const BASELINE_MS = 20_000;
const KEY = 'sk-stall-bench-key-0123456789abcdef';

export async function run(): Promise<BenchResult> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: 'unused' } }) as unknown as Docker;
  await docker.ping();
  const image = await ensureTestImage(docker);
  const stalling = await openaiModel.start({ apiKey: KEY, respond: () => ({ kind: 'stall', text: 'one chunk' }) });
  const healthy = await openaiModel.start({ apiKey: KEY, respond: () => ({ kind: 'reply', text: 'all is well' }) });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-stall-bench-'));
  const owner = uniqueOwner('stallbench');
  const demo = await startDemo({
    env: {
      AIRLOCK_DATA_DIR: dir,
      AIRLOCK_PORT: '0',
      AIRLOCK_IMAGE: image,
      AIRLOCK_MAX_SESSIONS: '32',
      AIRLOCK_MAX_SANDBOXES_PER_USER: String(STALLED + 2),
    },
    owner,
    print: () => undefined,
    log: createLogger({ level: 'silent' }),
  });
  try {
    const admin = new Client(demo.url);
    await admin.login(demo.users.admin.username, demo.users.admin.password);
    for (const [id, m] of [
      ['stalling', stalling],
      ['healthy', healthy],
    ] as const) {
      const r = await admin.json('POST', '/api/admin/chat-models', {
        id,
        label: id,
        provider: 'openai',
        model: `gpt-${id}`,
        base_url: m.url,
        api_key: KEY,
        context_tokens: 16_000,
      });
      if (r.status !== 201) throw new Error(`model ${id}: ${r.status}`);
    }
    const user = new Client(demo.url);
    await user.login(demo.users.user.username, demo.users.user.password);

    // Warm chats for the healthy model's user (cold starts are not what is measured).
    const sessions: (string | undefined)[] = [];
    for (let i = 0; i < HEALTHY; i++)
      sessions.push((await streamTurn(admin, { message: 'warm up', model_id: 'healthy' })).sessionId);
    const firstText = async (i: number): Promise<number> => {
      const t0 = nowMs();
      let at = NaN;
      const r = await streamTurn(
        admin,
        { message: 'hello', session_id: sessions[i] },
        (e) => void (e.type === 'text_delta' && Number.isNaN(at) && (at = nowMs() - t0)),
      );
      if (r.events.at(-1)?.stop_reason !== 'end_turn')
        throw new Error(`healthy turn ended ${JSON.stringify(r.events.at(-1))}`);
      return at;
    };
    /** Each healthy chat loops turns until `until()`; returns the samples. */
    const loop = async (until: () => boolean): Promise<number[]> => {
      const out: number[] = [];
      await Promise.all(
        sessions.map(async (_s, i) => {
          while (!until()) out.push(await firstText(i));
        }),
      );
      return out;
    };
    const timed = (ms: number) => {
      const end = Date.now() + ms;
      return loop(() => Date.now() >= end);
    };

    const before = await timed(BASELINE_MS);
    let firstEnd = false;
    const n0 = stalling.requests.length;
    const stalled = Array.from({ length: STALLED }, (_, i) =>
      streamTurn(user, { message: `stall ${i}`, model_id: 'stalling' }).then((r) => ((firstEnd = true), r)),
    );
    await waitFor(
      () => stalling.requests.length - n0 >= STALLED || undefined,
      'every stalled chat at the model',
      300_000,
    );
    const during = await loop(() => firstEnd);
    const ends = await Promise.all(stalled);
    const timeouts = ends.filter((r) => r.events.at(-1)?.error?.code === 'ERR_MODEL_TIMEOUT').length;
    const after = await timed(BASELINE_MS);

    const base = stats([...before, ...after]);
    const stall = stats(during);
    return {
      name: 'model-stall',
      rows: [
        { phase: 'baseline (before + after)', ...base },
        { phase: 'before', ...stats(before) },
        { phase: `during (${STALLED} chats stalled)`, ...stall },
        { phase: 'after', ...stats(after) },
      ],
      ratios: {
        p99_during_over_baseline: round(stall.p99 / base.p99, 3),
        p50_during_over_baseline: round(stall.p50 / base.p50, 3),
      },
      notes: `first text of a healthy-model answer, ms, ${HEALTHY} warm chats looping; ${timeouts} of ${STALLED} stalled turns ended with ERR_MODEL_TIMEOUT; node ${process.version}`,
    };
  } finally {
    await demo.close({ removeContainers: true });
    await sweep(docker, owner);
    await stalling.close();
    await healthy.close();
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}
