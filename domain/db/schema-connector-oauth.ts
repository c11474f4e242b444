// The table of OAuth per user for connectors: part of `Schema` (schema.ts).
import type { ColumnType } from 'kysely';

/** A column the database fills in when the insert leaves it out. */
type Default<T> = ColumnType<T, T | undefined, T>;

/** A user's OAuth grant for one connector (migration 035, domain/connector-oauth/store.ts). */
export interface ConnectorTokensTable {
  connector_id: string;
  user_id: number;
  client_id: string;
  issuer: string;
  /** The authorization server's metadata as discovered (JSON; public, no secret). */
  as_metadata: string;
  resource: string | null;
  scope: string | null;
  access_token_enc: string;
  access_expires_at: number;
  refresh_token_enc: string | null;
  connected_at: Default<string>;
  updated_at: Default<string>;
}
