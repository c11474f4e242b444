/**
 * Container entry point (ENTRYPOINT of the sandbox image). Reads only its own small env:
 * AIRLOCK_SANDBOX_CHILD_UID (tests only; default 1001). Logs JSON lines to stderr.
 *
 * Its first act is to launch the idle agent child; only then does it load the supervisor (the
 * proxy, the protocol schemas), so the two boots overlap: in a 1-CPU sandbox that takes ~50 ms
 * off a cold start (docs/runtime.md, "Cold start, step by step"). So this file imports only the
 * light launch modules statically, and the supervisor with import().
 */
import { launchAgent } from '../core/agent-launch.js';
import { CHILD_UID } from '../core/sandbox-env.js';
import { agentCommand, idleChildLaunch, IDLE_CHILD_CWD } from './idle-child.js';

function log(level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>): void {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, name: 'supervisor', msg, ...(data ?? {}) }) + '\n');
}

process.on('uncaughtException', (err) => {
  log('error', 'supervisor crashed', { err: err.message });
  process.exit(70);
});
const uidEnv = process.env.AIRLOCK_SANDBOX_CHILD_UID;
delete process.env.AIRLOCK_SANDBOX_CHILD_UID;
const childUid = uidEnv && /^\d+$/.test(uidEnv) ? Number(uidEnv) : CHILD_UID;
if (childUid !== CHILD_UID) log('warn', 'agent child uid overridden (test only)', { childUid });

const childCommand = agentCommand();
const prestarted = launchAgent(idleChildLaunch({ command: childCommand, uid: childUid, gid: childUid, cwd: IDLE_CHILD_CWD }));

const { Supervisor } = await import('./supervisor.js');
const sup = new Supervisor({ childUid, childGid: childUid, childCommand, prestarted, log });
process.on('SIGTERM', () => void sup.shutdown());
process.on('SIGINT', () => void sup.shutdown());
await sup.listen();
// The idle agent child (launched above) is taken over now; a pool member or a cold start's
// session then finds it booting or booted.
sup.prestart();
// The daemon waits for this line (and for the socket) before it calls the container ready.
log('info', 'ready');
