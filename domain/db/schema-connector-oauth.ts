// The tables of per-user connector state (OAuth grants, held calls): part of `Schema` (schema.ts).
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

/** A connector call marked ask that the gateway held for the user, and the decision (migration 080). */
export interface ConnectorApprovalsTable {
  id: string;
  /** The chat session of the turn that made the call. */
  session_id: string;
  turn_id: string;
  call_id: string | null;
  user_id: number;
  connector_id: string;
  /** The connector's label when it asked (the card shows it after a rename or a delete). */
  connector_label: string;
  tool: string;
  /** JSON: the exact arguments the gateway forwards if approved. */
  arguments: string;
  state: 'pending' | 'approved' | 'denied' | 'timed_out';
  created_at: Default<string>;
  decided_at: string | null;
}
