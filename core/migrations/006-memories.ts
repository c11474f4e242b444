/**
 * Memory entries per user (fetch_memory, /api/memories). `source` names where an entry came
 * from (e.g. user, chat, bi); entries with source `bi` never reach the agent (docs/rules.md#data-access-rules, rule 7).
 */
export const up = `
CREATE TABLE memories (
  id         INTEGER PRIMARY KEY,
  user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  content    TEXT NOT NULL,
  source     TEXT NOT NULL DEFAULT 'user',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX memories_user ON memories(user_id, id);
`;
