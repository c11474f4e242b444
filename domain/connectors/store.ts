/**
 * The connector registry's rows (migration 030) on either engine: views for the admin API (never
 * a secret), resolved entries for the host (the egress gateway and discovery: secrets decrypted,
 * never in a view, a response or a log). Secrets are encrypted at rest with the install's at-rest
 * key, bound to the connector's id, like the chat models' keys.
 */
import type {
  ConnectorAudience,
  ConnectorAuthKind,
  ConnectorTool,
  ConnectorTransport,
  ConnectorView,
  Encryptor,
} from '../../core/index.js';
import { nowIso, type Row, type Sql } from '../db/index.js';

export const secretAad = (id: string) => `connector:${id}:auth_secret`;
export const clientSecretAad = (id: string) => `connector:${id}:oauth_client_secret`;

/** A connector as the host uses it: its secrets decrypted (host only). */
export interface ResolvedConnector {
  id: string;
  label: string;
  url: string;
  transport: ConnectorTransport;
  audience: ConnectorAudience;
  authKind: ConnectorAuthKind;
  authHeaderName: string | null;
  /** The static secret ('header', 'bearer'); host only. */
  secret?: string;
  oauthClientId: string | null;
  /** The pre-registered OAuth client's secret; host only. */
  oauthClientSecret?: string;
  tools: ConnectorTool[];
  enabled: boolean;
}

export function parseTools(json: string): ConnectorTool[] {
  const v = JSON.parse(json) as unknown;
  return Array.isArray(v) ? (v as ConnectorTool[]) : [];
}

/** The fields a view and a resolved entry share. */
function common(r: Row<'connectors'>) {
  return {
    id: r.id,
    label: r.label,
    url: r.url,
    transport: r.transport,
    audience: JSON.parse(r.audience) as ConnectorAudience,
    tools: parseTools(r.tools),
    enabled: !!r.enabled,
  };
}

export function connectorView(r: Row<'connectors'>): ConnectorView {
  return {
    ...common(r),
    auth_kind: r.auth_kind,
    auth_header_name: r.auth_header_name,
    has_secret: !!r.auth_secret_enc,
    oauth_client_id: r.oauth_client_id,
    has_oauth_client_secret: !!r.oauth_client_secret_enc,
    tools_refreshed_at: r.tools_refreshed_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function resolveRow(enc: Encryptor, r: Row<'connectors'>): ResolvedConnector {
  return {
    ...common(r),
    authKind: r.auth_kind,
    authHeaderName: r.auth_header_name,
    ...(r.auth_secret_enc ? { secret: enc.decrypt(r.auth_secret_enc, secretAad(r.id)) } : {}),
    oauthClientId: r.oauth_client_id,
    ...(r.oauth_client_secret_enc
      ? { oauthClientSecret: enc.decrypt(r.oauth_client_secret_enc, clientSecretAad(r.id)) }
      : {}),
  };
}

export async function connectorRow(db: Sql, id: string): Promise<Row<'connectors'> | undefined> {
  return db.selectFrom('connectors').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listConnectors(db: Sql): Promise<ConnectorView[]> {
  const rows = await db.selectFrom('connectors').selectAll().orderBy('id').execute();
  return rows.map(connectorView);
}

export async function getConnector(db: Sql, id: string): Promise<ConnectorView | undefined> {
  const r = await connectorRow(db, id);
  return r && connectorView(r);
}

/** One connector for the host (secrets decrypted), or undefined. */
export async function resolveConnector(db: Sql, enc: Encryptor, id: string): Promise<ResolvedConnector | undefined> {
  const r = await connectorRow(db, id);
  return r && resolveRow(enc, r);
}

/** The enabled connectors, for the host. */
export async function enabledConnectors(db: Sql, enc: Encryptor): Promise<ResolvedConnector[]> {
  const rows = await db.selectFrom('connectors').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  return rows.map((r) => resolveRow(enc, r));
}

/**
 * Keep a client Airlock registered dynamically (RFC 7591) as the connector's OAuth client, unless
 * the connector has one already (an admin's, or another user's registration that came first):
 * the first writer wins, and every later grant and refresh uses that one client.
 */
export async function keepRegisteredClient(
  db: Sql,
  enc: Encryptor,
  id: string,
  client: { client_id: string; client_secret?: string },
): Promise<void> {
  await db
    .updateTable('connectors')
    .set({
      oauth_client_id: client.client_id,
      oauth_client_secret_enc: client.client_secret ? enc.encrypt(client.client_secret, clientSecretAad(id)) : null,
      updated_at: nowIso(),
    })
    .where('id', '=', id)
    .where('oauth_client_id', 'is', null)
    .execute();
}

/** Is the user in the connector's audience? (Agent policies may still deny it: service.ts.) */
export async function inAudience(db: Sql, audience: ConnectorAudience, userId: number): Promise<boolean> {
  if (audience.kind === 'everyone') return true;
  if (audience.kind === 'users') return audience.user_ids.includes(userId);
  if (!audience.team_ids.length) return false;
  const r = await db
    .selectFrom('team_members')
    .select('team_id')
    .where('user_id', '=', userId)
    .where('team_id', 'in', audience.team_ids)
    .executeTakeFirst();
  return !!r;
}
