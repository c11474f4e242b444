/**
 * Who runs a directory-sync job, and whether it still does. A run records its owner on the job
 * row when it claims it (a random owner id, the pid and the host name) and writes a heartbeat
 * while it runs; recovery fails only the unfinished jobs whose owner is gone or silent. The
 * web app (`serve`) and `airlock sync-directory` may share one database, so "a job is running"
 * must not be read as "this process runs it".
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Sql } from '../../domain/db/index.js';
import { failJobIfUnchanged, unfinishedJobs, type SyncJobRow } from '../../domain/identity/index.js';

/** How often a running job's owner writes `heartbeat_at`. */
export const JOB_HEARTBEAT_MS = 5_000;
/**
 * A running job whose heartbeat is older than this is taken for dead. Heartbeats cannot fire
 * while the one apply transaction runs (it is synchronous), so this is far above the longest
 * apply measured (about 1 s for 20 000 users and 100 000 memberships, bench/directory-sync.bench.ts).
 * On the owner's own host a dead pid is noticed at once; the window matters only for another
 * host or a reused pid.
 */
export const JOB_STALE_MS = 2 * 60_000;
/** A pending job is claimed in the same tick it is created; one older than this was left by a crash. */
export const PENDING_STALE_MS = 30_000;

export interface JobOwner {
  /** Random per run: "this run", even when a pid is reused. */
  id: string;
  pid: number;
  host: string;
}

/** Owner ids of the runs in progress in this process. */
const ownRuns = new Set<string>();

/** A new owner for one run in this process; `release()` when the run ends. */
export function newJobOwner(): JobOwner & { release(): void } {
  const owner = { id: randomUUID(), pid: process.pid, host: hostname() };
  ownRuns.add(owner.id);
  return { ...owner, release: () => void ownRuns.delete(owner.id) };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user. ESRCH: it is gone.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export type OwnerVerdict = { alive: true } | { alive: false; reason: string };

/** Whether the job's owner may still be running it, and if not, why. */
export function jobOwnerState(job: SyncJobRow, nowMs = Date.now()): OwnerVerdict {
  if (job.status === 'pending') {
    return nowMs - Date.parse(job.created_at) < PENDING_STALE_MS
      ? { alive: true }
      : { alive: false, reason: 'never started' };
  }
  if (job.status !== 'running') return { alive: false, reason: 'finished' };
  // Rows written before owners were recorded (or by hand) have none: nobody can finish them.
  if (!job.owner_id || !job.heartbeat_at) return { alive: false, reason: 'no owner recorded' };
  if (nowMs - Date.parse(job.heartbeat_at) > JOB_STALE_MS) return { alive: false, reason: 'no heartbeat' };
  if (job.owner_host !== hostname() || job.owner_pid == null) return { alive: true }; // another host: only the heartbeat tells
  // Our own pid: alive only if this process really runs it (a restarted daemon may get the pid of
  // the one that died, e.g. pid 1 in a container).
  if (job.owner_pid === process.pid)
    return ownRuns.has(job.owner_id) ? { alive: true } : { alive: false, reason: 'owner process restarted' };
  return pidAlive(job.owner_pid) ? { alive: true } : { alive: false, reason: 'owner process gone' };
}

/**
 * Fail the pending or running jobs (of one connection, or all) whose owner is gone or silent,
 * with `ERR_SYNC_INTERRUPTED`. Each row is failed only if it is unchanged since it was judged
 * (same status, owner and heartbeat), so an owner that just finished or beat wins. Jobs a live
 * process runs, here or elsewhere, are left alone. Returns how many were failed.
 */
export async function recoverStaleJobs(db: Sql, connectionId?: number): Promise<number> {
  const rows = await unfinishedJobs(db, connectionId);
  const now = Date.now();
  let n = 0;
  for (const j of rows) {
    const v = jobOwnerState(j, now);
    if (v.alive) continue;
    const error = {
      code: 'ERR_SYNC_INTERRUPTED',
      message: `the process running the job stopped (${v.reason})`,
      ...(j.owner_pid != null
        ? { owner_pid: j.owner_pid, owner_host: j.owner_host, last_heartbeat_at: j.heartbeat_at }
        : {}),
    };
    if (await failJobIfUnchanged(db, j, error)) n++;
  }
  return n;
}
