import type Docker from 'dockerode';
import { createDocker } from '../daemon/runtime/index.js';
import { ensureTestImage } from '../test/docker/helpers.js';
import { chaosCounts, playFaults, type Fault } from '../test/helpers/load-chaos.js';
import { startRig } from '../test/helpers/load-rig.js';
import { LoadUsers } from '../test/helpers/load-users.js';
import { pgUnavailable } from '../test/helpers/postgres.js';
import { USER_OPTIONS } from './load.bench.js';
import type { BenchResult } from './lib.js';

/**
 * Faults under load (docs/capacity.md "Chaos"): simulated users on real `airlock serve` child
 * processes while sandboxes are docker-killed, a daemon is SIGKILLed and restarted on its data
 * folder, PostgreSQL is restarted and a fleet node is lost. Counts: turns, ended with one done,
 * hung, lost from the history, context gaps, mails sent twice. AIRLOCK_CHAOS_USERS (default 6),
 * AIRLOCK_CHAOS_S (default 150 per run).
 */
const USERS = Number(process.env.AIRLOCK_CHAOS_USERS ?? 6);
const SECONDS = Number(process.env.AIRLOCK_CHAOS_S ?? 150);

function faults(nodes: 1 | 2): Fault[] {
  const f: Fault[] = [];
  for (let s = 15; s < SECONDS - 20; s += 20) f.push({ at_s: s, what: 'kill-sandbox' });
  if (nodes === 1) {
    f.push({ at_s: Math.round(SECONDS * 0.3), what: 'sigkill-daemon', node: 0 });
    f.push({ at_s: Math.round(SECONDS * 0.65), what: 'sigkill-daemon', node: 0 });
  } else {
    f.push({ at_s: Math.round(SECONDS * 0.25), what: 'restart-postgres', down_s: 3 });
    f.push({ at_s: Math.round(SECONDS * 0.45), what: 'lose-node', node: 1, down_s: 15 });
    f.push({ at_s: Math.round(SECONDS * 0.75), what: 'sigkill-daemon', node: 0 });
  }
  return f;
}

export async function run(): Promise<BenchResult> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: 'unused' } }) as unknown as Docker;
  await docker.ping();
  const image = await ensureTestImage(docker);
  const rows: Record<string, string | number>[] = [];
  const notes: string[] = [];
  for (const nodes of [1, 2] as const) {
    if (nodes === 2 && pgUnavailable()) continue;
    const rig = await startRig({ image, nodes, users: USERS, modelDelayMs: 300 });
    const load = new LoadUsers(rig, USER_OPTIONS);
    try {
      load.setActive(USERS);
      const log = await playFaults(docker, rig, faults(nodes), SECONDS);
      await load.stop();
      const { errors, details, ...counts } = chaosCounts(rig, load);
      rows.push({
        what: nodes === 1 ? '1 node (SQLite)' : '2 nodes (PostgreSQL)',
        users: USERS,
        seconds: SECONDS,
        ...counts,
        errors:
          Object.entries(errors)
            .map(([k, v]) => `${k}:${v}`)
            .join(' ') || '0',
      });
      notes.push(`${nodes} node(s): ${log.join('; ')}; ${JSON.stringify(details)}`);
      process.stderr.write(`chaos ${JSON.stringify(rows.at(-1))}\n${notes.at(-1)}\n`);
    } finally {
      await load.stop();
      await rig.close(docker);
    }
  }
  return { name: 'chaos', rows, ratios: {}, notes: notes.join('\n  ') };
}
