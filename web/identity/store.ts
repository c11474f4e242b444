import { AppError, ConflictError, Encryptor, logAction, NotFoundError, nowIso, type Db } from '../../core/index.js';
import type { ConnectionView, SyncJobView } from '../admin-api.js';
import { rewriteAgentPolicies } from './agent-policy.js';
import { emptyTeam } from './teams.js';

/** The Google provider id (the only provider so far). */
export const GOOGLE_PROVIDER = 'google';

/** An IdP connection as stored (secrets still encrypted). */
export interface IdpConnectionRow {
  id: number;
  provider: string;
  display_name: string;
  issuer: string;
  client_id: string;
  client_secret_enc: string | null;
  service_account_enc: string | null;
  service_account_email: string | null;
  delegated_admin_email: string | null;
  customer: string;
  is_active: number;
  last_sync_started_at: string | null;
  last_sync_finished_at: string | null;
  last_sync_succeeded_at: string | null;
  created_at: string;
  updated_at: string;
}

/** The service-account key file fields the directory client needs. */
export interface ServiceAccountKey {
  type?: string;
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri?: string;
}

const aad = (provider: string, what: string) => `idp:${provider}:${what}`;

/** docs/rules.md#identity-rules: has_group_sync is true only when both the service-account JSON and delegated admin e-mail are set. */
export function hasGroupSync(c: IdpConnectionRow): boolean {
  return !!c.service_account_enc && !!c.delegated_admin_email;
}

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

export function listConnections(db: Db): IdpConnectionRow[] {
  return db.prepare('SELECT * FROM idp_connections ORDER BY id').all() as IdpConnectionRow[];
}

export function getConnection(db: Db, id: number): IdpConnectionRow {
  const c = db.prepare('SELECT * FROM idp_connections WHERE id = ?').get(id) as IdpConnectionRow | undefined;
  if (!c) throw new NotFoundError('ERR_IDP_NOT_FOUND', 'no such IdP connection');
  return c;
}

export function getConnectionByProvider(db: Db, provider: string): IdpConnectionRow | undefined {
  return db.prepare('SELECT * FROM idp_connections WHERE provider = ?').get(provider) as IdpConnectionRow | undefined;
}

export interface ConnectionInput {
  provider?: string;
  display_name?: string;
  issuer?: string;
  client_id?: string;
  client_secret?: string | null;
  /** The service-account key file, as JSON text or the parsed object. */
  service_account_json?: string | Record<string, unknown> | null;
  delegated_admin_email?: string | null;
  customer?: string;
  is_active?: boolean;
}

/** Parse and check a service-account key file. Throws 400 ERR_IDP_SERVICE_ACCOUNT when unusable. */
export function parseServiceAccount(v: string | Record<string, unknown>): ServiceAccountKey {
  let o: unknown = v;
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v);
    } catch {
      // The message below is the answer; the parse error text could echo key material.
      throw new AppError('ERR_IDP_SERVICE_ACCOUNT', 'service_account_json is not valid JSON', { status: 400 });
    }
  }
  const sa = o as Partial<ServiceAccountKey>;
  if (!sa || typeof sa !== 'object' || typeof sa.client_email !== 'string' || typeof sa.private_key !== 'string' || !sa.private_key.includes('PRIVATE KEY')) {
    throw new AppError('ERR_IDP_SERVICE_ACCOUNT', 'service_account_json needs client_email and a PEM private_key', { status: 400 });
  }
  return sa as ServiceAccountKey;
}

