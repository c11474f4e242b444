/**
 * Sandbox runtime: cold session start vs a `docker run` of the same image printing "ready" (same
 * run; bare, and with the sandbox's hardening), session start from the pool, and warm prompt
 * round trips over the control socket.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { createDocker, buildSandboxImage, sandboxHostConfig, SessionManager } from '../daemon/runtime/index.js';
import { loadConfig, silentLogger } from '../core/index.js';
import { nowMs, stats, type BenchResult } from './lib.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TAG = 'airlock/sandbox:bench';
const N_COLD = 8;
const N_WARM = 300;

function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((m) => m && m.startsWith(dir + '/'));
  for (const m of mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: TAG } });
  try {
    await docker.ping();
  } catch (err) {
    return { skipped: `no Docker engine: ${(err as Error).message}` };
  }
  await buildSandboxImage({ docker, tag: TAG, root: ROOT, log: silentLogger() });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-rt-'));
  const owner = `airlock-bench-${randomUUID().slice(0, 8)}`;
  const signal = new AbortController().signal;
  const turn = (m: SessionManager, sessionId: string) => m.runTurn({ userId: 1, sessionId, turnId: randomUUID(), prompt: 'ping', signal, onEvent: () => undefined });
  try {
    // Baselines, interleaved so machine load falls on both alike: a bare `docker run` of the same
    // image with node printing "ready", and the same run with the sandbox's full hardening
    // (sandboxHostConfig: caps, read-only root, tmpfs, limits, init) and a bind mount like the
    // session's /run/airlock, so the ratio shows what our start adds beyond Docker's own cost.
    const benchCfg = loadConfig({ AIRLOCK_DATA_DIR: join(dir, 'cfg'), AIRLOCK_IMAGE: TAG });
    const runDir = join(dir, 'run');
    mkdirSync(runDir);
    const dockerRun = async (HostConfig: Docker.HostConfig): Promise<number> => {
      const t0 = nowMs();
      const c = await docker.createContainer({
        Image: TAG,
        Entrypoint: ['/usr/local/bin/node', '-e', 'console.log("ready")'],
        Labels: { 'airlock.owner': owner },
        NetworkDisabled: true,
        HostConfig,
      });
      const stream = await c.attach({ stream: true, stdout: true, stderr: true });
      const ready = new Promise<void>((resolve) => {
        let buf = '';
        stream.on('data', (d: Buffer) => {
          buf += d.toString();
          if (buf.includes('ready')) resolve();
        });
      });
      await c.start();
      await ready;
      const ms = nowMs() - t0;
      await c.remove({ force: true });
      return ms;
    };
    const bare: number[] = [];
    const hardened: number[] = [];
    for (let i = 0; i < N_COLD; i++) {
      bare.push(await dockerRun({ NetworkMode: 'none', Init: true }));
      hardened.push(await dockerRun(sandboxHostConfig(benchCfg.sandbox, [{ Type: 'bind', Source: runDir, Target: '/run/airlock', ReadOnly: false }])));
    }

    // Cold session start: no pool; first prompt of a new session until its turn ends.
    const coldCfg = loadConfig({ AIRLOCK_DATA_DIR: join(dir, 'cold'), AIRLOCK_IMAGE: TAG, AIRLOCK_POOL_SIZE: '0', AIRLOCK_MAX_SESSIONS: '100' });
    const cold = new SessionManager({ config: coldCfg, docker, log: silentLogger(), owner });
    await cold.start();
    const coldMs: number[] = [];
    for (let i = 0; i < N_COLD; i++) {
      const t0 = nowMs();
      const r = await turn(cold, `cold-${i}`);
      if (r.stop_reason !== 'end_turn') throw new Error(`cold turn ${r.stop_reason}`);
      coldMs.push(nowMs() - t0);
      await cold.kill(`cold-${i}`);
    }
    await cold.close({ removeContainers: true });

    // Pool: a pre-started container claimed by a new session.
    const poolCfg = loadConfig({ AIRLOCK_DATA_DIR: join(dir, 'pool'), AIRLOCK_IMAGE: TAG, AIRLOCK_POOL_SIZE: '1', AIRLOCK_MAX_SESSIONS: '100' });
    const pool = new SessionManager({ config: poolCfg, docker, log: silentLogger(), owner });
    await pool.start();
    const poolMs: number[] = [];
    for (let i = 0; i < N_COLD; i++) {
      await pool.poolReady();
      const t0 = nowMs();
      const r = await turn(pool, `pool-${i}`);
      if (r.stop_reason !== 'end_turn') throw new Error(`pool turn ${r.stop_reason}`);
      poolMs.push(nowMs() - t0);
      await pool.kill(`pool-${i}`);
    }

    // Warm prompts in one live session.
    await pool.poolReady();
    await turn(pool, 'warm');
    const warm: number[] = [];
    for (let i = 0; i < N_WARM; i++) {
      const t0 = nowMs();
      await turn(pool, 'warm');
      warm.push(nowMs() - t0);
    }
    await pool.close({ removeContainers: true });

    const b = stats(bare);
    const h = stats(hardened);
    const c = stats(coldMs);
    const p = stats(poolMs);
    const w = stats(warm);
    return {
      name: 'runtime',
      rows: [
        { what: 'bare docker run → "ready" (baseline)', n: b.n, p50_ms: b.p50, p99_ms: b.p99 },
        { what: 'hardened docker run → "ready" (baseline)', n: h.n, p50_ms: h.p50, p99_ms: h.p99 },
        { what: 'cold session start → first turn done', n: c.n, p50_ms: c.p50, p99_ms: c.p99 },
        { what: 'pool claim → first turn done', n: p.n, p50_ms: p.p50, p99_ms: p.p99 },
        { what: 'warm prompt round trip (control socket)', n: w.n, p50_ms: w.p50, p99_ms: w.p99 },
      ],
      ratios: {
        cold_start_vs_bare_run_p50: c.p50 / b.p50,
        cold_start_vs_hardened_run_p50: c.p50 / h.p50,
        hardened_vs_bare_run_p50: h.p50 / b.p50,
        pool_start_vs_bare_run_p50: p.p50 / b.p50,
        pool_vs_cold_p50: p.p50 / c.p50,
      },
      notes: 'cold/pool include profile write, supervisor start message, agent child spawn (node) and one echo turn; the baseline runs only start node (the hardened one with the sandbox HostConfig).',
    };
  } finally {
    const left = await docker.listContainers({ all: true, filters: { label: [`airlock.owner=${owner}`] } });
    await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    unmountUnder(dir);
    spawnSync('umount', ['-l', join(dir, 'pool', 'sandboxes')]);
    rmSync(dir, { recursive: true, force: true });
  }
}
