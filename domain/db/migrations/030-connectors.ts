/**
 * Connectors (docs/connectors.md): remote MCP servers an admin registers.
 * - `id`: a slug (`^[a-z][a-z0-9_]{1,31}$`, no `__`), the prefix of its tools' names in the agent.
 * - `url`, `transport` ('streamable_http' | 'sse'): where the server is; only this URL is called.
 * - `audience`: JSON `{"kind":"everyone"}` | `{"kind":"teams","team_ids":[…]}` | `{"kind":"users","user_ids":[…]}`.
 * - `auth_kind` ('none' | 'header' | 'bearer' | 'oauth'), `auth_header_name` (for 'header'),
 *   `auth_secret_enc` (the static secret, encrypted at rest with the install's key, bound to the
 *   row's id, like chat_models.api_key_enc), `oauth_client_id` and `oauth_client_secret_enc`
 *   (a pre-registered OAuth client, the fallback when the server takes no client ID metadata document).
 * - `tools`: JSON array of the discovered tools `{name, description, input_schema, mode}`, mode
 *   'enabled' | 'disabled' | 'ask'; `tools_refreshed_at` when they were last listed from the server.
 */
const STAMP_SQLITE = "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))";
const STAMP_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

function steps(stamp: string): string {
  return `
CREATE TABLE connectors (
  id                      TEXT PRIMARY KEY,
  label                   TEXT NOT NULL,
  url                     TEXT NOT NULL,
  transport               TEXT NOT NULL DEFAULT 'streamable_http' CHECK (transport IN ('streamable_http','sse')),
  audience                TEXT NOT NULL DEFAULT '{"kind":"everyone"}',
  auth_kind               TEXT NOT NULL DEFAULT 'none' CHECK (auth_kind IN ('none','header','bearer','oauth')),
  auth_header_name        TEXT,
  auth_secret_enc         TEXT,
  oauth_client_id         TEXT,
  oauth_client_secret_enc TEXT,
  tools                   TEXT NOT NULL DEFAULT '[]',
  tools_refreshed_at      TEXT,
  enabled                 INTEGER NOT NULL DEFAULT 1,
  created_at              TEXT NOT NULL DEFAULT ${stamp},
  updated_at              TEXT NOT NULL DEFAULT ${stamp}
);
`;
}

export const sqlite = steps(STAMP_SQLITE);
export const postgres = steps(STAMP_PG);
