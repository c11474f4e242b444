import type { JobStatus, JobTrigger, SyncJobRow } from './directory-sync-store.js';

/**
 * A directory-sync job as people see it: the admin API's answer (web/identity/views.ts checks it
 * against the API's `SyncJobView`) and `airlock sync-directory --json`. Its JSON columns are
 * read; the run's owner fields (claim id, process, host, heartbeat) stay inside.
 */
export interface SyncJobSummary {
  id: number;
  connection_id: number;
  status: JobStatus;
  trigger: JobTrigger;
  requested_by: number | null;
  result: Record<string, unknown> | null;
  error: ({ code?: string; message?: string; upstream_status?: number; reason?: string } & Record<string, unknown>) | null;
  progress: Record<string, unknown> | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export function syncJobSummary(j: SyncJobRow): SyncJobSummary {
  return {
    id: j.id,
    connection_id: j.connection_id,
    status: j.status,
    trigger: j.trigger,
    requested_by: j.requested_by,
    result: j.result ? JSON.parse(j.result) : null,
    error: j.error ? JSON.parse(j.error) : null,
    progress: j.progress ? JSON.parse(j.progress) : null,
    created_at: j.created_at,
    started_at: j.started_at,
    finished_at: j.finished_at,
  };
}
