import { logAction, type ActionEvent } from '../action-log.js';
import { inTransaction, nowIso } from '../db/index.js';
import type { Row, Sql } from '../db/index.js';
import type { Encryptor } from '../../core/index.js';
import type { AuthorizationServerMetadata } from './client.js';

/** A new grant from the authorization server (a connect), or a refreshed one. */
export interface NewConnectorGrant {
  /** The client the grant was made with (the metadata document's URL, or the pre-registered id). */
  clientId: string;
  issuer: string;
  metadata: AuthorizationServerMetadata;
  resource: string | null;
  scope: string | null;
  accessToken: string;
  /** ms since epoch. */
  accessExpiresAt: number;
  refreshToken?: string;
}

/** What a grant for one (connector, user) holds, decrypted: for the token service and disconnect only. */
export interface ConnectorGrant extends NewConnectorGrant {
  connectorId: string;
  userId: number;
  connectedAt: string;
}

/** The sealed box's additional data: a box moved to another connector, user or kind does not open. */
const aad = (connectorId: string, userId: number, kind: 'access' | 'refresh') =>
  `connector:${connectorId}:${userId}:${kind}`;

/**
 * connector_tokens (migration 035): each user's OAuth grant per connector, the tokens sealed with
 * the install's at-rest key (core/crypto.ts) as the workspace account's are. The database, on
 * either engine, never holds a token in the clear.
 */
export class ConnectorTokenStore {
  readonly #db: Sql;
  readonly #enc: Encryptor;

  constructor(db: Sql, enc: Encryptor) {
    this.#db = db;
    this.#enc = enc;
  }

  /** The user's grant for the connector, decrypted; undefined when not connected. */
  async grant(connectorId: string, userId: number): Promise<ConnectorGrant | undefined> {
    const row = await this.#db
      .selectFrom('connector_tokens')
      .selectAll()
      .where('connector_id', '=', connectorId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row ? this.#open(row) : undefined;
  }

  /** The connectors the user has connected, without token material. */
  async connectedOf(
    userId: number,
  ): Promise<Map<string, { connectedAt: string; accessExpiresAt: number; offline: boolean; scope: string | null }>> {
    const rows = await this.#db
      .selectFrom('connector_tokens')
      .select(['connector_id', 'connected_at', 'access_expires_at', 'refresh_token_enc', 'scope'])
      .where('user_id', '=', userId)
      .execute();
    return new Map(
      rows.map((r) => [
        r.connector_id,
        {
          connectedAt: r.connected_at,
          accessExpiresAt: Number(r.access_expires_at),
          offline: r.refresh_token_enc !== null,
          scope: r.scope,
        },
      ]),
    );
  }

  /** Save a connect's grant (replacing an earlier one) and its action-log entry in one transaction. */
  async connect(connectorId: string, userId: number, g: NewConnectorGrant, entry: ActionEvent): Promise<void> {
    const values = {
      connector_id: connectorId,
      user_id: userId,
      client_id: g.clientId,
      issuer: g.issuer,
      as_metadata: JSON.stringify(g.metadata),
      resource: g.resource,
      scope: g.scope,
      access_token_enc: this.#enc.encrypt(g.accessToken, aad(connectorId, userId, 'access')),
      access_expires_at: g.accessExpiresAt,
      refresh_token_enc: g.refreshToken ? this.#enc.encrypt(g.refreshToken, aad(connectorId, userId, 'refresh')) : null,
      connected_at: nowIso(),
      updated_at: nowIso(),
    };
    await inTransaction(this.#db, async (trx) => {
      await trx
        .deleteFrom('connector_tokens')
        .where('connector_id', '=', connectorId)
        .where('user_id', '=', userId)
        .execute();
      await trx.insertInto('connector_tokens').values(values).execute();
      await logAction(trx, entry);
    });
  }

  /** Cache a refreshed access token (and the rotated refresh token, when one came). */
  async saveRefreshed(
    connectorId: string,
    userId: number,
    accessToken: string,
    expiresAt: number,
    refreshToken?: string,
  ): Promise<void> {
    const set: Record<string, string | number> = {
      access_token_enc: this.#enc.encrypt(accessToken, aad(connectorId, userId, 'access')),
      access_expires_at: expiresAt,
      updated_at: nowIso(),
    };
    if (refreshToken) set.refresh_token_enc = this.#enc.encrypt(refreshToken, aad(connectorId, userId, 'refresh'));
    await this.#db
      .updateTable('connector_tokens')
      .set(set)
      .where('connector_id', '=', connectorId)
      .where('user_id', '=', userId)
      .execute();
  }

  /** Delete the grant; `entry` goes to the action log in the same transaction when there was one. */
  async remove(connectorId: string, userId: number, entry?: ActionEvent): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const r = await trx
        .deleteFrom('connector_tokens')
        .where('connector_id', '=', connectorId)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      const had = Number(r.numDeletedRows) > 0;
      if (had && entry) await logAction(trx, entry);
      return had;
    });
  }

  #open(row: Row<'connector_tokens'>): ConnectorGrant {
    const { connector_id: id, user_id: user } = row;
    return {
      connectorId: id,
      userId: user,
      clientId: row.client_id,
      issuer: row.issuer,
      metadata: JSON.parse(row.as_metadata) as AuthorizationServerMetadata,
      resource: row.resource,
      scope: row.scope,
      accessToken: this.#enc.decrypt(row.access_token_enc, aad(id, user, 'access')),
      accessExpiresAt: Number(row.access_expires_at),
      refreshToken: row.refresh_token_enc
        ? this.#enc.decrypt(row.refresh_token_enc, aad(id, user, 'refresh'))
        : undefined,
      connectedAt: row.connected_at,
    };
  }
}
