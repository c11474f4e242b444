/**
 * Sandbox runtime, Node 24 (shipped) vs Node 20 (end of life), same bench, same run: two images
 * that differ only in the Node package of their base (NODE_RUNTIME vs NODE20_RUNTIME), measured
 * interleaved so machine load falls on both alike:
 * - baselines: a `docker run` of the image printing "ready" (bare, and with the sandbox's hardening);
 * - each image process's start, inside one hardened container per image (1 CPU, as a session):
 *   `node -e 0`, the supervisor until its "ready" line, each MCP server (tools, extensions) until it
 *   answers `initialize`, the agent child until it reports ready (it starts both MCP servers);
 * - cold session start and pool claim, each to the end of a first turn; warm prompt round trips.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import {
  createDocker,
  buildSandboxImage,
  sandboxHostConfig,
  SessionManager,
  NODE_RUNTIME,
  NODE20_RUNTIME,
  type NodeRuntimePin,
} from '../daemon/runtime/index.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';
import { removeOwned, startUntilReady } from './rig.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const N_COLD = 16;
const N_WARM = 300;
/** Pause before each timed container start (see the cold-start loop). */
const SETTLE_MS = 300;
/** Process probes: rounds (interleaved between images) × starts of each process per round. */
const PROBE_ROUNDS = 4;
const PROBE_PER_ROUND = 3;

interface Variant {
  label: string;
  pin: NodeRuntimePin;
  tag: string;
}
const VARIANTS: Variant[] = [
  { label: 'Node 24', pin: NODE_RUNTIME, tag: 'airlock/sandbox:bench' },
  { label: 'Node 20', pin: NODE20_RUNTIME, tag: 'airlock/sandbox:bench-node20' },
];

/**
 * Runs inside the container (CommonJS, `node -e PROBE K`): starts each process K times with a
 * minimal env and prints {name: [ms…]} as one JSON line. Each process is SIGKILLed once ready.
 * The agent and both servers are timed under uid 1001 with the image's compile cache and the
 * sandbox's Node flags, as a session runs them.
 */
const PROBE = String.raw`
const { spawn } = require('node:child_process');
const { rmSync } = require('node:fs');
const K = Number(process.argv[1] || 3);
// As the sessions run them: the image's compile cache (ignored by Node 20) and the sandbox flags.
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', NODE_ENV: 'production', AGENT_LOG_LEVEL: 'warn', ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}) };
const FLAGS = ['--max-semi-space-size=1'];
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } } }) + '\n';
// uid: the agent and its servers run as 1001 (and their compile cache is 1001's), the supervisor as
// root. Root here has no CAP_KILL over 1001's processes: those are ended by closing their stdin
// (each exits then); the supervisor is SIGKILLed, and its agent exits with the closed pipe.
function time(args, ready, input, uid = 1001) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, [...FLAGS, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'], uid, gid: uid });
    const kill = () => (uid === 0 ? p.kill('SIGKILL') : p.stdin.end());
    let out = '', err = '', done = false;
    const timer = setTimeout(() => { kill(); reject(new Error('timeout ' + args.join(' ') + ': ' + err.slice(-300))); }, 30000);
    const check = () => {
      if (done || !ready || !ready(out, err)) return;
      done = true;
      const ms = performance.now() - t0;
      clearTimeout(timer);
      p.on('exit', () => resolve(ms));
      kill();
    };
    p.stdout.on('data', (d) => { out += d; check(); });
    p.stderr.on('data', (d) => { err += d; check(); });
    p.on('exit', (code) => {
      if (done) return;
      clearTimeout(timer);
      if (!ready && code === 0) resolve(performance.now() - t0);
      else reject(new Error(args.join(' ') + ' exited ' + code + ': ' + err.slice(-300)));
    });
    if (input) p.stdin.write(input);
  });
}
const D = '/opt/airlock/dist';
const probes = {
  node_e0: () => time(['-e', '0']),
  // (The agent hosts both MCP servers in its process; the servers' own entries are timed alone too.)
  supervisor: () => {
    for (const s of ['control.sock', 'egress.sock']) rmSync('/run/airlock/' + s, { force: true });
    return time([D + '/supervisor/main.js'], (o, e) => e.includes('"msg":"ready"'), undefined, 0);
  },
  tools_mcp: () => time([D + '/tools/main.js'], (o) => o.includes('"id":1'), INIT),
  extensions_mcp: () => time([D + '/extensions/main.js'], (o) => o.includes('"id":1'), INIT),
  agent_with_mcp: () => time([D + '/agent/main.js'], (o) => o.includes('"type":"ready"')),
};
// As the supervisor starts it when the image has the agent's startup snapshot.
if (require('node:fs').existsSync(D + '/agent/snapshot.blob')) {
  probes.agent_snapshot = () => time(['--disable-warning=ExperimentalWarning', '--snapshot-blob', D + '/agent/snapshot.blob'], (o) => o.includes('"type":"ready"'));
}
// As the image's ENTRYPOINT starts the supervisor when the image has its startup snapshot.
if (require('node:fs').existsSync(D + '/supervisor/snapshot.blob')) {
  probes.supervisor_snapshot = () => {
    for (const s of ['control.sock', 'egress.sock']) rmSync('/run/airlock/' + s, { force: true });
    return time(['--snapshot-blob', D + '/supervisor/snapshot.blob'], (o, e) => e.includes('"msg":"ready"'), undefined, 0);
  };
}
(async () => {
  const res = {};
  for (let i = 0; i < K; i++) for (const [k, f] of Object.entries(probes)) (res[k] ??= []).push(await f());
  process.stdout.write(JSON.stringify(res) + '\n');
})().catch((e) => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
`;

