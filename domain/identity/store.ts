import { AppError, Encryptor } from '../../core/index.js';
import type { ConnectionRequest } from '../../core/api-types-admin.js';
import { logAction } from '../action-log.js';
import { inTransaction, nowIso, type Row, type Sql } from '../db/index.js';
import { isUniqueViolation } from '../data-access/store.js';
import { rewriteAgentPolicies } from './agent-policy.js';
import { emptyTeam } from './teams.js';

/** The Google provider id (the only provider so far). */
export const GOOGLE_PROVIDER = 'google';

/** An IdP connection as stored (secrets still encrypted). */
export type IdpConnectionRow = Row<'idp_connections'>;

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

export function listConnections(db: Sql): Promise<IdpConnectionRow[]> {
  return db.selectFrom('idp_connections').selectAll().orderBy('id').execute();
}

export async function getConnection(db: Sql, id: number): Promise<IdpConnectionRow> {
  const c = await db.selectFrom('idp_connections').selectAll().where('id', '=', id).executeTakeFirst();
  if (!c) throw new AppError('ERR_IDP_NOT_FOUND', 'no such IdP connection');
  return c;
}

export function getConnectionByProvider(db: Sql, provider: string): Promise<IdpConnectionRow | undefined> {
  return db.selectFrom('idp_connections').selectAll().where('provider', '=', provider).executeTakeFirst();
}

/** What a connection create or update writes: the API's request body (core/api-types-admin.ts), any provider id. */
export interface ConnectionInput extends Omit<ConnectionRequest, 'provider'> {
  provider?: string;
}

/** Parse and check a service-account key file. Throws 400 ERR_IDP_SERVICE_ACCOUNT when unusable. */
export function parseServiceAccount(v: string | Record<string, unknown>): ServiceAccountKey {
  let o: unknown = v;
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v);
    } catch {
      // The message below is the answer; the parse error text could echo key material.
      throw new AppError('ERR_IDP_SERVICE_ACCOUNT', 'service_account_json is not valid JSON');
    }
  }
  const sa = o as Partial<ServiceAccountKey>;
  if (
    !sa ||
    typeof sa !== 'object' ||
    typeof sa.client_email !== 'string' ||
    typeof sa.private_key !== 'string' ||
    !sa.private_key.includes('PRIVATE KEY')
  ) {
    throw new AppError('ERR_IDP_SERVICE_ACCOUNT', 'service_account_json needs client_email and a PEM private_key');
  }
  return sa as ServiceAccountKey;
}

/** Create or update a connection; secrets are encrypted with the at-rest key (AAD binds them to the provider). */
export async function saveConnection(
  db: Sql,
  enc: Encryptor,
  input: ConnectionInput,
  id?: number,
): Promise<IdpConnectionRow> {
  const existing = id === undefined ? undefined : await getConnection(db, id);
  const provider = existing?.provider ?? input.provider ?? GOOGLE_PROVIDER;
  const row: Partial<Omit<IdpConnectionRow, 'id' | 'provider' | 'created_at'>> = {};
  if (input.display_name !== undefined) row.display_name = input.display_name;
  if (input.issuer !== undefined) row.issuer = input.issuer.replace(/\/+$/, '');
  if (input.client_id !== undefined) row.client_id = input.client_id;
  if (input.client_secret !== undefined)
    row.client_secret_enc =
      input.client_secret === null ? null : enc.encrypt(input.client_secret, aad(provider, 'client_secret'));
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
    if (!row.issuer || !row.client_id) throw new AppError('ERR_VALIDATION', 'issuer and client_id are required');
    if (await getConnectionByProvider(db, provider))
      throw new AppError('ERR_IDP_EXISTS', `a connection for ${provider} exists`);
    try {
      return await db
        .insertInto('idp_connections')
        .values({
          client_secret_enc: null,
          service_account_enc: null,
          service_account_email: null,
          delegated_admin_email: null,
          last_sync_started_at: null,
          last_sync_finished_at: null,
          last_sync_succeeded_at: null,
          ...row,
          provider,
          display_name: row.display_name ?? provider,
          issuer: row.issuer,
          client_id: row.client_id,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('ERR_IDP_EXISTS', `a connection for ${provider} exists`);
      throw err;
    }
  }
  if (Object.keys(row).length)
    await db
      .updateTable('idp_connections')
      .set({ ...row, updated_at: nowIso() })
      .where('id', '=', existing.id)
      .execute();
  return getConnection(db, existing.id);
}

/**
 * Delete a connection; its synced groups go with it (ON DELETE CASCADE). A team linked to one of
 * them is unlinked and emptied, as when the sync finds its group gone (docs/identity.md), so it
 * does not keep the group's last members and policies; each is logged as `identity.team_unlinked`
 * (warning, `reason: "connection_deleted"`). Returns the users whose stored policy changed.
 */
export async function deleteConnection(db: Sql, id: number, actorId: number | null = null): Promise<number[]> {
  await getConnection(db, id);
  return inTransaction(db, async (trx) => {
    const teams = await trx
      .selectFrom('teams as t')
      .innerJoin('external_groups as g', 'g.id', 't.external_group_id')
      .select(['t.id as team_id', 't.organisation_id', 't.name as team', 'g.id as group_id', 'g.email as group_email'])
      .where('g.connection_id', '=', id)
      .orderBy('t.id')
      .execute();
    const changed = new Set<number>();
    for (const tm of teams) {
      const { removed } = await emptyTeam(trx, tm.team_id);
      for (const u of removed) changed.add(u);
      await logAction(trx, {
        event: 'identity.team_unlinked',
        severity: 'warning',
        actorId,
        data: { reason: 'connection_deleted', connection_id: id, ...tm, members_removed: removed.length },
      });
    }
    await trx.deleteFrom('idp_connections').where('id', '=', id).execute();
    return rewriteAgentPolicies(trx, changed);
  });
}

export function decryptClientSecret(enc: Encryptor, c: IdpConnectionRow): string | undefined {
  return c.client_secret_enc ? enc.decrypt(c.client_secret_enc, aad(c.provider, 'client_secret')) : undefined;
}

export function decryptServiceAccount(enc: Encryptor, c: IdpConnectionRow): ServiceAccountKey {
  if (!c.service_account_enc) throw new AppError('ERR_SYNC_NOT_CONFIGURED', 'the connection has no service account');
  return JSON.parse(enc.decrypt(c.service_account_enc, aad(c.provider, 'service_account'))) as ServiceAccountKey;
}

/** The connection a sync runs for: the named provider's, else the only one. */
export async function syncConnection(db: Sql, provider?: string): Promise<IdpConnectionRow> {
  const c = provider ? await getConnectionByProvider(db, provider) : (await listConnections(db))[0];
  if (!c) throw new AppError('ERR_IDP_NOT_FOUND', 'no IdP connection is configured');
  if (!hasGroupSync(c)) {
    throw new AppError(
      'ERR_SYNC_NOT_CONFIGURED',
      'directory sync needs the service-account JSON and the delegated admin e-mail on the connection',
    );
  }
  return c;
}
