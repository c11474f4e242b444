/**
 * Sandbox runtimes, runsc (gVisor) vs runc, same bench, same run, interleaved so machine load
 * falls on both alike:
 * - a hardened `docker run` of the image printing "ready" (sandboxHostConfig under each runtime);
 * - cold session start → first turn done, and → session ready;
 * - runc's pool claim → first turn done (under runsc the pool is off: what a runsc user waits for
 *   is the cold start);
 * - warm prompt round trips in one live session of each.
 *
 * The runsc engine: AIRLOCK_BENCH_RUNSC_SOCKET (an engine with runsc registered as
 * docs/security.md says), else the default engine when it has runsc. Image: AIRLOCK_IMAGE
 * (default airlock/sandbox:latest), copied into the runsc engine when it lacks it.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import { checkRuntime, sandboxHostConfig, SessionManager, type EngineRuntimes } from '../daemon/runtime/index.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';
import { startUntilReady } from './rig.js';
import { unmountUnder } from './runtime.bench.js';

const N_COLD = 8;
const N_WARM = 200;
const DEFAULT_SOCKET = '/var/run/docker.sock';
type Rt = 'runc' | 'runsc';

async function engineWithRunsc(): Promise<{ socket: string } | { skipped: string }> {
  for (const socket of [process.env.AIRLOCK_BENCH_RUNSC_SOCKET, DEFAULT_SOCKET].filter((s): s is string => !!s)) {
    try {
      const info = (await new Docker({ socketPath: socket }).info()) as { Runtimes?: EngineRuntimes };
      const c = checkRuntime(info.Runtimes, 'runsc');
      if (c.ok) return { socket };
    } catch {
      // not reachable: next
    }
  }
  return { skipped: 'no engine with runsc registered as docs/security.md says (set AIRLOCK_BENCH_RUNSC_SOCKET)' };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const image = process.env.AIRLOCK_IMAGE || 'airlock/sandbox:latest';
  const runcDocker = new Docker({ socketPath: DEFAULT_SOCKET });
  try {
    await runcDocker.getImage(image).inspect();
  } catch (err) {
    return { skipped: `no image ${image} on the default engine (airlock image build): ${(err as Error).message}` };
  }
  const e = await engineWithRunsc();
  if ('skipped' in e) return e;
  const runscDocker = new Docker({ socketPath: e.socket });
  try {
    await runscDocker.getImage(image).inspect();
  } catch {
    const res = await runscDocker.loadImage(await runcDocker.getImage(image).get());
    await new Promise<void>((resolve, reject) => res.on('end', resolve).on('error', reject).resume());
  }
  const engines: Record<Rt, { docker: Docker; socket: string }> = {
    runc: { docker: runcDocker, socket: DEFAULT_SOCKET },
    runsc: { docker: runscDocker, socket: e.socket },
  };
  const RTS: Rt[] = ['runc', 'runsc'];
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-gvisor-'));
  const owner = `airlock-bench-${randomUUID().slice(0, 8)}`;
  const signal = new AbortController().signal;
  const liveAt = new Map<string, number>();
  const hooks = { onSessionLive: (s: { sessionId: string }) => void liveAt.set(s.sessionId, nowMs()) };
  const turn = (m: SessionManager, sessionId: string) =>
    m.runTurn({ userId: 1, sessionId, turnId: randomUUID(), prompt: 'ping', signal, onEvent: () => undefined });
  const samples = new Map<string, number[]>();
  const add = (rt: Rt, what: string, ms: number) => {
    const k = `${rt}|${what}`;
    if (!samples.has(k)) samples.set(k, []);
    samples.get(k)!.push(ms);
  };
  const managers: SessionManager[] = [];
  const config = (rt: Rt, name: string, pool: string) =>
    loadConfig({
      AIRLOCK_DATA_DIR: join(dir, name),
      AIRLOCK_IMAGE: image,
      AIRLOCK_POOL_SIZE: pool,
      AIRLOCK_MAX_SESSIONS: '100',
      AIRLOCK_SANDBOX_RUNTIME: rt,
      AIRLOCK_DOCKER_SOCKET: engines[rt].socket,
    });
  try {
    // Baseline: a hardened `docker run` → "ready" under each runtime.
    for (let i = 0; i < N_COLD; i++) {
      for (const rt of RTS) {
        const d = join(dir, 'run', `${rt}-${i}`);
        mkdirSync(d, { recursive: true });
        const t0 = nowMs();
        const c = await engines[rt].docker.createContainer({
          Image: image,
          Entrypoint: ['/usr/local/bin/node', '-e', 'console.log("ready")'],
          Labels: { 'airlock.owner': owner },
          NetworkDisabled: true,
          HostConfig: sandboxHostConfig(config(rt, 'cfg', '0').sandbox, [
            { Type: 'bind', Source: d, Target: '/run/airlock', ReadOnly: false },
          ]),
        });
        await startUntilReady(c);
        add(rt, 'hardened', nowMs() - t0);
        await c.remove({ force: true });
      }
    }

    // Cold session start (no pool), to session ready and to the end of its first turn.
    const cold = new Map<Rt, SessionManager>();
    for (const rt of RTS) {
      const m = new SessionManager({
        config: config(rt, `cold-${rt}`, '0'),
        docker: engines[rt].docker,
        log: silentLogger(),
        owner,
        hooks,
      });
      managers.push(m);
      await m.start();
      cold.set(rt, m);
    }
    for (let i = 0; i < N_COLD; i++) {
      for (const rt of RTS) {
        const m = cold.get(rt)!;
        const id = `cold-${rt}-${i}`;
        const t0 = nowMs();
        const r = await turn(m, id);
        if (r.stop_reason !== 'end_turn') throw new Error(`cold turn (${rt}) ${r.stop_reason} ${r.error?.code ?? ''}`);
        add(rt, 'cold', nowMs() - t0);
        add(rt, 'cold_ready', liveAt.get(id)! - t0);
        await m.kill(id);
      }
    }

    // Warm prompts, alternating between one live session of each.
    for (const m of cold.values()) await turn(m, 'warm');
    for (let i = 0; i < N_WARM; i++) {
      for (const rt of RTS) {
        const t0 = nowMs();
        await turn(cold.get(rt)!, 'warm');
        add(rt, 'warm', nowMs() - t0);
      }
    }
    for (const m of cold.values()) await m.close({ removeContainers: true });

    // runc's pool claim (what a runc user waits for; runsc has no pool).
    const pool = new SessionManager({
      config: config('runc', 'pool-runc', '1'),
      docker: runcDocker,
      log: silentLogger(),
      owner,
      hooks,
    });
    managers.push(pool);
    await pool.start();
    for (let i = 0; i < N_COLD; i++) {
      await pool.poolReady();
      const t0 = nowMs();
      const r = await turn(pool, `pool-${i}`);
      if (r.stop_reason !== 'end_turn') throw new Error(`pool turn ${r.stop_reason}`);
      add('runc', 'pool', nowMs() - t0);
      await pool.kill(`pool-${i}`);
    }
    await pool.close({ removeContainers: true });

    const st = (rt: Rt, what: string) => stats(samples.get(`${rt}|${what}`) ?? []);
    const WHAT: [string, string][] = [
      ['hardened', 'hardened docker run → "ready"'],
      ['cold_ready', 'cold session start → session ready'],
      ['cold', 'cold session start → first turn done'],
      ['pool', 'pool claim → first turn done (runc only)'],
      ['warm', 'warm prompt round trip (control socket)'],
    ];
    const rows: BenchResult['rows'] = [];
    for (const [key, what] of WHAT) {
      for (const rt of RTS) {
        const s = st(rt, key);
        if (s.n) rows.push({ what, runtime: rt, n: s.n, p50_ms: s.p50, p99_ms: s.p99 });
      }
    }
    const ratio = (a: number, b: number) => round(a / b, 3);
    return {
      name: 'gvisor',
      rows,
      ratios: {
        runsc_vs_runc_hardened_run_p50: ratio(st('runsc', 'hardened').p50, st('runc', 'hardened').p50),
        runsc_vs_runc_cold_start_p50: ratio(st('runsc', 'cold').p50, st('runc', 'cold').p50),
        runsc_vs_runc_cold_ready_p50: ratio(st('runsc', 'cold_ready').p50, st('runc', 'cold_ready').p50),
        runsc_vs_runc_warm_turn_p50: ratio(st('runsc', 'warm').p50, st('runc', 'warm').p50),
        runsc_vs_runc_warm_turn_p99: ratio(st('runsc', 'warm').p99, st('runc', 'warm').p99),
        runsc_cold_vs_runc_pool_p50: ratio(st('runsc', 'cold').p50, st('runc', 'pool').p50),
      },
      notes: `image ${image}; runsc engine ${engines.runsc.socket}; runsc registered with --network=none --host-uds=all (ptrace platform). Under runsc the pool is off, so a runsc session's first turn waits for the cold start.`,
    };
  } finally {
    for (const m of managers) await m.close({ removeContainers: true }).catch(() => undefined);
    for (const rt of RTS) {
      const left = await engines[rt].docker
        .listContainers({ all: true, filters: { label: [`airlock.owner=${owner}`] } })
        .catch(() => []);
      await Promise.all(
        left.map((c) =>
          engines[rt].docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => undefined),
        ),
      );
    }
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}
