/**
 * run_python in the sandbox image (`npm run bench -- code`): the tools MCP server run in a
 * hardened container of the image (network none, read-only root, uid 1001), driven over stdio
 * by the SDK client as the agent drives it. Measures the first call of a chat (interpreter start
 * with pandas, numpy and matplotlib imported) in fresh containers, and warm calls of a cell that
 * does nothing (`pass`: all of it is overhead) against the same server's MCP round trip of a
 * tool that fails at once (read_document of a missing file: the baseline of one tool call).
 *
 * Memory (needs root, to read other users' /proc/<pid>/smaps_rollup): the PSS of idle sessions
 * (one demo turn each, as bench/density.bench.ts) of this image against the same image with
 * Python's files removed (a layer on top that deletes them), in alternating batches of one run;
 * and what a chat that ran Python holds while it stays warm: the tools server's PSS with its
 * children before and after its first run_python call.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { createDocker, ensureSandboxImage, NODE_RUNTIME, SessionManager } from '../daemon/runtime/index.js';
import { pss, tree, unmountUnderSandboxes } from './density.bench.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';
import { removeOwned } from './rig.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TAG = 'airlock/sandbox:bench-code';
/** The same image with Python's files removed: the "without Python" side of the memory rows. */
const NO_PYTHON_TAG = 'airlock/sandbox:bench-code-nopython';
/** Idle sessions per image and batch, and batches per image (alternating). */
const IDLE_BATCH = 4;
const IDLE_ROUNDS = 3;
const FIRST_N = 5;
const WARM_N = 200;

async function server(name?: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: 'docker',
    args: [
      'run',
      ...(name ? ['--name', name] : []),
      '-i',
      '--rm',
      '--network',
      'none',
      '--read-only',
      '--cap-drop',
      'ALL',
      '--user',
      '1001:1001',
      '--tmpfs',
      '/workspace:uid=1001,gid=1001,mode=0700',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/home/agent:uid=1001',
      '-e',
      'HOME=/home/agent',
      '-w',
      '/workspace',
      '--entrypoint',
      '/usr/local/bin/node',
      TAG,
      '/opt/airlock/dist/tools/main.js',
    ],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(transport, { timeout: 120_000 });
  return client;
}

const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });

export async function run(): Promise<BenchResult | { skipped: string }> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: TAG } });
  try {
    await docker.ping();
  } catch {
    return { skipped: 'no Docker engine' };
  }
  await ensureSandboxImage({ docker, tag: TAG, root: ROOT, log: silentLogger(), node: NODE_RUNTIME });
  const first: number[] = [];
  for (let i = 0; i < FIRST_N; i++) {
    const c = await server();
    const s = nowMs();
    const r = await call(c, 'run_python', { code: 'pd.__version__' });
    first.push(nowMs() - s);
    if (r.isError) throw new Error(JSON.stringify(r.content));
    await c.close();
  }
  const c = await server();
  await call(c, 'run_python', { code: 'x = 1' });
  const warm: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < WARM_N; i++) {
    let s = nowMs();
    await call(c, 'run_python', { code: 'pass' });
    warm.push(nowMs() - s);
    s = nowMs();
    await call(c, 'read_document', { name: 'missing.pdf' });
    base.push(nowMs() - s);
  }
  await c.close();
  const memory = process.getuid?.() === 0 ? await memoryRows(docker) : undefined;
  const f = stats(first);
  const w = stats(warm);
  const b = stats(base);
  return {
    name: 'code',
    rows: [
      {
        what: 'first run_python call (interpreter + pandas, numpy, matplotlib)',
        n: f.n,
        p50_ms: round(f.p50, 1),
        p99_ms: round(f.p99, 1),
      },
      { what: 'warm run_python call of `pass`', n: w.n, p50_ms: round(w.p50, 2), p99_ms: round(w.p99, 2) },
      {
        what: 'baseline: a tool call that fails at once (MCP round trip)',
        n: b.n,
        p50_ms: round(b.p50, 2),
        p99_ms: round(b.p99, 2),
      },
      ...(memory?.rows ?? []),
    ],
    ratios: { warm_over_baseline_p50: w.p50 / b.p50, ...memory?.ratios },
    notes:
      `warm overhead beyond an MCP round trip, p50: ${round(w.p50 - b.p50, 2)} ms (goal ≤ 30 ms)` +
      (memory ? `; ${memory.note}` : "; memory rows skipped: they need root (other users' smaps_rollup)"),
  };
}

type MemoryRows = { rows: BenchResult['rows']; ratios: Record<string, number>; note: string };

