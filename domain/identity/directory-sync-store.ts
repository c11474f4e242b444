import { sql } from 'kysely';
import { AppError } from '../../core/index.js';
import { logAction } from '../action-log.js';
import { inTransaction, nowIso, type Row, type Sql } from '../db/index.js';

/**
 * Directory-sync jobs (docs/rules.md#directory-sync-flow): their rows, from the request that
 * creates one to the run that claims, beats for and finishes it, and the recovery of the jobs
 * whose run is gone (daemon/directory-sync/job-owner.ts judges that; this module writes it).
 */

export type JobStatus = 'pending' | 'running' | 'succeeded' | 'failed';
export type JobTrigger = 'manual' | 'scheduled';

/** A job row; owner_* name the run that claimed it (random per run), its process and host; heartbeat_at its last beat. */
export type SyncJobRow = Row<'directory_sync_jobs'>;

export async function getJob(db: Sql, id: number): Promise<SyncJobRow> {
  const j = await db.selectFrom('directory_sync_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  if (!j) throw new AppError('ERR_SYNC_JOB_NOT_FOUND', 'no such directory-sync job');
  return j;
}

export function latestJob(db: Sql, connectionId: number): Promise<SyncJobRow | undefined> {
  return db
    .selectFrom('directory_sync_jobs')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * Create a job for the connection unless one is pending or running, in which case that one is
 * returned (`created: false`). The partial unique index directory_sync_jobs_one_running makes
 * this hold across processes (web app and CLI), not only inside this one.
 */
export async function createOrGetRunningJob(
  db: Sql,
  connectionId: number,
  trigger: JobTrigger,
  requestedBy: number | null,
): Promise<{ job: SyncJobRow; created: boolean }> {
  // Across every process and node: the insert either wins or meets the unfinished job's row
  // in the unique index, on both engines, without a lock of ours.
  for (let attempt = 0; attempt < 5; attempt++) {
    const job = await sql<SyncJobRow>`
      INSERT INTO directory_sync_jobs (connection_id, trigger, requested_by) VALUES (${connectionId}, ${trigger}, ${requestedBy})
      ON CONFLICT (connection_id) WHERE status IN ('pending','running') DO NOTHING
      RETURNING *`.execute(db);
    if (job.rows[0]) return { job: job.rows[0], created: true };
    const running = await db
      .selectFrom('directory_sync_jobs')
      .selectAll()
      .where('connection_id', '=', connectionId)
      .where('status', 'in', ['pending', 'running'])
      .executeTakeFirst();
    if (running) return { job: running, created: false };
    // It finished between the two statements: try again.
  }
  throw new AppError('ERR_INTERNAL', 'a directory sync of this connection kept starting and finishing; try again');
}

/**
 * Write the end of a directory-sync job into the action log once (`identity.directory_sync.finished`,
 * severity warning when it failed): its status, the result's counts and the error code, never
 * directory data. Idempotent: a job already logged is skipped. Returns whether it wrote a row.
 */
export async function logSyncFinished(db: Sql, jobId: number): Promise<boolean> {
  const j = await db.selectFrom('directory_sync_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
  if (!j || (j.status !== 'succeeded' && j.status !== 'failed')) return false;
  // The entry's data starts with its job id (written below), so a prefix match finds it on both engines.
  const done = await db
    .selectFrom('action_log')
    .select('id')
    .where('event', '=', 'identity.directory_sync.finished')
    .where('data', 'like', `{"job_id":${j.id},%`)
    .executeTakeFirst();
  if (done) return false;
  const result = j.result ? (JSON.parse(j.result) as Record<string, unknown>) : {};
  const counts = Object.fromEntries(Object.entries(result).filter(([, v]) => typeof v === 'number'));
  const error = j.error ? (JSON.parse(j.error) as { code?: string }) : null;
  await logAction(db, {
    event: 'identity.directory_sync.finished',
    severity: j.status === 'failed' ? 'warning' : 'info',
    actorId: j.requested_by,
    data: {
      job_id: j.id,
      connection_id: j.connection_id,
      trigger: j.trigger,
      status: j.status,
      ...counts,
      ...(error?.code ? { error_code: error.code } : {}),
    },
  });
  return true;
}

/** Whether the job row still exists (the web app stops watching a job that is gone). */
export async function jobExists(db: Sql, id: number): Promise<boolean> {
  return !!(await db.selectFrom('directory_sync_jobs').select('id').where('id', '=', id).executeTakeFirst());
}

/** Who runs a job: a random id per run, its process and host (daemon/directory-sync/job-owner.ts). */
export interface JobRunOwner {
  id: string;
  pid: number;
  host: string;
}

/** Claim a pending job for this run (status running, owner, first heartbeat). False: another run has it, or it is not pending. */
export async function claimJob(db: Sql, jobId: number, owner: JobRunOwner): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('directory_sync_jobs')
    .set({
      status: 'running',
      started_at: now,
      owner_id: owner.id,
      owner_pid: owner.pid,
      owner_host: owner.host,
      heartbeat_at: now,
    })
    .where('id', '=', jobId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * The job's row as long as it is still running for this owner: every write after the claim
 * requires that, so a run whose job another process failed as stale never overwrites it.
 */
const owned = (db: Sql, jobId: number, ownerId: string) =>
  db
    .updateTable('directory_sync_jobs')
    .where('id', '=', jobId)
    .where('status', '=', 'running')
    .where('owner_id', '=', ownerId);

/** The run is alive: a heartbeat, with the progress when given (JSON text). */
export async function beatJob(db: Sql, jobId: number, ownerId: string, progress?: string): Promise<void> {
  await owned(db, jobId, ownerId)
    .set({ heartbeat_at: nowIso(), ...(progress !== undefined ? { progress } : {}) })
    .execute();
}

/** Whether the job is still running for this owner. */
export async function ownsJob(db: Sql, jobId: number, ownerId: string): Promise<boolean> {
  return !!(await db
    .selectFrom('directory_sync_jobs')
    .select('id')
    .where('id', '=', jobId)
    .where('status', '=', 'running')
    .where('owner_id', '=', ownerId)
    .executeTakeFirst());
}

/** A sync of the connection starts now (its last_sync_started_at). */
export async function markSyncStarted(db: Sql, connectionId: number): Promise<void> {
  await db
    .updateTable('idp_connections')
    .set({ last_sync_started_at: nowIso() })
    .where('id', '=', connectionId)
    .execute();
}

/**
 * The job succeeded with `result`, and its connection's last sync finished and succeeded now;
 * in one transaction (the caller's: the runner's apply transaction).
 */
export async function markJobSucceeded(
  db: Sql,
  jobId: number,
  ownerId: string,
  connectionId: number,
  result: Record<string, unknown>,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const now = nowIso();
    await owned(trx, jobId, ownerId)
      .set({ status: 'succeeded', result: JSON.stringify(result), finished_at: now, progress: null })
      .execute();
    await trx
      .updateTable('idp_connections')
      .set({ last_sync_finished_at: now, last_sync_succeeded_at: now })
      .where('id', '=', connectionId)
      .execute();
  });
}

/**
 * The job failed with `error` (and its connection's last sync finished now), in one
 * transaction, if this owner still runs it. Returns whether it did.
 */
export async function markJobFailed(
  db: Sql,
  jobId: number,
  ownerId: string,
  connectionId: number,
  error: Record<string, unknown>,
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const now = nowIso();
    const mine = Number(
      (
        await owned(trx, jobId, ownerId)
          .set({ status: 'failed', error: JSON.stringify(error), finished_at: now })
          .executeTakeFirst()
      ).numUpdatedRows,
    );
    if (mine)
      await trx
        .updateTable('idp_connections')
        .set({ last_sync_finished_at: now })
        .where('id', '=', connectionId)
        .execute();
    return mine > 0;
  });
}

