import type { SyncJobRow } from '../../domain/identity/directory-sync-store.js';
import type { IdpConnectionRow } from '../../domain/identity/store.js';
import { hasGroupSync } from '../../domain/identity/store.js';
import { syncJobSummary } from '../../domain/identity/job-view.js';
import type { ConnectionView, SyncJobView } from '../admin-api.js';

/** Public view of a connection: never a secret, only whether one is set. */
export function connectionView(c: IdpConnectionRow): ConnectionView {
  return {
    id: c.id,
    provider: c.provider,
    display_name: c.display_name,
    issuer: c.issuer,
    client_id: c.client_id,
    has_client_secret: !!c.client_secret_enc,
    has_service_account: !!c.service_account_enc,
    service_account_email: c.service_account_email,
    delegated_admin_email: c.delegated_admin_email,
    customer: c.customer,
    is_active: c.is_active === 1,
    has_group_sync: hasGroupSync(c),
    last_sync_started_at: c.last_sync_started_at,
    last_sync_finished_at: c.last_sync_finished_at,
    last_sync_succeeded_at: c.last_sync_succeeded_at,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

/** The admin API's view of a sync job: the domain's summary, checked against the API type. */
export function jobView(j: SyncJobRow): SyncJobView {
  return syncJobSummary(j) satisfies SyncJobView;
}
