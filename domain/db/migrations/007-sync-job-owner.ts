/**
 * Who runs a directory-sync job: a random id per run (owner_id), the process (owner_pid on
 * owner_host) and a heartbeat. Recovery fails only jobs whose owner is gone or silent, so a
 * daemon starting while `airlock sync-directory` runs no longer fails the CLI's live job, and
 * the final status is written only by the run that still owns the job. The one-unfinished-job
 * index (directory_sync_jobs_one_running) is unchanged.
 */
export const sqlite = `
ALTER TABLE directory_sync_jobs ADD COLUMN owner_id TEXT;
ALTER TABLE directory_sync_jobs ADD COLUMN owner_pid INTEGER;
ALTER TABLE directory_sync_jobs ADD COLUMN owner_host TEXT;
ALTER TABLE directory_sync_jobs ADD COLUMN heartbeat_at TEXT;
`;

export const postgres = `
ALTER TABLE directory_sync_jobs ADD COLUMN owner_id TEXT;
ALTER TABLE directory_sync_jobs ADD COLUMN owner_pid INTEGER;
ALTER TABLE directory_sync_jobs ADD COLUMN owner_host TEXT;
ALTER TABLE directory_sync_jobs ADD COLUMN heartbeat_at TEXT;
`;
