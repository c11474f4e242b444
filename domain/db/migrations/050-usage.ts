/**
 * Usage and budgets (docs/usage.md):
 * - `usage_daily`: one row per (UTC day, user, model) summing what that user's chat turns on that
 *   model used — turns, the provider-reported input and output tokens, tool calls, mails sent,
 *   and the cost at the model's price when the turn ended (null price: no cost). Written in the
 *   transaction that ends the turn; it outlives the chats (a deleted chat's usage still counts).
 *   Rows go with their user; a deleted model's rows keep its id (no foreign key).
 * - `usage_budgets`: an admin's cap for a user or a team, in tokens or cost, per UTC day or month.
 * - `chat_models` gets a price per million input and output tokens and its currency.
 */
const NOW_SQLITE = `(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;
const NOW_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

const steps = (now: string, id: string, real: string) => `
CREATE TABLE usage_daily (
  day           TEXT NOT NULL,
  user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  model_id      TEXT NOT NULL,
  turns         INTEGER NOT NULL DEFAULT 0,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  tool_calls    INTEGER NOT NULL DEFAULT 0,
  mails         INTEGER NOT NULL DEFAULT 0,
  cost          ${real} NOT NULL DEFAULT 0,
  PRIMARY KEY (day, user_id, model_id)
);
CREATE INDEX usage_daily_user ON usage_daily(user_id, day);
CREATE TABLE usage_budgets (
  id          ${id},
  scope       TEXT NOT NULL CHECK (scope IN ('user','team')),
  subject_id  INTEGER NOT NULL,
  metric      TEXT NOT NULL CHECK (metric IN ('tokens','cost')),
  period      TEXT NOT NULL CHECK (period IN ('day','month')),
  amount      ${real} NOT NULL CHECK (amount >= 0),
  created_at  TEXT NOT NULL DEFAULT ${now},
  updated_at  TEXT NOT NULL DEFAULT ${now},
  UNIQUE (scope, subject_id, metric, period)
);
ALTER TABLE chat_models ADD COLUMN price_input_per_mtok ${real};
ALTER TABLE chat_models ADD COLUMN price_output_per_mtok ${real};
ALTER TABLE chat_models ADD COLUMN price_currency TEXT;
`;

export const sqlite = steps(NOW_SQLITE, 'INTEGER PRIMARY KEY AUTOINCREMENT', 'REAL');
export const postgres = steps(NOW_PG, 'SERIAL PRIMARY KEY', 'DOUBLE PRECISION');
