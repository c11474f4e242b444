/**
 * A user's OAuth grant for a connector goes with the connector (docs/connectors.md, "What is
 * stored"): connector_tokens.connector_id references connectors(id) ON DELETE CASCADE. Before,
 * deleting a connector left its users' sealed tokens behind, unusable and unseen. Grants of
 * connectors already deleted are removed here (nothing can use or show them), then the key is
 * added: on SQLite by rebuilding the table (same columns, defaults and index), on PostgreSQL as a
 * constraint.
 */
const NOW_SQLITE = `(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;

/** Run with foreign keys off (the runner checks them before it commits). */
export const foreignKeysOff = true;

export const sqlite = `
DELETE FROM connector_tokens WHERE connector_id NOT IN (SELECT id FROM connectors);
CREATE TABLE connector_tokens_new (
  connector_id      TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  user_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id         TEXT NOT NULL,
  issuer            TEXT NOT NULL,
  as_metadata       TEXT NOT NULL,
  resource          TEXT,
  scope             TEXT,
  access_token_enc  TEXT NOT NULL,
  access_expires_at INTEGER NOT NULL,
  refresh_token_enc TEXT,
  connected_at      TEXT NOT NULL DEFAULT ${NOW_SQLITE},
  updated_at        TEXT NOT NULL DEFAULT ${NOW_SQLITE},
  PRIMARY KEY (connector_id, user_id)
);
INSERT INTO connector_tokens_new (connector_id, user_id, client_id, issuer, as_metadata, resource, scope, access_token_enc, access_expires_at, refresh_token_enc, connected_at, updated_at)
  SELECT connector_id, user_id, client_id, issuer, as_metadata, resource, scope, access_token_enc, access_expires_at, refresh_token_enc, connected_at, updated_at FROM connector_tokens;
DROP TABLE connector_tokens;
ALTER TABLE connector_tokens_new RENAME TO connector_tokens;
CREATE INDEX connector_tokens_user ON connector_tokens(user_id);
`;

export const postgres = `
DELETE FROM connector_tokens WHERE connector_id NOT IN (SELECT id FROM connectors);
ALTER TABLE connector_tokens ADD CONSTRAINT connector_tokens_connector_fk FOREIGN KEY (connector_id) REFERENCES connectors(id) ON DELETE CASCADE;
`;
