import { join } from 'node:path';
import { AppError, isAppError, type Config } from '../../core/index.js';
import {
  createOrGetRunningJob,
  syncConnection,
  syncJobSummary,
  type SandboxControl,
} from '../../domain/identity/index.js';
import { openBase } from '../context.js';
import { CONTROL_SOCKET_NAME, controlRequest, KillUserReplySchema } from '../runtime/control-api.js';
import { recoverStaleJobs } from '../directory-sync/job-owner.js';
import { runDirectorySync } from '../directory-sync/runner.js';

export interface SyncDirectoryCliOptions {
  provider?: string;
  json?: boolean;
  /** Where the progress bar goes (stderr by default). */
  out?: NodeJS.WriteStream;
}

/** A one-line progress bar on a TTY; one line per phase otherwise. */
function progressPrinter(out: NodeJS.WriteStream): (phase: string, done: number, total?: number) => void {
  let lastPhase = '';
  return (phase, done, total) => {
    if (out.isTTY) {
      const width = 30;
      const frac = total ? Math.min(1, done / total) : 0;
      const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
      out.write(`\r${phase.padEnd(8)} [${bar}] ${done}${total ? `/${total}` : ''}   `);
      if (total && done >= total) out.write('\n');
    } else if (phase !== lastPhase || (total && done >= total)) {
      out.write(`${phase}: ${done}${total ? `/${total}` : ''}\n`);
    }
    lastPhase = phase;
  };
}

/**
 * The running daemon's sandboxes, reached over its operator control socket (`kill-user`), for the
 * users a CLI sync deactivated. When no daemon answers it says so once and tries no further:
 * a daemon that is not running has no live sandboxes it could end (see docs/identity.md for a
 * stopped daemon's containers).
 */
export function daemonSandboxControl(dataDir: string, out: NodeJS.WritableStream): SandboxControl {
  let unreachable = false;
  return {
    async killForUser(userId) {
      if (unreachable) return undefined;
      try {
        const r = await controlRequest(dataDir, { cmd: 'kill-user', userId }, undefined, KillUserReplySchema);
        if (r.killed) out.write(`ended ${r.killed} live sandbox(es) of deactivated user ${userId}\n`);
        return r.killed;
      } catch (err) {
        if (isAppError(err, 'ERR_DAEMON_NOT_RUNNING')) {
          unreachable = true;
          out.write(
            `airlock: no daemon answers on ${join(dataDir, CONTROL_SOCKET_NAME)} (not running, or running without a sandbox runtime): ` +
              'no live sandboxes of deactivated users were ended\n',
          );
          return undefined;
        }
        out.write(
          `airlock: could not end the live sandboxes of deactivated user ${userId}: ${(err as Error).message}${isAppError(err) ? ` (${err.code})` : ''}\n`,
        );
        throw err;
      }
    },
  };
}

/**
 * `airlock sync-directory`: create a manual job (unless one is running for the connection,
 * which is then reported and nothing else happens) and run it inline with a progress bar. Users
 * it deactivates lose their web sessions and, when the daemon runs, their live sandboxes.
 * Returns the exit code: 0 succeeded, 1 failed or already running.
 */
export async function syncDirectoryCli(config: Readonly<Config>, opts: SyncDirectoryCliOptions = {}): Promise<number> {
  const base = await openBase(config);
  const out = opts.out ?? process.stderr;
  try {
    const db = base.database.sql;
    const conn = await syncConnection(db, opts.provider);
    // A job whose process is gone (a crashed CLI or daemon) must not block this one.
    const stale = await recoverStaleJobs(db, conn.id);
    if (stale) out.write(`airlock: marked ${stale} directory-sync job(s) failed whose process had stopped\n`);
    const { job, created } = await createOrGetRunningJob(db, conn.id, 'manual', null);
    if (!created) {
      const by = job.owner_pid != null ? `, pid ${job.owner_pid} on ${job.owner_host}` : '';
      if (opts.json) process.stdout.write(JSON.stringify({ job: syncJobSummary(job), created: false }) + '\n');
      else
        out.write(
          `airlock: a directory sync is already running for ${conn.provider} (job ${job.id}, ${job.status}${by})\n`,
        );
      return 1;
    }
    // Deactivated users lose their web sessions (same database) and, through the running daemon,
    // their live sandboxes, as in `serve`.
    const sandboxes = daemonSandboxControl(config.dataDir, out);
    const done = await runDirectorySync({ config, db, log: base.log, sandboxes }, job.id, progressPrinter(out));
    const view = syncJobSummary(done);
    if (opts.json) process.stdout.write(JSON.stringify({ job: view, created: true }) + '\n');
    else if (done.status === 'succeeded') {
      const r = view.result as Record<string, number>;
      process.stdout.write(
        `sync ${job.id} succeeded in ${r.duration_ms} ms: users +${r.users_created} ~${r.users_updated} -${r.users_deactivated}, ` +
          `groups +${r.groups_created} ~${r.groups_updated} -${r.groups_deleted}, memberships +${r.memberships_added} -${r.memberships_removed}, ` +
          `teams ${r.teams_updated}, rows written ${r.rows_written}` +
          `${r.users_deactivated ? `, web sessions ended ${r.sessions_ended}` : ''}${r.sandboxes_ended !== undefined ? `, sandboxes ended ${r.sandboxes_ended}` : ''}\n`,
      );
    } else {
      const e = view.error as { code: string; message: string };
      out.write(`airlock: sync ${job.id} failed: ${e.message} (${e.code})\n`);
    }
    return done.status === 'succeeded' ? 0 : 1;
  } catch (err) {
    if (err instanceof AppError) {
      out.write(`airlock: ${err.message} (${err.code})\n`);
      return 1;
    }
    throw err;
  } finally {
    await base.database.close();
  }
}
