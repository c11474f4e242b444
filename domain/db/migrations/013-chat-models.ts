/**
 * A model per chat (docs/chat.md "A model per chat"):
 * - `chat_models`: the models an admin offers — a short slug id, a label, the provider
 *   (openai | anthropic | demo), the model name, its base URL, its API key encrypted at rest with
 *   the install's at-rest key (`api_key_enc`, AES-256-GCM, bound to the row's id), its context
 *   budget in tokens, whether it is offered, and `version`, which grows with every change (a
 *   sandbox prepared for an older version of a chat's model is replaced before the next turn).
 *   The entry `default` is written from AIRLOCK_MODEL_* on first use; `env_managed` = 1 while no
 *   admin has changed it, so it keeps following the environment.
 * - `chat_sessions.model_id`: the chat's model (null: the server's default). Deleting a model sets
 *   its chats back to the default.
 */
const STAMP_SQLITE = "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))";
const STAMP_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

function steps(stamp: string): string {
  return `
CREATE TABLE chat_models (
  id             TEXT PRIMARY KEY,
  label          TEXT NOT NULL,
  provider       TEXT NOT NULL CHECK (provider IN ('openai','anthropic','demo')),
  model          TEXT NOT NULL,
  base_url       TEXT,
  api_key_enc    TEXT,
  context_tokens INTEGER NOT NULL,
  enabled        INTEGER NOT NULL DEFAULT 1,
  env_managed    INTEGER NOT NULL DEFAULT 0,
  version        INTEGER NOT NULL DEFAULT 1,
  created_at     TEXT NOT NULL DEFAULT ${stamp},
  updated_at     TEXT NOT NULL DEFAULT ${stamp}
);
ALTER TABLE chat_sessions ADD COLUMN model_id TEXT REFERENCES chat_models(id) ON DELETE SET NULL;
CREATE INDEX chat_sessions_model ON chat_sessions(model_id);
`;
}

export const sqlite = steps(STAMP_SQLITE);
export const postgres = steps(STAMP_PG);
