import type Docker from 'dockerode';
import { createDocker } from '../daemon/runtime/index.js';
import { ensureTestImage } from '../test/docker/helpers.js';
import { ownedContainers, procFigures, pssPerSession, startRig, type Rig } from '../test/helpers/load-rig.js';
import { LoadUsers, summarize } from '../test/helpers/load-users.js';
import { pgUnavailable } from '../test/helpers/postgres.js';
import { nowMs, type BenchResult } from './lib.js';

/**
 * How many people can chat at once (docs/capacity.md): simulated users through the real web API
 * of real `airlock serve` child processes with real sandboxes, a scripted model with a set latency,
 * ramped in steps; per step turns/s, first event and whole turn p50/p99, errors by code, live
 * sandboxes, each daemon's CPU and RSS, PSS per session sandbox. One node on SQLite, then two
 * nodes on one PostgreSQL. The answer: the most users with p99 first event ≤ 1 s and no error.
 * AIRLOCK_LOAD_LEVELS (default 2,4,6,8,12,16), AIRLOCK_LOAD_STEP_S (default 30),
 * AIRLOCK_LOAD_MODEL_MS (default 300), AIRLOCK_LOAD_NODES (default 1,2). The workload:
 * AIRLOCK_LOAD_WORKLOAD `hammer` (default: think 1–3 s between prompts, the daemon's own session
 * cap) or `realistic` (think 20–40 s, AIRLOCK_MAX_SESSIONS 400); AIRLOCK_LOAD_THINK_MS (`min-max`)
 * and AIRLOCK_LOAD_MAX_SESSIONS override either. Both keep 6-turn chats, 20 % tool calls, 10 % mails.
 * AIRLOCK_LOAD_ARRIVAL_S (default 0): a step's new users arrive spread evenly over that many
 * seconds instead of all at once (people do not all open a chat in the same second).
 */
const LEVELS = (process.env.AIRLOCK_LOAD_LEVELS ?? '2,4,6,8,12,16').split(',').map(Number);
const STEP_S = Number(process.env.AIRLOCK_LOAD_STEP_S ?? 30);
const MODEL_MS = Number(process.env.AIRLOCK_LOAD_MODEL_MS ?? 300);
const NODES = (process.env.AIRLOCK_LOAD_NODES ?? '1,2').split(',').map(Number) as (1 | 2)[];
/** The two workloads of docs/capacity.md: think time between a user's prompts and the session cap. */
const WORKLOADS: Record<string, { thinkMs: [number, number]; maxSessions?: string }> = {
  hammer: { thinkMs: [1000, 3000] },
  realistic: { thinkMs: [20_000, 40_000], maxSessions: '400' },
};
const WORKLOAD_NAME = process.env.AIRLOCK_LOAD_WORKLOAD ?? 'hammer';
const WORKLOAD = WORKLOADS[WORKLOAD_NAME];
if (!WORKLOAD)
  throw new Error(`AIRLOCK_LOAD_WORKLOAD must be one of ${Object.keys(WORKLOADS).join(', ')}, not "${WORKLOAD_NAME}"`);
/** `min-max` in milliseconds, e.g. 20000-40000. */
function thinkFromEnv(v: string | undefined): [number, number] | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+)-(\d+)$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2]))
    throw new Error(`AIRLOCK_LOAD_THINK_MS must be min-max in milliseconds (e.g. 20000-40000), not "${v}"`);
  return [Number(m[1]), Number(m[2])];
}
const MAX_SESSIONS = process.env.AIRLOCK_LOAD_MAX_SESSIONS ?? WORKLOAD.maxSessions;
export const USER_OPTIONS = {
  turnsPerChat: 6,
  thinkMs: thinkFromEnv(process.env.AIRLOCK_LOAD_THINK_MS) ?? WORKLOAD.thinkMs,
  toolShare: 0.2,
  mailShare: 0.1,
  boundMs: 180_000,
  arrivalMs: Number(process.env.AIRLOCK_LOAD_ARRIVAL_S ?? 0) * 1000,
};

export type StepRow = Record<string, string | number>;