/** Create or update a connection; secrets are encrypted with the at-rest key (AAD binds them to the provider). */
export function saveConnection(db: Db, enc: Encryptor, input: ConnectionInput, id?: number): IdpConnectionRow {
  const existing = id === undefined ? undefined : getConnection(db, id);
  const provider = existing?.provider ?? input.provider ?? GOOGLE_PROVIDER;
  const row: Partial<IdpConnectionRow> = {};
  if (input.display_name !== undefined) row.display_name = input.display_name;
  if (input.issuer !== undefined) row.issuer = input.issuer.replace(/\/+$/, '');
  if (input.client_id !== undefined) row.client_id = input.client_id;
  if (input.client_secret !== undefined) row.client_secret_enc = input.client_secret === null ? null : enc.encrypt(input.client_secret, aad(provider, 'client_secret'));
  if (input.service_account_json !== undefined) {
    if (input.service_account_json === null) {
      row.service_account_enc = null;
      row.service_account_email = null;
    } else {
      const sa = parseServiceAccount(input.service_account_json);
      row.service_account_enc = enc.encrypt(JSON.stringify(sa), aad(provider, 'service_account'));
      row.service_account_email = sa.client_email;
    }
  }
  if (input.delegated_admin_email !== undefined) row.delegated_admin_email = input.delegated_admin_email;
  if (input.customer !== undefined) row.customer = input.customer;
  if (input.is_active !== undefined) row.is_active = input.is_active ? 1 : 0;

  if (!existing) {
    if (!row.issuer || !row.client_id) throw new AppError('ERR_VALIDATION', 'issuer and client_id are required', { status: 400 });
    if (getConnectionByProvider(db, provider)) throw new ConflictError('ERR_IDP_EXISTS', `a connection for ${provider} exists`);
    const cols = ['provider', 'display_name', ...Object.keys(row).filter((k) => k !== 'display_name')];
    const vals = [provider, row.display_name ?? provider, ...Object.entries(row).filter(([k]) => k !== 'display_name').map(([, v]) => v)];
    const info = db.prepare(`INSERT INTO idp_connections (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...vals);
    return getConnection(db, Number(info.lastInsertRowid));
  }
  const keys = Object.keys(row);
  if (keys.length) {
    db.prepare(`UPDATE idp_connections SET ${keys.map((k) => `${k} = ?`).join(', ')}, updated_at = ? WHERE id = ?`).run(
      ...Object.values(row),
      nowIso(),
      existing.id,
    );
  }
  return getConnection(db, existing.id);
}

/**
 * Delete a connection; its synced groups go with it (ON DELETE CASCADE). A team linked to one of
 * them is unlinked and emptied, as when the sync finds its group gone (docs/identity.md), so it
 * does not keep the group's last members and policies; each is logged as `identity.team_unlinked`
 * (warning, `reason: "connection_deleted"`). Returns the users whose stored policy changed.
 */
export function deleteConnection(db: Db, id: number, actorId: number | null = null): number[] {
  getConnection(db, id);
  return db.transaction(() => {
    const teams = db
      .prepare(
        `SELECT t.id AS team_id, t.organisation_id, t.name AS team, g.id AS group_id, g.email AS group_email
         FROM teams t JOIN external_groups g ON g.id = t.external_group_id WHERE g.connection_id = ? ORDER BY t.id`,
      )
      .all(id) as { team_id: number; organisation_id: number; team: string; group_id: number; group_email: string }[];
    const changed = new Set<number>();
    for (const tm of teams) {
      const { removed } = emptyTeam(db, tm.team_id);
      for (const u of removed) changed.add(u);
      logAction(db, { event: 'identity.team_unlinked', severity: 'warning', actorId, data: { reason: 'connection_deleted', connection_id: id, ...tm, members_removed: removed.length } });
    }
    db.prepare('DELETE FROM idp_connections WHERE id = ?').run(id);
    return rewriteAgentPolicies(db, changed);
  })();
}

export function decryptClientSecret(enc: Encryptor, c: IdpConnectionRow): string | undefined {
  return c.client_secret_enc ? enc.decrypt(c.client_secret_enc, aad(c.provider, 'client_secret')) : undefined;
}

export function decryptServiceAccount(enc: Encryptor, c: IdpConnectionRow): ServiceAccountKey {
  if (!c.service_account_enc) throw new ConflictError('ERR_SYNC_NOT_CONFIGURED', 'the connection has no service account');
  return JSON.parse(enc.decrypt(c.service_account_enc, aad(c.provider, 'service_account'))) as ServiceAccountKey;
}

// ---------------------------------------------------------------------------------------------
// Directory-sync jobs

export type JobStatus = 'pending' | 'running' | 'succeeded' | 'failed';
export type JobTrigger = 'manual' | 'scheduled';

export interface SyncJobRow {
  id: number;
  connection_id: number;
  status: JobStatus;
  trigger: JobTrigger;
  requested_by: number | null;
  result: string | null;
  error: string | null;
  progress: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** The run that claimed the job (random per run), its process and host, its last heartbeat. */
  owner_id?: string | null;
  owner_pid?: number | null;
  owner_host?: string | null;
  heartbeat_at?: string | null;
}

export function jobView(j: SyncJobRow): SyncJobView {
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

export function getJob(db: Db, id: number): SyncJobRow {
  const j = db.prepare('SELECT * FROM directory_sync_jobs WHERE id = ?').get(id) as SyncJobRow | undefined;
  if (!j) throw new NotFoundError('ERR_SYNC_JOB_NOT_FOUND', 'no such directory-sync job');
  return j;
}

export function latestJob(db: Db, connectionId: number): SyncJobRow | undefined {
  return db.prepare('SELECT * FROM directory_sync_jobs WHERE connection_id = ? ORDER BY id DESC LIMIT 1').get(connectionId) as
    | SyncJobRow
    | undefined;
}

/**
 * Create a job for the connection unless one is pending or running, in which case that one is
 * returned (`created: false`). The partial unique index directory_sync_jobs_one_running makes
 * this hold across processes (web app and CLI), not only inside this one.
 */
export function createOrGetRunningJob(
  db: Db,
  connectionId: number,
  trigger: JobTrigger,
  requestedBy: number | null,
): { job: SyncJobRow; created: boolean } {
  return db.transaction(() => {
    const info = db
      .prepare(
        `INSERT INTO directory_sync_jobs (connection_id, trigger, requested_by) VALUES (?, ?, ?)
         ON CONFLICT (connection_id) WHERE status IN ('pending','running') DO NOTHING`,
      )
      .run(connectionId, trigger, requestedBy);
    if (info.changes === 1) return { job: getJob(db, Number(info.lastInsertRowid)), created: true };
    const running = db
      .prepare("SELECT * FROM directory_sync_jobs WHERE connection_id = ? AND status IN ('pending','running')")
      .get(connectionId) as SyncJobRow;
    return { job: running, created: false };
  }).immediate();
}

/** The connection a sync runs for: the named provider's, else the only one. */
export function syncConnection(db: Db, provider?: string): IdpConnectionRow {
  const c = provider ? getConnectionByProvider(db, provider) : listConnections(db)[0];
  if (!c) throw new NotFoundError('ERR_IDP_NOT_FOUND', 'no IdP connection is configured');
  if (!hasGroupSync(c)) {
    throw new ConflictError(
      'ERR_SYNC_NOT_CONFIGURED',
      'directory sync needs the service-account JSON and the delegated admin e-mail on the connection',
    );
  }
  return c;
}

/**
 * Write the end of a directory-sync job into the action log once (`identity.directory_sync.finished`,
 * severity warning when it failed): its status, the result's counts and the error code, never
 * directory data. Idempotent: a job already logged is skipped. Returns whether it wrote a row.
 */
export function logSyncFinished(db: Db, jobId: number): boolean {
  const j = db.prepare('SELECT * FROM directory_sync_jobs WHERE id = ?').get(jobId) as SyncJobRow | undefined;
  if (!j || (j.status !== 'succeeded' && j.status !== 'failed')) return false;
  const done = db
    .prepare("SELECT 1 FROM action_log WHERE event = 'identity.directory_sync.finished' AND json_extract(data, '$.job_id') = ?")
    .get(jobId);
  if (done) return false;
  const result = j.result ? (JSON.parse(j.result) as Record<string, unknown>) : {};
  const counts = Object.fromEntries(Object.entries(result).filter(([, v]) => typeof v === 'number'));
  const error = j.error ? (JSON.parse(j.error) as { code?: string }) : null;
  logAction(db, {
    event: 'identity.directory_sync.finished',
    severity: j.status === 'failed' ? 'warning' : 'info',
    actorId: j.requested_by,
    data: { job_id: j.id, connection_id: j.connection_id, trigger: j.trigger, status: j.status, ...counts, ...(error?.code ? { error_code: error.code } : {}) },
  });
  return true;
}