/** The memory rows (see the file's comment). */
async function memoryRows(docker: ReturnType<typeof createDocker>): Promise<MemoryRows> {
  const built = spawnSync('docker', ['build', '-q', '-t', NO_PYTHON_TAG, '-'], {
    input: `FROM ${TAG}\nRUN rm -rf /usr/bin/python3* /usr/lib/python3 /usr/lib/python3.* /usr/local/lib/python3.*\n`,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`the image without Python did not build: ${built.stderr}`);
  const withPython: number[] = [];
  const without: number[] = [];
  for (let r = 0; r < IDLE_ROUNDS; r++) {
    withPython.push(...(await idleSessionsPss(docker, TAG, IDLE_BATCH)));
    without.push(...(await idleSessionsPss(docker, NO_PYTHON_TAG, IDLE_BATCH)));
  }
  const held = await pythonHeld();
  const a = stats(withPython);
  const b = stats(without);
  return {
    rows: [
      {
        what: 'idle session PSS, this image (Python in it), MiB',
        n: a.n,
        p50: round(a.p50, 1),
        max: round(Math.max(...withPython), 1),
      },
      {
        what: 'idle session PSS, the same image without Python, MiB',
        n: b.n,
        p50: round(b.p50, 1),
        max: round(Math.max(...without), 1),
      },
      {
        what: 'tools server with its children, idle before its first run_python call, MiB',
        n: 1,
        p50: round(held.before, 1),
      },
      {
        what: 'the same, idle after it (the interpreter with pandas, numpy, matplotlib), MiB',
        n: 1,
        p50: round(held.after, 1),
      },
    ],
    ratios: { idle_pss_with_minus_without_python_p50_mib: round(a.p50 - b.p50, 2) },
    note: `idle PSS with Python in the image minus without, p50: ${round(a.p50 - b.p50, 2)} MiB (goal: within 2 MiB; ${IDLE_ROUNDS} alternating batches of ${IDLE_BATCH} sessions per image)`,
  };
}

/** PSS in MiB of each of `n` sessions of `tag`, each after one demo turn, left idle. */
async function idleSessionsPss(docker: ReturnType<typeof createDocker>, tag: string, n: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-code-'));
  const owner = `airlock-bench-${randomUUID().slice(0, 8)}`;
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_IMAGE: tag,
    AIRLOCK_POOL_SIZE: '0',
    AIRLOCK_MAX_SESSIONS: String(n + 2),
    AIRLOCK_SESSION_IDLE_S: '86400',
  });
  const m = new SessionManager({ config, docker, log: silentLogger(), owner });
  const signal = new AbortController().signal;
  try {
    await m.start();
    for (let i = 0; i < n; i++) {
      const r = await m.runTurn({
        userId: i + 1,
        sessionId: `s-${i}`,
        turnId: randomUUID(),
        prompt: 'hello',
        signal,
        onEvent: () => undefined,
      });
      if (r.stop_reason !== 'end_turn') throw new Error(`${tag} session ${i}: ${r.stop_reason} ${r.error?.code}`);
    }
    // Let the starts settle (lazy work after ready, GC) before measuring, as the density bench does.
    await new Promise((r) => setTimeout(r, 5000));
    const out: number[] = [];
    for (const s of m.list()) {
      const pid = (await docker.getContainer(s.containerId).inspect()).State.Pid;
      out.push(tree(pid).reduce((sum, p) => sum + pss(p), 0) / 2 ** 20);
    }
    return out;
  } finally {
    await m.close({ removeContainers: true }).catch(() => undefined);
    await removeOwned(docker, owner);
    unmountUnderSandboxes(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The tools server's PSS with its children (MiB), idle before and after its first run_python call. */
async function pythonHeld(): Promise<{ before: number; after: number }> {
  const name = `airlock-bench-code-${randomUUID().slice(0, 8)}`;
  const c = await server(name);
  try {
    const pidOf = () =>
      Number(spawnSync('docker', ['inspect', '-f', '{{.State.Pid}}', name], { encoding: 'utf8' }).stdout.trim());
    const sum = () => tree(pidOf()).reduce((s, p) => s + pss(p), 0) / 2 ** 20;
    await call(c, 'read_document', { name: 'missing.pdf' });
    await new Promise((r) => setTimeout(r, 3000));
    const before = sum();
    const r = await call(c, 'run_python', { code: 'x = pd.DataFrame({"a": [1, 2, 3]}).sum()' });
    if (r.isError) throw new Error(JSON.stringify(r.content));
    await new Promise((r) => setTimeout(r, 3000));
    return { before, after: sum() };
  } finally {
    await c.close();
  }
}
