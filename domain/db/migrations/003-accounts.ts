/**
 * Connected workspace accounts (the "OAuth credential record" of docs/rules.md#identity-rules), one per user,
 * separate from login. Tokens are AES-256-GCM ciphertext (core/crypto.ts Encryptor).
 */
export const sqlite = `
CREATE TABLE connected_accounts (
  user_id           INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  provider          TEXT NOT NULL DEFAULT 'google',
  email             TEXT,
  scopes            TEXT NOT NULL,
  refresh_token_enc TEXT,
  access_token_enc  TEXT,
  access_expires_at INTEGER,
  connected_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
`;

export const postgres = `
CREATE TABLE connected_accounts (
  user_id           INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  provider          TEXT NOT NULL DEFAULT 'google',
  email             TEXT,
  scopes            TEXT NOT NULL,
  refresh_token_enc TEXT,
  access_token_enc  TEXT,
  access_expires_at BIGINT,
  connected_at      TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  updated_at        TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
`;
