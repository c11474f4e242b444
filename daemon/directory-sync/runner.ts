import {
  AppError,
  atRestEncryptor,
  toAppError,
  type Encryptor,
  type Config,
  type Logger,
  type Metrics,
} from '../../core/index.js';
import { logAction } from '../../domain/action-log.js';
import { inTransaction, type Sql } from '../../domain/db/index.js';
import {
  addToJobResult,
  beatJob,
  claimJob,
  decryptServiceAccount,
  getConnection,
  getJob,
  hasGroupSync,
  markJobFailed,
  markJobSucceeded,
  markSyncStarted,
  ownsJob,
  type DirectorySyncService,
  type SandboxControl,
  type SyncJobRow,
} from '../../domain/identity/index.js';
import { deleteUserWebSessions } from '../../domain/web-sessions.js';
import { DirectoryClient, type DirectoryClientOptions } from './google-client.js';
import { JOB_HEARTBEAT_MS, newJobOwner, recoverStaleJobs } from './job-owner.js';
import { applyLinkedTeams, applySnapshot, fetchDirectory, type Progress, type TeamsResult } from './sync.js';

export interface SyncRunnerDeps {
  config: Readonly<Config>;
  db: Sql;
  log: Logger;
  /** The install's at-rest encryptor (serve hands its one in; the CLI builds it from the config). */
  encryptor?: Encryptor;
  /**
   * Optional: stops a deactivated user's live sandboxes (in `serve` the session manager; in the
   * CLI the running daemon over its control socket); its optional policyChanged hook is called
   * for users whose stored policy changed (neither of those implements it).
   */
  sandboxes?: SandboxControl;
  /** Client tuning (backoff), for tests and the bench. */
  client?: Partial<Pick<DirectoryClientOptions, 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs'>>;
  /** Counts finished jobs by status (airlock_sync_jobs_total). */
  metrics?: Metrics;
}

/**
 * `run_directory_sync(job_id)`: run one job to the end. Fetches the whole directory first,
 * then, in ONE transaction, applies steps (a)–(c), then the linked-teams step, ends the
 * deactivated users' web sessions and marks the job succeeded. A failure anywhere before the
 * commit leaves every table as it was and the job failed with the error. After the commit the
 * deactivated users' live sandboxes are ended. Never throws for a failed sync: the job row says it.
 */
