/**
 * The supervisor's start in a container, in two parts around the moment its modules load:
 * `launchFirst` reads its own small env and launches the idle agent child; `serve` builds the
 * Supervisor on that launch, listens and reports ready. Two entry points use them:
 * - main.ts (ESM): launchFirst, then import() the supervisor's bundle, then serve; so the two
 *   boots overlap when the supervisor's modules are evaluated at start;
 * - snapshot.ts: the supervisor's modules are already in the heap of its V8 startup snapshot, and
 *   the process runs launchFirst and serve at once (docs/runtime.md, "Cold start, step by step").
 *
 * Light on purpose (builtins, core/agent-launch.js, idle-child.js): main.ts loads it before the
 * supervisor.
 */
import { launchAgent, type LaunchedAgent } from '../core/agent-launch.js';
import { CHILD_UID } from '../core/sandbox-env.js';
import { agentCommand, idleChildLaunch, IDLE_CHILD_CWD } from './idle-child.js';
import type { Supervisor as SupervisorClass } from './supervisor.js';

type Log = (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** What the container's supervisor starts with: the child's uid, its command and its launch. */
export interface Boot {
  childUid: number;
  childCommand: string[];
  prestarted: LaunchedAgent;
  /** ms from this process's start to the launch (logged with `ready`). */
  launchedMs: number;
  log: Log;
}

function log(level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>): void {
  process.stderr.write(
    JSON.stringify({ time: new Date().toISOString(), level, name: 'supervisor', msg, ...(data ?? {}) }) + '\n',
  );
}

/** Reads AIRLOCK_SANDBOX_CHILD_UID (tests only; default 1001) and launches the idle agent child. */
export function launchFirst(): Boot {
  process.on('uncaughtException', (err) => {
    log('error', 'supervisor crashed', { err: err.message });
    process.exit(70);
  });
  const uidEnv = process.env.AIRLOCK_SANDBOX_CHILD_UID;
  delete process.env.AIRLOCK_SANDBOX_CHILD_UID;
  const childUid = uidEnv && /^\d+$/.test(uidEnv) ? Number(uidEnv) : CHILD_UID;
  if (childUid !== CHILD_UID) log('warn', 'agent child uid overridden (test only)', { childUid });
  const childCommand = agentCommand();
  const prestarted = launchAgent(
    idleChildLaunch({ command: childCommand, uid: childUid, gid: childUid, cwd: IDLE_CHILD_CWD }),
  );
  return { childUid, childCommand, prestarted, launchedMs: Math.round(performance.now()), log };
}

/** The Supervisor on the launched child: listen, take the child over, report ready. */
export async function serve(Supervisor: typeof SupervisorClass, boot: Boot): Promise<void> {
  const sup = new Supervisor({
    childUid: boot.childUid,
    childGid: boot.childUid,
    childCommand: boot.childCommand,
    prestarted: boot.prestarted,
    log: boot.log,
    endStrays: true,
  });
  process.on('SIGTERM', () => void sup.shutdown());
  process.on('SIGINT', () => void sup.shutdown());
  await sup.listen();
  // The idle agent child (launched first) is taken over now; a pool member or a cold start's
  // session then finds it booting or booted.
  sup.prestart();
  // The daemon waits for this line (and for the socket) before it calls the container ready.
  boot.log('info', 'ready', { uptime_ms: Math.round(performance.now()), agent_launched_ms: boot.launchedMs });
}