/** Add fields to the result of a job this owner finished (e.g. `sandboxes_ended`, known after the commit). */
export async function addToJobResult(
  db: Sql,
  jobId: number,
  ownerId: string,
  extra: Record<string, unknown>,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await trx
      .selectFrom('directory_sync_jobs')
      .select('result')
      .where('id', '=', jobId)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    if (!row?.result) return;
    const result = JSON.stringify({ ...(JSON.parse(row.result) as Record<string, unknown>), ...extra });
    await trx
      .updateTable('directory_sync_jobs')
      .set({ result })
      .where('id', '=', jobId)
      .where('owner_id', '=', ownerId)
      .execute();
  });
}

/** The pending and running jobs, of one connection or all. */
export async function unfinishedJobs(db: Sql, connectionId?: number): Promise<SyncJobRow[]> {
  let q = db.selectFrom('directory_sync_jobs').selectAll().where('status', 'in', ['pending', 'running']);
  if (connectionId !== undefined) q = q.where('connection_id', '=', connectionId);
  return q.execute();
}

/**
 * Fail a job with `error` only if its row is unchanged since `judged` was read (same status,
 * owner and heartbeat; IS NOT DISTINCT FROM: null-safe), so an owner that just finished or beat
 * wins. Returns whether it was failed.
 */
export async function failJobIfUnchanged(
  db: Sql,
  judged: SyncJobRow,
  error: Record<string, unknown>,
): Promise<boolean> {
  const r = await db
    .updateTable('directory_sync_jobs')
    .set({ status: 'failed', error: JSON.stringify(error), finished_at: nowIso() })
    .where('id', '=', judged.id)
    .where('status', '=', judged.status)
    .where('owner_id', 'is not distinct from', judged.owner_id)
    .where('heartbeat_at', 'is not distinct from', judged.heartbeat_at)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
