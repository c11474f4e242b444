/**
 * CPU per component (docs/capacity.md, "CPU per chat"): what a chat costs in CPU-seconds, split
 * into the sandbox's own processes (each container's cgroup: daemon/runtime/cgroup-stats.ts), the
 * container engine (dockerd, containerd, the shims and the runc and docker-init runs they reaped:
 * /proc/<pid>/stat, children included) and the daemon's session manager (this process). Phases,
 * pool of one:
 *
 * - a sandbox start: the pool's first member, from its creation to ready;
 * - a chat: claim and first turn, with the pool's refill behind it (one more sandbox start), then
 *   `AIRLOCK_BENCH_CPU_TURNS` warm turns (default 6), then its end (the sandbox removed);
 *   repeated for `AIRLOCK_BENCH_CPU_CHATS` chats (default 4).
 *
 * Twice: on the demo model (in the agent, no model HTTP), then on an OpenAI-shaped model server on
 * 127.0.0.1 (a process of its own, ~250-token answers) reached as in production: the agent's SDK,
 * the sandbox's proxy, the daemon's egress gateway injecting the key.
 *
 * The first turn's share is the claim-and-first-turn phase less one sandbox start. Needs root
 * (the cgroups and other users' /proc) and the Docker engine.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { randomBytes, randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { SessionManager, NODE_RUNTIME } from '../daemon/runtime/index.js';
import { sandboxUsage } from '../daemon/runtime/cgroup-stats.js';
import { EgressGatewayService } from '../daemon/host/egress.js';
import { OverlayPreparer } from '../daemon/host/overlay.js';
import { TokenService } from '../daemon/host/tokens.js';
import { Encryptor, loadConfig, silentLogger } from '../core/index.js';
import { AccountStore } from '../domain/accounts.js';
import { createSession } from '../domain/chat/store.js';
import { openDatabase } from '../domain/db/index.js';
import { createUser } from '../domain/users.js';
import { round, type BenchResult } from './lib.js';
import { removeOwned } from './rig.js';
import { sandboxBench, unmountUnderSandboxes } from './density.bench.js';

/** The engine's processes on the host (comm names; a shim's runc and docker-init runs count in its children's time). */
const ENGINE = new Set(['dockerd', 'containerd', 'containerd-shim', 'containerd-shim-runc-v2', 'runc', 'docker-init']);
/** USER_HZ: /proc/<pid>/stat counts clock ticks of 1/100 s on Linux. */
const TICK_S = 0.01;
/** After a phase: the engine's and the kernel's clean-up and the sandbox's own settling. */
const SETTLE_MS = 1500;

/**
 * CPU-seconds so far: per engine process (by pid), per container (by id), and this process before
 * and after the reading (its own scan of /proc is left out of the daemon's share).
 */
interface Reading {
  engine: Map<number, number>;
  sandboxes: Map<string, number>;
  daemonAtStart: number;
  daemonAtEnd: number;
}

const cpuNow = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};

function engineProcesses(): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    if (!ENGINE.has(comm)) continue;
    // Fields after the comm: state is 3; utime 14, stime 15, cutime 16, cstime 17 (1-based, proc(5)).
    const f = stat.slice(close + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    out.set(Number(name), ticks * TICK_S);
  }
  return out;
}

/** One process's CPU-seconds (utime + stime). */
function engineCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_S;
}

function read(m: SessionManager): Reading {
  const daemonAtStart = cpuNow();
  const sandboxes = new Map<string, number>();
  for (const s of m.list()) {
    const u = sandboxUsage(s.containerId);
    if (u) sandboxes.set(s.containerId, u.cpuSeconds);
  }
  const engine = engineProcesses();
  return { engine, sandboxes, daemonAtStart, daemonAtEnd: cpuNow() };
}

/** What each component used between two readings (a process or container new since `a` counts from 0; one gone is not counted). */
function spent(a: Reading, b: Reading): { sandbox: number; engine: number; daemon: number } {
  const delta = <K>(x: Map<K, number>, y: Map<K, number>) =>
    [...y].reduce((sum, [k, v]) => sum + Math.max(0, v - (x.get(k) ?? 0)), 0);
  return {
    sandbox: delta(a.sandboxes, b.sandboxes),
    engine: delta(a.engine, b.engine),
    daemon: b.daemonAtStart - a.daemonAtEnd,
  };
}