export async function runDirectorySync(
  deps: SyncRunnerDeps,
  jobId: number,
  progress: Progress = () => {},
): Promise<SyncJobRow> {
  const { db, log } = deps;
  const started = Date.now();
  const job = await getJob(db, jobId);
  if (job.status !== 'pending') return job;
  // Claim the job for this run: owner id, pid and host, first heartbeat. Every later write to
  // the row requires it to be still 'running' by this owner, so a run whose job another process
  // failed as stale (see recoverStaleJobs) never overwrites that.
  const owner = newJobOwner();
  if (!(await claimJob(db, jobId, owner))) {
    owner.release();
    return getJob(db, jobId);
  }
  const heartbeat = setInterval(() => {
    beatJob(db, jobId, owner.id).catch(() => {
      // The database was closed under a run (shutdown after the drain timeout) or is away:
      // nothing to beat for; the next start judges the job by its owner's pid and heartbeat.
    });
  }, JOB_HEARTBEAT_MS);
  heartbeat.unref();
  /** The run no longer needs the job: no more heartbeats; this process stops vouching for it. */
  const letGo = () => {
    clearInterval(heartbeat);
    owner.release();
  };
  let lastWrite = 0;
  /** Progress goes to the job row at most twice a second (outside the apply transaction). */
  const report: Progress = (phase, done, total) => {
    progress(phase, done, total);
    const now = Date.now();
    if (now - lastWrite > 500 || done === total) {
      lastWrite = now;
      beatJob(db, jobId, owner.id, JSON.stringify({ phase, done, total: total ?? null })).catch(() => undefined);
    }
  };
  const jlog = log.child({ jobId, connectionId: job.connection_id });
  let committed: { deactivatedUserIds: number[]; policyChangedUserIds: number[] } | undefined;
  try {
    const conn = await getConnection(db, job.connection_id);
    await markSyncStarted(db, conn.id);
    if (!hasGroupSync(conn))
      throw new AppError('ERR_SYNC_NOT_CONFIGURED', 'the connection has no service account or delegated admin e-mail');
    const client = new DirectoryClient({
      serviceAccount: decryptServiceAccount(deps.encryptor ?? atRestEncryptor(deps.config), conn),
      delegatedAdminEmail: conn.delegated_admin_email!,
      baseUrl: deps.config.google.directoryBaseUrl,
      tokenUrl: deps.config.google.tokenUrl,
      customer: conn.customer,
      ...deps.client,
    });
    const snap = await fetchDirectory(client, report);
    const fetchedAt = Date.now();
    // ONE transaction for steps (a)–(c), the linked-teams step, ending the deactivated users'
    // web sessions and recording the job's success: a failure anywhere leaves directory data,
    // teams, stored policies, web sessions and the job's 'running' state as they were.
    report('apply', 0, 1);
    const { result, committed: done } = await inTransaction(db, (trx) =>
      applyAndRecord(trx, { jobId, job, ownerId: owner.id, connectionId: conn.id, snap, client, started, fetchedAt }),
    );
    committed = done;
    report('done', 1, 1);
    letGo();
    for (const w of result.warnings ?? [])
      jlog.warn(
        {
          teamId: w.team_id,
          organisationId: w.organisation_id,
          groupId: w.group_id,
          membersRemoved: w.members_removed,
        },
        'linked group gone: team unlinked and emptied',
      );
    jlog.info({ rows: result.rows_written, ms: result.duration_ms }, 'directory sync succeeded');
    deps.metrics?.syncJobs.inc({ status: 'succeeded' });
  } catch (err) {
    letGo();
    await recordFailure(deps, jobId, owner.id, job.connection_id, jlog, err);
    return getJob(db, jobId);
  }
  // After the commit: live sandboxes of deactivated users end (beyond docs/rules.md#directory-sync-flow). Their accounts
  // are inactive and their web sessions gone already, so a failure here is logged, not fatal.
  const deactivated = committed?.deactivatedUserIds ?? [];
  if (deactivated.length && deps.sandboxes) {
    let ended: number | undefined;
    for (const uid of deactivated) {
      try {
        const n = await deps.sandboxes.killForUser(uid);
        if (typeof n === 'number') ended = (ended ?? 0) + n;
      } catch (err) {
        jlog.warn({ userId: uid, err: toAppError(err).code }, 'could not stop sandboxes of a deactivated user');
      }
    }
    // Recorded only when the sandbox runtime counted them (not when the daemon was unreachable).
    if (ended !== undefined) await addToJobResult(db, jobId, owner.id, { sandboxes_ended: ended });
  }
  if (committed?.policyChangedUserIds.length) deps.sandboxes?.policyChanged?.(committed.policyChangedUserIds);
  return getJob(db, jobId);
}

function describeCause(c: unknown): Record<string, unknown> {
  if (!(c instanceof Error)) return { value: typeof c };
  return {
    name: c.name,
    ...((c as { code?: unknown }).code !== undefined ? { code: (c as { code?: unknown }).code } : {}),
    message: c.message,
  };
}

/**
 * Runs jobs in the background for the web app (ctx.services.directorySync). At start, and
 * before a new job is created, it fails the jobs whose owner is gone or silent (a crashed
 * daemon or CLI), so the one-running-job index cannot wedge; jobs a live process runs (this
 * one, or `airlock sync-directory` beside it) are left alone.
 */
export class DirectorySyncRunner implements DirectorySyncService {
  readonly #deps: SyncRunnerDeps;
  readonly #running = new Set<Promise<unknown>>();

  constructor(deps: SyncRunnerDeps) {
    this.#deps = deps;
  }

