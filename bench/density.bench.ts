/**
 * Density: what an idle session costs. N sessions are started (each runs one turn, then idles);
 * for each, the PSS of every process of its container (docker-init, supervisor, agent child, both
 * MCP servers) is summed from /proc/<pid>/smaps_rollup on the host. Reported per session (p50,
 * max), per process kind (p50), and as sessions per 24 GiB. The same run checks that the idle
 * sessions do not slow a warm turn of another: warm turns of one session alone, then with the N
 * others idle beside it (ratio of p50s).
 *
 * AIRLOCK_BENCH_DENSITY_N sets N (default 50). AIRLOCK_BENCH_IMAGE names the sandbox image to run
 * (default airlock/sandbox:bench, rebuilt from this tree each run); a named one is built from this
 * tree only when the tag is missing, so two builds can be compared paired (and the shared tag is
 * left alone). Needs root (smaps_rollup of other users' processes).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import {
  createDocker,
  buildSandboxImage,
  ensureSandboxImage,
  SessionManager,
  NODE_RUNTIME,
} from '../daemon/runtime/index.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';
import { removeOwned } from './rig.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEFAULT_TAG = 'airlock/sandbox:bench';
const N_WARM = 200;
const GIB = 1024 * 1024 * 1024;

/** PSS in bytes of one process (smaps_rollup), 0 when it is gone. */
export function pss(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A process and all its descendants (through /proc/<pid>/task/<tid>/children). */
export function tree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    const p = out[i];
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // gone meanwhile
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(/\s+/).filter(Boolean))
          out.push(Number(c));
      } catch {
        // the task ended meanwhile
      }
    }
  }
  return out;
}

/** Which of our processes a pid is: the entry file's folder (supervisor, agent, tools, extensions) or init. */
function kind(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const file = argv.find((a) => a.startsWith('/opt/airlock/'));
    // docker-init's argv names the supervisor's file too: only a node process is one of ours.
    return argv[0].endsWith('/node') && file ? file.split('/').slice(-2, -1)[0] : argv[0].split('/').pop() || 'other';
  } catch {
    return 'gone';
  }
}

/** Lazily unmount every mount under `dir` (the workspace mounts a root runtime made). */
export function unmountUnderSandboxes(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m) => m && m.startsWith(dir + '/'));
  for (const m of mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}

/**
 * The local engine with the bench's sandbox image built (its tag: AIRLOCK_BENCH_IMAGE, else
 * rebuilt as airlock/sandbox:bench), a data folder and an owner label for what the bench starts,
 * or why it cannot run (root to read other users' smaps; an engine).
 */
export async function sandboxBench(
  why: string,
  prefix: string,
): Promise<{ docker: ReturnType<typeof createDocker>; dir: string; owner: string; tag: string } | { skipped: string }> {
  if (process.getuid?.() !== 0) return { skipped: `needs root (${why})` };
  const tag = process.env.AIRLOCK_BENCH_IMAGE || DEFAULT_TAG;
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: tag } });
  try {
    await docker.ping();
  } catch (err) {
    return { skipped: `no Docker engine: ${(err as Error).message}` };
  }
  const build = tag === DEFAULT_TAG ? buildSandboxImage : ensureSandboxImage;
  await build({ docker, tag, root: ROOT, log: silentLogger(), node: NODE_RUNTIME });
  return {
    tag,
    docker,
    dir: mkdtempSync(join(tmpdir(), `airlock-bench-${prefix}-`)),
    owner: `airlock-bench-${randomUUID().slice(0, 8)}`,
  };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const n = Number(process.env.AIRLOCK_BENCH_DENSITY_N ?? 50);
  const bench = await sandboxBench('reads other users’ /proc/<pid>/smaps_rollup', 'density');
  if ('skipped' in bench) return bench;
  const { docker, dir, owner, tag } = bench;
  const cfg = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_IMAGE: tag,
    AIRLOCK_POOL_SIZE: '0',
    AIRLOCK_MAX_SESSIONS: String(n + 5),
    AIRLOCK_SESSION_IDLE_S: '86400',
  });
  const m = new SessionManager({ config: cfg, docker, log: silentLogger(), owner });
  const signal = new AbortController().signal;
  const turn = (sessionId: string) =>
    m.runTurn({
      userId: 1 + (Number(sessionId.split('-')[1]) || 0),
      sessionId,
      turnId: randomUUID(),
      prompt: 'hello',
      signal,
      onEvent: () => undefined,
    });
  const warm = async (): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < N_WARM; i++) {
      const t0 = nowMs();
      await turn('s-0');
      out.push(nowMs() - t0);
    }
    return out;
  };
  try {
    await m.start();
    await turn('s-0');
    const alone = await warm();
    for (let i = 1; i < n; i++) {
      const r = await turn(`s-${i}`);
      if (r.stop_reason !== 'end_turn') throw new Error(`session ${i}: ${r.stop_reason} ${r.error?.code}`);
    }
    // Let the starts settle (lazy work after ready, GC) before measuring.
    await new Promise((r) => setTimeout(r, 5000));
    const perSession: number[] = [];
    const perKind = new Map<string, number[]>();
    for (const s of m.list()) {
      const pid = (await docker.getContainer(s.containerId).inspect()).State.Pid;
      let sum = 0;
      for (const p of tree(pid)) {
        const b = pss(p);
        sum += b;
        const k = kind(p);
        if (!perKind.has(k)) perKind.set(k, []);
        perKind.get(k)!.push(b / 2 ** 20);
      }
      perSession.push(sum / 2 ** 20);
    }
    const crowded = await warm();
    const s = stats(perSession);
    const max = Math.max(...perSession);
    const rows: BenchResult['rows'] = [
      { what: 'idle session PSS (all its processes), MiB', n: s.n, p50: s.p50, max: round(max, 1) },
      ...[...perKind.entries()].sort().map(([k, v]) => ({
        what: `  of which ${k}, MiB`,
        n: v.length,
        p50: stats(v).p50,
        max: round(Math.max(...v), 1),
      })),
      { what: 'warm turn alone, ms', n: N_WARM, p50: stats(alone).p50, max: stats(alone).p99 },
      {
        what: `warm turn with ${n - 1} idle sessions beside it, ms`,
        n: N_WARM,
        p50: stats(crowded).p50,
        max: stats(crowded).p99,
      },
    ];
    return {
      name: 'density',
      rows,
      ratios: {
        sessions_per_24gib_at_p50: Math.floor((24 * GIB) / (s.p50 * 2 ** 20)),
        sessions_per_24gib_at_max: Math.floor((24 * GIB) / (max * 2 ** 20)),
        idle_session_p50_mib_vs_target_60: round(s.p50 / 60, 3),
        warm_turn_crowded_vs_alone_p50: round(stats(crowded).p50 / stats(alone).p50, 3),
      },
      notes: `${n} sessions of the Node ${NODE_RUNTIME.version} image ${tag}, each after one turn (demo model), idle; PSS from /proc/<pid>/smaps_rollup of every process in each container; 'max' of the warm-turn rows is p99.`,
    };
  } finally {
    await m.close({ removeContainers: true }).catch(() => undefined);
    await removeOwned(docker, owner);
    unmountUnderSandboxes(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}
