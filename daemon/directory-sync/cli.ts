import { AppError, type Config } from '../../core/index.js';
import { createOrGetRunningJob, jobView, syncConnection } from '../../web/index.js';
import { SqliteSessionStore } from '../../web/index.js';
import { openBase } from '../context.js';
import { recoverStaleJobs } from './job-owner.js';
import { runDirectorySync } from './runner.js';

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
 * `airlock sync-directory`: create a manual job (unless one is running for the connection,
 * which is then reported and nothing else happens) and run it inline with a progress bar.
 * Returns the exit code: 0 succeeded, 1 failed or already running.
 */
export async function syncDirectoryCli(config: Readonly<Config>, opts: SyncDirectoryCliOptions = {}): Promise<number> {
  const base = await openBase(config);
  const out = opts.out ?? process.stderr;
  try {
    const conn = syncConnection(base.db, opts.provider);
    // A job whose process is gone (a crashed CLI or daemon) must not block this one.
    const stale = recoverStaleJobs(base.db, conn.id);
    if (stale) out.write(`airlock: marked ${stale} directory-sync job(s) failed whose process had stopped\n`);
    const { job, created } = createOrGetRunningJob(base.db, conn.id, 'manual', null);
    if (!created) {
      const by = job.owner_pid != null ? `, pid ${job.owner_pid} on ${job.owner_host}` : '';
      if (opts.json) process.stdout.write(JSON.stringify({ job: jobView(job), created: false }) + '\n');
      else out.write(`airlock: a directory sync is already running for ${conn.provider} (job ${job.id}, ${job.status}${by})\n`);
      return 1;
    }
    const done = await runDirectorySync({ ...base, sessions: new SqliteSessionStore(base.db) }, job.id, progressPrinter(out));
    const view = jobView(done);
    if (opts.json) process.stdout.write(JSON.stringify({ job: view, created: true }) + '\n');
    else if (done.status === 'succeeded') {
      const r = view.result as Record<string, number>;
      process.stdout.write(
        `sync ${job.id} succeeded in ${r.duration_ms} ms: users +${r.users_created} ~${r.users_updated} -${r.users_deactivated}, ` +
          `groups +${r.groups_created} ~${r.groups_updated} -${r.groups_deleted}, memberships +${r.memberships_added} -${r.memberships_removed}, ` +
          `teams ${r.teams_updated}, rows written ${r.rows_written}\n`,
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
    base.db.close();
  }
}
