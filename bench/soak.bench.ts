import { readlinkSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { createDocker } from '../daemon/runtime/index.js';
import { renderChartPng } from '../extensions/rasterize.js';
import { ensureTestImage } from '../test/docker/helpers.js';
import { ownedContainers, procFigures, startRig } from '../test/helpers/load-rig.js';
import { LoadUsers, summarize } from '../test/helpers/load-users.js';
import { nowMs, type BenchResult } from './lib.js';

/**
 * Soak (docs/capacity.md "Soak"): moderate load on one `airlock serve` child process for
 * AIRLOCK_SOAK_MIN minutes (default 30), the daemon's RSS, open fds and sockets sampled every
 * AIRLOCK_SOAK_SAMPLE_S seconds (default 10). After a warm-up (the first sixth of the run, at
 * least a minute) each later one-minute mean must stay within ±10 % of the minute that ends the
 * warm-up (single samples swing with the streams in flight at that instant; their deviation is
 * reported beside it). At the
 * end (users stopped, their chats deleted, the daemon stopped): no container of its owner, no mount
 * and no loop device under its data folder. Samples → bench/results/soak.json, curves →
 * docs/capacity-soak.png.
 */
const MINUTES = Number(process.env.AIRLOCK_SOAK_MIN ?? 30);
const SAMPLE_S = Number(process.env.AIRLOCK_SOAK_SAMPLE_S ?? 10);
const USERS = Number(process.env.AIRLOCK_SOAK_USERS ?? 4);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Sample {
  t_s: number;
  rss_mib: number;
  /** V8 heap in use (the daemon's /metrics): what a leak of JavaScript objects grows. */
  heap_mib: number;
  fds: number;
  sockets: number;
  live_sandboxes: number;
  turns: number;
}

/** The daemon's V8 heap in use, MiB, from its Prometheus metrics. */
async function heapUsedMib(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^airlock_process_nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(text);
  if (!m) throw new Error('the daemon reports no airlock_process_nodejs_heap_size_used_bytes');
  return Math.round((Number(m[1]) / 2 ** 20) * 10) / 10;
}

function sockets(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/** Each sample's one-minute mean (the samples of the minute ending at it). */
function rolling(samples: Sample[], f: (s: Sample) => number, perMinute: number): number[] {
  return samples.map((_, i) => {
    const w = samples.slice(Math.max(0, i - perMinute + 1), i + 1);
    return w.reduce((a, s) => a + f(s), 0) / w.length;
  });
}

async function draw(samples: Sample[], warm: number, perMinute: number): Promise<void> {
  const series = (f: (s: Sample) => number) => {
    const r = rolling(samples, f, perMinute);
    return r.map((v) => Math.round((v / r[warm]) * 1000) / 10);
  };
  const base = samples[warm];
  const png = await renderChartPng({
    type: 'line',
    title: `Soak: daemon RSS, open fds and V8 heap (one-minute means), % of the minute ending the warm-up (RSS ${base.rss_mib} MiB, ${base.fds} fds then)`,
    labels: samples.map((s) => `${Math.round(s.t_s / 60)} min`),
    datasets: [
      { label: 'daemon RSS', data: series((s) => s.rss_mib), border_color: '#1f77b4', color: '#1f77b4' },
      { label: 'open fds', data: series((s) => s.fds), border_color: '#ff7f0e', color: '#ff7f0e' },
      { label: 'V8 heap in use', data: series((s) => s.heap_mib), border_color: '#2ca02c', color: '#2ca02c' },
      { label: '+10 %', data: samples.map(() => 110), border_color: '#999999', color: '#999999' },
      { label: '−10 %', data: samples.map(() => 90), border_color: '#999999', color: '#999999' },
    ],
    y_axis: { title: '% of the minute ending the warm-up', min: 50, max: 150 },
    x_axis: { title: 'time under load' },
    width: 1000,
    height: 450,
  });
  writeFileSync(join(ROOT, 'docs', 'capacity-soak.png'), png);
}

export async function run(): Promise<BenchResult> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: 'unused' } }) as unknown as Docker;
  await docker.ping();
  const image = await ensureTestImage(docker);
  const rig = await startRig({ image, nodes: 1, users: USERS, modelDelayMs: 300 });
  const n = rig.nodes[0];
  const load = new LoadUsers(rig, {
    turnsPerChat: 6,
    thinkMs: [2000, 5000],
    toolShare: 0.2,
    mailShare: 0.1,
    boundMs: 180_000,
  });
  const samples: Sample[] = [];
  const t0 = nowMs();
  try {
    load.setActive(USERS);
    while (nowMs() - t0 < MINUTES * 60_000) {
      await new Promise((r) => setTimeout(r, SAMPLE_S * 1000));
      const pid = n.pid()!;
      const f = procFigures(pid);
      samples.push({
        t_s: Math.round((nowMs() - t0) / 1000),
        rss_mib: Math.round((f.rss / 2 ** 20) * 10) / 10,
        heap_mib: await heapUsedMib(n.url),
        fds: f.fds,
        sockets: sockets(pid),
        live_sandboxes: (await ownedContainers(docker, n.owner, true)).length,
        turns: load.records.length,
      });
    }
    await load.stop();
    await new Promise((r) => setTimeout(r, 5000)); // the deleted chats' sandboxes go
    const idle = procFigures(n.pid()!);
    const left = await rig.close(docker);
    const warm = Math.max(1, Math.min(samples.length - 1, Math.ceil(Math.max(60, (MINUTES * 60) / 6) / SAMPLE_S) - 1));
    const base = samples[warm];
    const after = samples.slice(warm);
    const dev = (f: (s: Sample) => number) =>
      Math.round(Math.max(...after.map((s) => Math.abs(f(s) / f(base) - 1))) * 1000) / 10;
    const perMinute = Math.max(1, Math.round(60 / SAMPLE_S));
    const devMinute = (f: (s: Sample) => number) => {
      const r = rolling(samples, f, perMinute);
      const worst = Math.max(...r.slice(warm + perMinute).map((v) => Math.abs(v / r[warm] - 1)));
      return Math.round(worst * 1000) / 10;
    };
    const s = summarize(load.records);
    writeFileSync(
      join(ROOT, 'bench', 'results', 'soak.json'),
      JSON.stringify({ minutes: MINUTES, sample_s: SAMPLE_S, users: USERS, warmup_sample: warm, samples }, null, 2),
    );
    await draw(samples, warm, perMinute);
    return {
      name: 'soak-summary',
      rows: [
        {
          what: 'daemon RSS MiB after warm-up / at the end / max deviation %',
          value: `${base.rss_mib} / ${samples.at(-1)!.rss_mib} / ${dev((x) => x.rss_mib)}`,
        },
        {
          what: 'daemon open fds after warm-up / at the end / max deviation %',
          value: `${base.fds} / ${samples.at(-1)!.fds} / ${dev((x) => x.fds)}`,
        },
        {
          what: 'one-minute means: max deviation % from the minute ending the warm-up, RSS / fds / V8 heap',
          value: `${devMinute((x) => x.rss_mib)} / ${devMinute((x) => x.fds)} / ${devMinute((x) => x.heap_mib)}`,
        },
        {
          what: 'V8 heap in use MiB after warm-up / at the end',
          value: `${base.heap_mib} / ${samples.at(-1)!.heap_mib}`,
        },
        {
          what: 'daemon sockets after warm-up / at the end / idle after the users stopped',
          value: `${base.sockets} / ${samples.at(-1)!.sockets} / fds ${idle.fds}`,
        },
        {
          what: 'turns / done / hung / errors',
          value: `${s.turns} / ${s.done} / ${s.hung} / ${JSON.stringify(s.errors)}`,
        },
        {
          what: 'left after stop: containers / mounts / loop devices',
          value: `${left.containers} / ${left.mounts.length} / ${left.loops}`,
        },
      ],
      ratios: {
        rss_max_dev_pct: dev((x) => x.rss_mib),
        fds_max_dev_pct: dev((x) => x.fds),
        rss_minute_max_dev_pct: devMinute((x) => x.rss_mib),
        fds_minute_max_dev_pct: devMinute((x) => x.fds),
        heap_minute_max_dev_pct: devMinute((x) => x.heap_mib),
      },
      notes: `${MINUTES} min, ${USERS} users (think 2-5 s, 6 turns a chat then deleted), model latency 300 ms, sampled every ${SAMPLE_S} s; the curves: docs/capacity-soak.png`,
    };
  } catch (err) {
    await load.stop();
    await rig.close(docker);
    throw err;
  }
}