const PROBE_ROWS: Record<string, string> = {
  node_e0: '`node -e 0` in the container',
  supervisor: 'supervisor start from its entry module → "ready"',
  supervisor_snapshot: 'supervisor start from its startup snapshot → "ready" (the image\'s ENTRYPOINT)',
  tools_mcp: 'tools MCP server start → initialize answered',
  extensions_mcp: 'extensions MCP server start → initialize answered',
  agent_with_mcp: 'agent child start (with both MCP servers) → ready',
  agent_snapshot: 'agent child start from its startup snapshot → ready (as sessions start it)',
};

export function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m) => m && m.startsWith(dir + '/'));
  for (const m of mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}

/** Run the probe in a running container as root; the parsed timings. */
async function probe(docker: Docker, container: Docker.Container, k: number): Promise<Record<string, number[]>> {
  const exec = await container.exec({
    Cmd: ['/usr/local/bin/node', '-e', PROBE, String(k)],
    User: '0',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (d: Buffer) => (o += d.toString()));
  err.on('data', (d: Buffer) => (e += d.toString()));
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`probe exited ${ExitCode}: ${e.slice(-500)}`);
  return JSON.parse(o.trim().split('\n').pop() ?? '{}') as Record<string, number[]>;
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: VARIANTS[0].tag } });
  try {
    await docker.ping();
  } catch (err) {
    return { skipped: `no Docker engine: ${(err as Error).message}` };
  }
  for (const v of VARIANTS)
    await buildSandboxImage({ docker, tag: v.tag, root: ROOT, log: silentLogger(), node: v.pin });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-rt-'));
  const owner = `airlock-bench-${randomUUID().slice(0, 8)}`;
  const signal = new AbortController().signal;
  /** When each session became live (the manager's onSessionLive hook): claim or cold start → session ready. */
  const liveAt = new Map<string, number>();
  const hooks = { onSessionLive: (s: { sessionId: string }) => void liveAt.set(s.sessionId, nowMs()) };
  const turn = (m: SessionManager, sessionId: string) =>
    m.runTurn({ userId: 1, sessionId, turnId: randomUUID(), prompt: 'ping', signal, onEvent: () => undefined });
  const samples = new Map<string, number[]>();
  const add = (v: Variant, what: string, ms: number): void => {
    const key = `${v.label}|${what}`;
    if (!samples.has(key)) samples.set(key, []);
    samples.get(key)!.push(ms);
  };
  const managers: SessionManager[] = [];
  try {
    const benchCfg = loadConfig({ AIRLOCK_DATA_DIR: join(dir, 'cfg'), AIRLOCK_IMAGE: VARIANTS[0].tag });
    const runDir = (name: string): string => {
      const d = join(dir, 'run', name);
      mkdirSync(d, { recursive: true });
      return d;
    };
    const hardened = (name: string): Docker.HostConfig =>
      sandboxHostConfig(benchCfg.sandbox, [
        { Type: 'bind', Source: runDir(name), Target: '/run/airlock', ReadOnly: false },
      ]);

    // Baselines: a bare `docker run` printing "ready" and the same run with the sandbox's full
    // hardening (sandboxHostConfig) and a bind mount like the session's /run/airlock.
    const dockerRun = async (image: string, HostConfig: Docker.HostConfig): Promise<number> => {
      const t0 = nowMs();
      const c = await docker.createContainer({
        Image: image,
        Entrypoint: ['/usr/local/bin/node', '-e', 'console.log("ready")'],
        Labels: { 'airlock.owner': owner },
        NetworkDisabled: true,
        HostConfig,
      });
      await startUntilReady(c);
      const ms = nowMs() - t0;
      await c.remove({ force: true });
      return ms;
    };

    // Each process's start inside a hardened container of each image.
    const probeContainers = new Map<Variant, Docker.Container>();
    for (const v of VARIANTS) {
      const c = await docker.createContainer({
        Image: v.tag,
        Entrypoint: ['/bin/sleep', 'infinity'],
        Labels: { 'airlock.owner': owner },
        NetworkDisabled: true,
        HostConfig: hardened(`probe-${v.pin.version}`),
      });
      await c.start();
      probeContainers.set(v, c);
    }
    for (let r = 0; r < PROBE_ROUNDS; r++) {
      for (const v of VARIANTS) {
        const res = await probe(docker, probeContainers.get(v)!, PROBE_PER_ROUND);
        for (const [k, ms] of Object.entries(res)) for (const x of ms) add(v, k, x);
      }
    }
    await Promise.all([...probeContainers.values()].map((c) => c.remove({ force: true })));

    // Cold session start: no pool; first prompt of a new session until its turn ends.
    const cold = new Map<Variant, SessionManager>();
    for (const v of VARIANTS) {
      const cfg = loadConfig({
        AIRLOCK_DATA_DIR: join(dir, `cold-${v.pin.version}`),
        AIRLOCK_IMAGE: v.tag,
        AIRLOCK_POOL_SIZE: '0',
        AIRLOCK_MAX_SESSIONS: '100',
      });
      const m = new SessionManager({ config: cfg, docker, log: silentLogger(), owner, hooks });
      managers.push(m);
      await m.start();
      cold.set(v, m);
    }
    // Each cold start right after its baselines (bare and hardened runs of the same image), so a
    // drift of the machine's speed during the run falls on both sides of the ratio alike; and each
    // timed start after a pause, so the engine's and the kernel's clean-up of the container removed
    // before (cgroup release, namespaces: tens of ms of CPU after `remove` returns) falls on neither.
    const pairRatios: number[] = [];
    const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
    for (let i = 0; i < N_COLD; i++) {
      for (const v of VARIANTS) {
        await settle();
        add(v, 'bare', await dockerRun(v.tag, { NetworkMode: 'none', Init: true }));
        await settle();
        const base = await dockerRun(v.tag, hardened('baseline'));
        add(v, 'hardened', base);
        const m = cold.get(v)!;
        await settle();
        const t0 = nowMs();
        const r = await turn(m, `cold-${i}`);
        if (r.stop_reason !== 'end_turn') throw new Error(`cold turn (${v.label}) ${r.stop_reason}`);
        const ms = nowMs() - t0;
        add(v, 'cold', ms);
        add(v, 'cold_ready', liveAt.get(`cold-${i}`)! - t0);
        if (v === VARIANTS[0]) pairRatios.push(ms / base);
        await m.kill(`cold-${i}`);
      }
    }
    for (const m of cold.values()) await m.close({ removeContainers: true });

    // Pool: a pre-started container claimed by a new session (both pools full before each claim).
    const pools = new Map<Variant, SessionManager>();
    for (const v of VARIANTS) {
      const cfg = loadConfig({
        AIRLOCK_DATA_DIR: join(dir, `pool-${v.pin.version}`),
        AIRLOCK_IMAGE: v.tag,
        AIRLOCK_POOL_SIZE: '1',
        AIRLOCK_MAX_SESSIONS: '100',
      });
      const m = new SessionManager({ config: cfg, docker, log: silentLogger(), owner, hooks });
      managers.push(m);
      await m.start();
      pools.set(v, m);
    }
    for (let i = 0; i < N_COLD; i++) {
      for (const v of VARIANTS) {
        for (const m of pools.values()) await m.poolReady();
        const m = pools.get(v)!;
        const t0 = nowMs();
        const r = await turn(m, `pool-${i}`);
        if (r.stop_reason !== 'end_turn') throw new Error(`pool turn (${v.label}) ${r.stop_reason}`);
        add(v, 'pool', nowMs() - t0);
        add(v, 'pool_ready', liveAt.get(`pool-${i}`)! - t0);
        await m.kill(`pool-${i}`);
      }
    }

    // Warm prompts in one live session of each image, alternating.
    for (const m of pools.values()) {
      await m.poolReady();
      await turn(m, 'warm');
    }
    for (let i = 0; i < N_WARM; i++) {
      for (const v of VARIANTS) {
        const t0 = nowMs();
        await turn(pools.get(v)!, 'warm');
        add(v, 'warm', nowMs() - t0);
      }
    }
    for (const m of pools.values()) await m.close({ removeContainers: true });

    const st = (v: Variant, what: string) => stats(samples.get(`${v.label}|${what}`) ?? []);
    const WHAT: [string, string][] = [
      ['bare', 'bare docker run → "ready" (baseline)'],
      ['hardened', 'hardened docker run → "ready" (baseline)'],
      ...Object.entries(PROBE_ROWS),
      ['cold_ready', 'cold session start → session ready'],
      ['cold', 'cold session start → first turn done'],
      ['pool_ready', 'pool claim → session ready'],
      ['pool', 'pool claim → first turn done'],
      ['warm', 'warm prompt round trip (control socket)'],
    ];
    const rows: BenchResult['rows'] = [];
    for (const [key, what] of WHAT) {
      for (const v of VARIANTS) {
        const s = st(v, key);
        rows.push({ what, node: `${v.label} (${v.pin.version})`, n: s.n, p50_ms: s.p50, p99_ms: s.p99 });
      }
    }
    const [v24, v20] = VARIANTS;
    const ratios: Record<string, number> = {
      cold_start_vs_bare_run_p50: st(v24, 'cold').p50 / st(v24, 'bare').p50,
      cold_start_vs_hardened_run_p50: st(v24, 'cold').p50 / st(v24, 'hardened').p50,
      /** The median of each cold start over the hardened run just before it. */
      cold_start_vs_hardened_run_pairs_median: stats(pairRatios).p50,
      agent_snapshot_vs_bundle_p50: st(v24, 'agent_snapshot').p50 / st(v24, 'agent_with_mcp').p50,
      hardened_vs_bare_run_p50: st(v24, 'hardened').p50 / st(v24, 'bare').p50,
      pool_start_vs_bare_run_p50: st(v24, 'pool').p50 / st(v24, 'bare').p50,
      pool_vs_cold_p50: st(v24, 'pool').p50 / st(v24, 'cold').p50,
    };
    for (const [key] of WHAT) ratios[`node24_vs_node20_${key}_p50`] = round(st(v24, key).p50 / st(v20, key).p50, 3);
    return {
      name: 'runtime',
      rows,
      ratios,
      notes:
        'Node 24 is the image shipped; the Node 20 image differs only in its Node package. Ratios without a node prefix are for Node 24. ' +
        'cold/pool include profile write, supervisor start message, agent child spawn and one echo turn; process starts are measured inside a hardened 1-CPU container.',
    };
  } finally {
    for (const m of managers) await m.close({ removeContainers: true }).catch(() => undefined);
    await removeOwned(docker, owner);
    unmountUnder(dir);
    for (const v of VARIANTS) spawnSync('umount', ['-l', join(dir, `pool-${v.pin.version}`, 'sandboxes')]);
    rmSync(dir, { recursive: true, force: true });
  }
}