type Split = ReturnType<typeof spent>;
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
const ms = (s: number) => round(s * 1000, 1);
const sum = (xs: Split[]): Split =>
  xs.reduce((a, x) => ({ sandbox: a.sandbox + x.sandbox, engine: a.engine + x.engine, daemon: a.daemon + x.daemon }), {
    sandbox: 0,
    engine: 0,
    daemon: 0,
  });
const scale = (x: Split, k: number): Split => ({ sandbox: x.sandbox * k, engine: x.engine * k, daemon: x.daemon * k });
const minus = (x: Split, y: Split): Split => ({
  sandbox: x.sandbox - y.sandbox,
  engine: x.engine - y.engine,
  daemon: x.daemon - y.daemon,
});
const row = (what: string, n: number, x: Split) => ({
  what,
  n,
  sandbox_ms: ms(x.sandbox),
  engine_ms: ms(x.engine),
  daemon_ms: ms(x.daemon),
  total_ms: ms(x.sandbox + x.engine + x.daemon),
});

const MODEL_KEY = 'sk-bench-cpu-0123456789';
/** About 250 tokens: the emulator streams one chunk per word. */
const ANSWER = Array.from({ length: 250 }, (_, i) => `word${i % 50}`).join(' ');

/** An OpenAI-shaped model server in a process of its own (its CPU is not the chat's): its URL and pid. */
async function modelServer(): Promise<{ url: string; pid: number; close(): void }> {
  const script = `const m = await import(${JSON.stringify(new URL('../emulator/model-openai.js', import.meta.url).href)});
const s = await m.start({ apiKey: ${JSON.stringify(MODEL_KEY)}, respond: () => ({ kind: 'reply', text: ${JSON.stringify(ANSWER)} }) });
process.stdout.write(s.url + '\\n');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { url: line.trim(), pid: child.pid!, close: () => child.kill() };
}

/** The session manager of one variant: the demo model in the agent, or an OpenAI-shaped model through the egress gateway. */
async function manager(variant: 'demo' | 'openai', dir: string, docker: Docker, owner: string, tag: string) {
  const model = variant === 'openai' ? await modelServer() : undefined;
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_IMAGE: tag,
    AIRLOCK_POOL_SIZE: '1',
    AIRLOCK_MAX_SESSIONS: '8',
    AIRLOCK_SESSION_IDLE_S: '86400',
    ...(model
      ? {
          AIRLOCK_MODEL_PROVIDER: 'openai',
          AIRLOCK_MODEL: 'gpt-bench',
          AIRLOCK_MODEL_BASE_URL: model.url,
          AIRLOCK_MODEL_API_KEY: MODEL_KEY,
        }
      : {}),
  });
  const log = silentLogger();
  const database = await openDatabase({ file: ':memory:' });
  const enc = new Encryptor(randomBytes(32));
  const tokens = new TokenService({
    store: new AccountStore(database.sql, enc),
    refresh: () => Promise.reject(new Error('no account')),
    log,
  });
  const egress = new EgressGatewayService({ log });
  const seams = model
    ? { preparer: new OverlayPreparer({ config, db: database.sql, encryptor: enc, tokens, log }), egress }
    : {};
  const m = new SessionManager({ config, docker, log, owner, reapIntervalMs: 3_600_000, ...seams });
  const user = await createUser(database.sql, { username: 'bench', email: 'bench@example.test' });
  return {
    m,
    userId: user.id,
    newChat: (id: string) => createSession(database.sql, user.id, 'hello', id),
    modelPid: model?.pid,
    async close() {
      await m.close({ removeContainers: true }).catch(() => undefined);
      await egress.close();
      model?.close();
      await database.close();
    },
  };
}

/** One variant's phases (see the file's comment), by component. */
async function measure(
  variant: 'demo' | 'openai',
  o: { docker: Docker; dir: string; owner: string; tag: string; chats: number; turns: number },
): Promise<{ rows: ReturnType<typeof row>[]; start: Split; perChat: Split; modelMs: number }> {
  const dir = join(o.dir, variant);
  mkdirSync(dir);
  const { m, userId, newChat, modelPid, close } = await manager(variant, dir, o.docker, o.owner, o.tag);
  const signal = new AbortController().signal;
  const turn = async (sessionId: string): Promise<void> => {
    const r = await m.runTurn({ userId, sessionId, turnId: randomUUID(), prompt: 'hello', signal, onEvent: () => {} });
    if (r.stop_reason !== 'end_turn') throw new Error(`${sessionId}: ${r.stop_reason} ${r.error?.code}`);
  };
  const model0 = modelPid ? engineCpu(modelPid) : 0;
  try {
    // The manager's own start (adoption, the slots tmpfs) is left out: its pool fill runs after it returns.
    await m.start();
    let before = read(m);
    await m.poolReady(120_000);
    await settle();
    const start = spent(before, read(m));
    const first: Split[] = [];
    const warm: Split[] = [];
    const end: Split[] = [];
    for (let c = 0; c < o.chats; c++) {
      const sid = `cpu-${variant}-${c}`;
      await newChat(sid);
      before = read(m);
      await turn(sid);
      await m.poolReady(120_000);
      await settle();
      let after = read(m);
      first.push(spent(before, after));
      before = after;
      for (let i = 0; i < o.turns; i++) await turn(sid);
      await settle();
      after = read(m);
      warm.push(scale(spent(before, after), 1 / o.turns));
      before = after;
      await m.kill(sid);
      await settle();
      end.push(spent(before, read(m)));
    }
    const claimAndFirst = scale(sum(first), 1 / o.chats);
    const warmTurn = scale(sum(warm), 1 / o.chats);
    const chatEnd = scale(sum(end), 1 / o.chats);
    // The refill behind each claim is one sandbox start: the first turn's own share is the rest.
    const firstTurn = minus(claimAndFirst, start);
    const perChat = sum([claimAndFirst, scale(warmTurn, o.turns), chatEnd]);
    const answer = variant === 'demo' ? 'demo model, short answer' : 'OpenAI-shaped model, ~250-token answer';
    const modelMs = modelPid ? ms((engineCpu(modelPid) - model0) / (o.chats * (o.turns + 1))) : 0;
    return {
      start,
      perChat,
      modelMs,
      rows: [
        row(`${variant}: a sandbox start (the pool member, to ready)`, 1, start),
        row(`${variant}: claim + first turn, with the refill behind it`, o.chats, claimAndFirst),
        row(`${variant}: the first turn beyond the sandbox start`, o.chats, firstTurn),
        row(`${variant}: a warm turn (${answer})`, o.chats * o.turns, warmTurn),
        row(`${variant}: the chat's end (its sandbox removed)`, o.chats, chatEnd),
        row(`${variant}: a chat: start, first turn, ${o.turns} warm turns, end`, o.chats, perChat),
      ],
    };
  } finally {
    await close();
  }
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const chats = Number(process.env.AIRLOCK_BENCH_CPU_CHATS ?? 4);
  const turns = Number(process.env.AIRLOCK_BENCH_CPU_TURNS ?? 6);
  const bench = await sandboxBench('the cgroups and the engine’s /proc/<pid>/stat', 'cpu');
  if ('skipped' in bench) return bench;
  const { docker, dir, owner, tag } = bench;
  const load0 = loadavg().map((l) => round(l, 2));
  try {
    await settle();
    const demo = await measure('demo', { docker, dir, owner, tag, chats, turns });
    const openai = await measure('openai', { docker, dir, owner, tag, chats, turns });
    return {
      name: 'cpu',
      rows: [...demo.rows, ...openai.rows],
      ratios: {
        demo_sandbox_start_share_of_chat: round(totalOf(demo.start) / totalOf(demo.perChat), 3),
        openai_sandbox_start_share_of_chat: round(totalOf(openai.start) / totalOf(openai.perChat), 3),
        sandbox_processes_share_of_start: round(demo.start.sandbox / totalOf(demo.start), 3),
      },
      notes: `CPU-seconds as ms, by component: sandbox = each container's cgroup (usage), engine = dockerd, containerd, the shims and the runc/docker-init runs they reaped (/proc/<pid>/stat, utime+stime+cutime+cstime; a process gone before the phase's end is not counted), daemon = the bench process running the session manager (and, for openai, the egress gateway that injects the model key). The OpenAI-shaped model server runs in a process of its own, not counted: ${openai.modelMs} ms a model call. Node ${NODE_RUNTIME.version} image, pool 1, ${chats} chats × ${turns} warm turns per variant, ${SETTLE_MS} ms settle after each phase; load average before ${load0.join('/')}, after ${loadavg()
        .map((l) => round(l, 2))
        .join('/')}.`,
    };
  } finally {
    await removeOwned(docker, owner);
    unmountUnderSandboxes(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

function totalOf(x: Split): number {
  return x.sandbox + x.engine + x.daemon;
}