/** One step of the ramp: `users` active for `seconds`, then the figures of the turns sent meanwhile. */
export async function step(
  docker: Docker,
  rig: Rig,
  load: LoadUsers,
  users: number,
  seconds: number,
  label: string,
): Promise<{ ok: boolean; okLater: boolean; firstP99Later: number; row: StepRow }> {
  load.setActive(users);
  const before = rig.nodes.map((n) => procFigures(n.pid()!));
  const t0 = nowMs();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const t1 = nowMs();
  const after = rig.nodes.map((n) => procFigures(n.pid()!));
  const s = summarize(load.records, t0, t1);
  const live = (await Promise.all(rig.nodes.map((n) => ownedContainers(docker, n.owner, true)))).flat().length;
  const pss = await pssPerSession(
    docker,
    rig.nodes.map((n) => n.owner),
  );
  const clean = Object.keys(s.errors).length === 0 && s.hung === 0;
  return {
    ok: clean && s.firstP99 <= 1000,
    okLater: clean && s.firstP99Later <= 1000,
    firstP99Later: s.firstP99Later,
    row: {
      what: label,
      users,
      turns: s.turns,
      turns_per_s: s.turnsPerS,
      first_p50_ms: s.firstP50,
      first_p99_ms: s.firstP99,
      first_p99_new_chat_ms: s.firstP99NewChat,
      first_p99_later_ms: s.firstP99Later,
      turn_p50_ms: s.wholeP50,
      turn_p99_ms: s.wholeP99,
      errors:
        Object.entries(s.errors)
          .map(([k, v]) => `${k}:${v}`)
          .join(' ') || '0',
      live_sandboxes: live,
      daemon_cpu_pct: after.map((a, i) => Math.round(((a.cpuS - before[i].cpuS) / ((t1 - t0) / 1000)) * 100)).join('+'),
      daemon_rss_mib: after.map((a) => Math.round(a.rss / 2 ** 20)).join('+'),
      pss_per_session_mib: Math.round(pss.meanMiB * 10) / 10,
    },
  };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: 'unused' } }) as unknown as Docker;
  await docker.ping();
  const image = await ensureTestImage(docker);
  const rows: StepRow[] = [];
  const best: Record<string, number> = {};
  for (const nodes of NODES) {
    if (nodes === 2 && pgUnavailable()) continue;
    const rig = await startRig({
      image,
      nodes,
      users: Math.max(...LEVELS),
      modelDelayMs: MODEL_MS,
      env: MAX_SESSIONS ? { AIRLOCK_MAX_SESSIONS: MAX_SESSIONS } : undefined,
    });
    const load = new LoadUsers(rig, USER_OPTIONS);
    try {
      best[`node${nodes}`] = 0;
      best[`later${nodes}`] = 0;
      for (const users of LEVELS) {
        const {
          ok,
          okLater,
          firstP99Later,
          row: shown,
        } = await step(docker, rig, load, users, STEP_S, `${nodes} node${nodes > 1 ? 's' : ''}`);
        rows.push(shown);
        process.stderr.write(`load ${JSON.stringify(shown)}\n`);
        if (ok) best[`node${nodes}`] = users;
        if (okLater) best[`later${nodes}`] = users;
        if (firstP99Later > 3000 || (!okLater && users > best[`later${nodes}`] + 4)) break;
      }
    } finally {
      await load.stop();
      await rig.close(docker);
    }
    // Each user read its chats back after their turns (test/helpers/load-users.ts): what was missing.
    const f = load.findings;
    rows.push({
      what: `${nodes} node${nodes > 1 ? 's' : ''}: chats read back`,
      chats_checked: f.chatsChecked,
      lost: f.lost.length,
      context_gaps: f.contextGaps.length,
    });
    if (f.lost.length || f.contextGaps.length)
      process.stderr.write(`load findings ${JSON.stringify({ lost: f.lost, contextGaps: f.contextGaps })}\n`);
  }
  return {
    name: 'load',
    rows,
    ratios: {
      most_users_one_node: best.node1 ?? 0,
      most_users_two_nodes: best.node2 ?? 0,
      most_users_one_node_later_turns: best.later1 ?? 0,
      most_users_two_nodes_later_turns: best.later2 ?? 0,
    },
    notes: `workload ${WORKLOAD_NAME}${MAX_SESSIONS ? `, AIRLOCK_MAX_SESSIONS ${MAX_SESSIONS}` : ''}; each step ${STEP_S} s; model latency ${MODEL_MS} ms per call; ${USER_OPTIONS.turnsPerChat} turns a chat, think ${USER_OPTIONS.thinkMs.join('-')} ms, ${USER_OPTIONS.toolShare * 100}% tool, ${USER_OPTIONS.mailShare * 100}% mail; pool 4; "most users" = p99 first event ≤ 1 s, 0 errors (all turns; "later turns": a chat's turns after its first)`,
  };
}
