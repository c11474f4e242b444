/**
 * OAuth per user for connectors (docs/connectors.md, "OAuth per user"): one row per (connector,
 * user) the user connected. The access and refresh tokens are AES-256-GCM boxes bound to the
 * connector, the user and the kind (domain/connector-oauth/store.ts), like connected_accounts.
 * Beside them, what a refresh and a revocation need without a new discovery: the client id the
 * grant was made with (the client ID metadata document's URL or the pre-registered id), the
 * authorization server's issuer and its metadata (JSON, public), and the resource indicator.
 */
const NOW_SQLITE = `(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;
const NOW_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

const table = (now: string, bigint: string) => `
CREATE TABLE connector_tokens (
  connector_id      TEXT NOT NULL,
  user_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id         TEXT NOT NULL,
  issuer            TEXT NOT NULL,
  as_metadata       TEXT NOT NULL,
  resource          TEXT,
  scope             TEXT,
  access_token_enc  TEXT NOT NULL,
  access_expires_at ${bigint} NOT NULL,
  refresh_token_enc TEXT,
  connected_at      TEXT NOT NULL DEFAULT ${now},
  updated_at        TEXT NOT NULL DEFAULT ${now},
  PRIMARY KEY (connector_id, user_id)
);
CREATE INDEX connector_tokens_user ON connector_tokens(user_id);
`;

export const sqlite = table(NOW_SQLITE, 'INTEGER');
export const postgres = table(NOW_PG, 'BIGINT');
