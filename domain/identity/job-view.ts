import type { SyncJobRow } from './directory-sync-store.js';
import type { SyncJobView } from '../../core/api-types.js';

/**
 * A directory-sync job as people see it: the admin API's answer (its shape is the API's `SyncJobView`,
 * core/api-types.ts) and `airlock sync-directory --json`. Its JSON columns are
 * read; the run's owner fields (claim id, process, host, heartbeat) stay inside.
 */
export type SyncJobSummary = SyncJobView;

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