  /** Fail every connection's jobs whose owner is gone or silent (at start). Returns how many. */
  recover(): Promise<number> {
    return recoverStaleJobs(this.#deps.db);
  }

  /** The same for one connection, before a new job is created for it. */
  async recoverStale(connectionId: number): Promise<number> {
    const n = await recoverStaleJobs(this.#deps.db, connectionId);
    if (n) this.#deps.log.warn({ connectionId, jobs: n }, 'directory-sync jobs whose process stopped marked failed');
    return n;
  }

  start(jobId: number): void {
    const p = runDirectorySync(this.#deps, jobId)
      .catch((err: unknown) => this.#deps.log.error({ err, jobId }, 'directory sync runner crashed'))
      .finally(() => this.#running.delete(p));
    this.#running.add(p);
  }

  /** Wait for running jobs (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.#running.size) await Promise.allSettled([...this.#running]);
  }
}

/** What the apply transaction of one run needs. */
interface ApplyInput {
  jobId: number;
  job: SyncJobRow;
  ownerId: string;
  connectionId: number;
  snap: Awaited<ReturnType<typeof fetchDirectory>>;
  client: DirectoryClient;
  started: number;
  fetchedAt: number;
}

/**
 * Inside the run's ONE transaction: steps (a)–(c), the linked-teams step, the deactivated users'
 * web sessions and action-log entries, and the job marked succeeded with its result.
 */
async function applyAndRecord(
  trx: Sql,
  { jobId, job, ownerId, connectionId, snap, client, started, fetchedAt }: ApplyInput,
) {
  if (!(await ownsJob(trx, jobId, ownerId))) {
    throw new AppError(
      'ERR_SYNC_JOB_LOST',
      'another process failed this job while it ran (its owner looked gone); nothing was applied',
    );
  }
  const applied = await applySnapshot(trx, connectionId, snap);
  let teams: TeamsResult;
  try {
    teams = await applyLinkedTeams(trx, connectionId, applied.orphanedTeams);
  } catch (err) {
    throw new AppError('ERR_SYNC_TEAMS_FAILED', 'the linked-teams step failed; no directory change was kept', {
      cause: err,
    });
  }
  // Deactivated users lose their web sessions in the same commit (beyond docs/rules.md#directory-sync-flow).
  let sessionsEnded = 0;
  for (const uid of applied.deactivatedUserIds) {
    sessionsEnded += await deleteUserWebSessions(trx, uid);
    await logAction(trx, {
      event: 'identity.user_deactivated',
      severity: 'warning',
      actorId: job.requested_by,
      subjectId: uid,
      data: { by: 'directory_sync', job_id: jobId },
    });
  }
  // A team whose linked group is gone was unlinked and emptied: an organisation manager
  // should know (warning in the result and the action log), e.g. to link it to another group.
  for (const u of teams.unlinked) {
    await logAction(trx, {
      event: 'identity.team_unlinked',
      severity: 'warning',
      actorId: job.requested_by,
      data: { by: 'directory_sync', job_id: jobId, reason: 'group_deleted', ...u },
    });
  }
  const appliedAt = Date.now();
  const { policyChangedUserIds, rows_written: teamRows, unlinked, ...teamCounts } = teams;
  const result = {
    ...applied.counts,
    ...teamCounts,
    rows_written: applied.counts.rows_written + teamRows,
    ...(unlinked.length
      ? {
          warnings: unlinked.map((u) => ({
            code: 'WARN_SYNC_TEAM_GROUP_DELETED',
            message: `the group ${u.group_email} is gone from the directory: team "${u.team}" was unlinked and emptied`,
            ...u,
          })),
        }
      : {}),
    sessions_ended: sessionsEnded,
    fetched: { groups: snap.groups.length, users: snap.users.length, memberships: snap.memberships },
    requests: client.requests,
    retries: client.retries,
    fetch_ms: fetchedAt - started,
    apply_ms: appliedAt - fetchedAt,
    duration_ms: appliedAt - started,
  };
  await markJobSucceeded(trx, jobId, ownerId, connectionId, result);
  return { result, committed: { deactivatedUserIds: applied.deactivatedUserIds, policyChangedUserIds } };
}

/** A failed run: the job marked failed with the error (if this run still owns it), logged without stack or SQL. */
async function recordFailure(
  deps: SyncRunnerDeps,
  jobId: number,
  ownerId: string,
  connectionId: number,
  jlog: Logger,
  err: unknown,
): Promise<void> {
  const e = toAppError(err, 'ERR_SYNC_FAILED');
  const error = {
    code: e.code,
    message: e.code === 'ERR_INTERNAL' ? 'internal error during sync' : e.message,
    ...(e.details ?? {}),
  };
  const recorded = await markJobFailed(deps.db, jobId, ownerId, connectionId, error).catch((dbErr: unknown) => {
    jlog.warn(
      { code: toAppError(dbErr).code },
      'could not record the failed directory sync; the next start fails it as interrupted',
    );
    return false;
  });
  if (recorded) deps.metrics?.syncJobs.inc({ status: 'failed' });
  else
    jlog.warn(
      { code: e.code },
      'directory sync job no longer owned by this run; its status is left as another process set it',
    );
  // Unexpected errors (and the cause of a failed teams step) are logged by name, code and
  // message: enough to act on, without a stack trace or SQL text.
  const cause = err instanceof AppError ? err.cause : err;
  if (cause !== undefined) jlog.error({ code: e.code, cause: describeCause(cause) }, 'directory sync failed');
  else jlog.warn({ code: e.code }, 'directory sync failed');
}
