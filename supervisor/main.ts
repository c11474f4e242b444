/**
 * Container entry point (ENTRYPOINT of the sandbox image). Reads only its own small env:
 * AIRLOCK_SANDBOX_CHILD_UID (tests only; default 1001). Logs JSON lines to stderr.
 */
import { Supervisor } from './supervisor.js';
import { CHILD_UID } from '../core/sandbox-protocol.js';

function log(level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>): void {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, name: 'supervisor', msg, ...(data ?? {}) }) + '\n');
}

const uidEnv = process.env.AIRLOCK_SANDBOX_CHILD_UID;
delete process.env.AIRLOCK_SANDBOX_CHILD_UID;
const childUid = uidEnv && /^\d+$/.test(uidEnv) ? Number(uidEnv) : CHILD_UID;
if (childUid !== CHILD_UID) log('warn', 'agent child uid overridden (test only)', { childUid });

const sup = new Supervisor({ childUid, childGid: childUid, log });
process.on('SIGTERM', () => void sup.shutdown());
process.on('SIGINT', () => void sup.shutdown());
process.on('uncaughtException', (err) => {
  log('error', 'supervisor crashed', { err: err.message });
  process.exit(70);
});
await sup.listen();
// The agent child and its MCP servers start now, in parallel with whatever the daemon does next
// (claiming this container for a session, or keeping it in the pool).
sup.prestart();
// The daemon waits for this line (and for the socket) before it calls the container ready.
log('info', 'ready');
