/**
 * Idle chats cost nothing (docs/runtime.md, "Idle chats cost nothing"): N chats are opened (one
 * demo turn each) and left idle; the sandbox memory they hold (the PSS of every container's
 * processes, from its cgroup: daemon/runtime/cgroup-stats.ts) is summed, then they are released
 * as the reaper does at AIRLOCK_SESSION_IDLE_S (the bench's clock is moved past it), and summed
 * again; then a prompt goes to each released chat (a pool claim plus the stored conversation) and
 * its first event is timed, against a warm turn's in the same run.
 *
 * AIRLOCK_BENCH_IDLE_N sets N (default 10). Needs root (the pool, other users' smaps_rollup).
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { randomUUID } from 'node:crypto';
import { SessionManager, NODE_RUNTIME } from '../daemon/runtime/index.js';
import { sandboxUsage } from '../daemon/runtime/cgroup-stats.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';
import { removeOwned } from './rig.js';
import { sandboxBench, unmountUnderSandboxes } from './density.bench.js';

const MIB = 2 ** 20;

export async function run(): Promise<BenchResult | { skipped: string }> {
  const n = Number(process.env.AIRLOCK_BENCH_IDLE_N ?? 10);
  const bench = await sandboxBench('the pool; reads other users’ /proc/<pid>/smaps_rollup', 'idle');
  if ('skipped' in bench) return bench;
  const { docker, dir, owner, tag } = bench;
  const cfg = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_IMAGE: tag,
    AIRLOCK_POOL_SIZE: '2',
    AIRLOCK_MAX_SESSIONS: String(n + 5),
    AIRLOCK_SESSION_IDLE_S: '120',
  });
  // The bench's clock: the real time plus what it skipped, so the release needs no two-minute wait.
  let skipped = 0;
  const clock = { now: () => Date.now() + skipped };
  const m = new SessionManager({ config: cfg, docker, log: silentLogger(), owner, clock, reapIntervalMs: 3_600_000 });
  const signal = new AbortController().signal;
  /** One demo turn; resolves with the time to its first event, ms. */
  const turn = async (sessionId: string, userId: number): Promise<number> => {
    const t0 = nowMs();
    let first = NaN;
    const r = await m.runTurn({
      userId,
      sessionId,
      turnId: randomUUID(),
      prompt: 'hello',
      signal,
      onEvent: () => (first = Number.isNaN(first) ? nowMs() - t0 : first),
    });
    if (r.stop_reason !== 'end_turn') throw new Error(`${sessionId}: ${r.stop_reason} ${r.error?.code}`);
    return first;
  };
  const held = () => m.list().filter((s) => s.sessionId);
  const memory = () => held().reduce((sum, s) => sum + (sandboxUsage(s.containerId)?.memoryBytes ?? 0), 0) / MIB;
  const load = () => loadavg().map((l) => round(l, 2));
  try {
    await m.start();
    await m.poolReady(120_000);
    const chats = Array.from({ length: n }, (_, i) => `idle-${i}`);
    for (const [i, sid] of chats.entries()) await turn(sid, 1 + (i % 4));
    const warm: number[] = [];
    for (const [i, sid] of chats.entries()) warm.push(await turn(sid, 1 + (i % 4)));
    await m.poolReady(120_000);
    const before = { sandboxes: held().length, mib: memory(), load: load() };
    skipped += 121_000;
    const t0 = nowMs();
    const released = await m.reap();
    const releaseMs = nowMs() - t0;
    const after = { sandboxes: held().length, mib: memory(), load: load() };
    const back: number[] = [];
    for (const [i, sid] of chats.entries()) {
      await m.poolReady(120_000); // each comes back to a ready pool member, as a returning user would
      back.push(await turn(sid, 1 + (i % 4)));
    }
    const w = stats(warm);
    const b = stats(back);
    return {
      name: 'idle-release',
      rows: [
        {
          what: `sandbox memory held by ${n} idle chats, MiB (PSS)`,
          n: before.sandboxes,
          p50: round(before.mib / Math.max(1, before.sandboxes), 1),
          max: round(before.mib, 1),
        },
        { what: `after their release, MiB (PSS)`, n: after.sandboxes, p50: 0, max: round(after.mib, 1) },
        {
          what: `release of ${released.length} chats, ms`,
          n: released.length,
          p50: round(releaseMs / Math.max(1, released.length), 1),
          max: round(releaseMs, 1),
        },
        { what: 'warm turn, first event, ms', n: w.n, p50: w.p50, max: w.p99 },
        { what: 'released chat, next prompt, first event, ms', n: b.n, p50: b.p50, max: b.p99 },
      ],
      ratios: {
        memory_after_vs_before: round(after.mib / Math.max(1, before.mib), 3),
        released_first_event_vs_warm_p50: round(b.p50 / w.p50, 3),
      },
      notes: `${n} chats of the Node ${NODE_RUNTIME.version} image (demo model, pool 2), each after two turns, released by the reaper's rule (clock moved past AIRLOCK_SESSION_IDLE_S=120); memory = PSS of each container's cgroup processes; "p50" of the memory rows is the mean per chat, "max" the sum (the pool's 2 ready members are not counted: they are held whatever the chats do); load average before ${before.load.join('/')}, after ${after.load.join('/')} (a shared 2-core host, not quiet).`,
    };
  } finally {
    await m.close({ removeContainers: true }).catch(() => undefined);
    await removeOwned(docker, owner);
    unmountUnderSandboxes(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}
