/**
 * Chat history: sessions owned by a user; turns with prompt, streamed text, stop reason and
 * error; tool calls with status and duration. Written by web/chat-routes.ts as a turn streams.
 */
export const up = `
CREATE TABLE chat_sessions (
  id         TEXT PRIMARY KEY,
  user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  title      TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX chat_sessions_user ON chat_sessions(user_id, updated_at);

CREATE TABLE chat_turns (
  id            TEXT PRIMARY KEY,
  session_id    TEXT NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
  prompt        TEXT NOT NULL,
  text          TEXT NOT NULL DEFAULT '',
  status        TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running','done')),
  stop_reason   TEXT CHECK (stop_reason IN ('end_turn','max_steps','error','cancelled')),
  error_code    TEXT,
  error_message TEXT,
  started_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  ended_at      TEXT
);
CREATE INDEX chat_turns_session ON chat_turns(session_id, started_at);

CREATE TABLE chat_tool_calls (
  id          INTEGER PRIMARY KEY,
  turn_id     TEXT NOT NULL REFERENCES chat_turns(id) ON DELETE CASCADE,
  call_id     TEXT NOT NULL,
  tool        TEXT NOT NULL,
  input       TEXT NOT NULL DEFAULT '{}',
  status      TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running','ok','error','cancelled')),
  output      TEXT,
  error       TEXT,
  duration_ms INTEGER,
  started_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (turn_id, call_id)
);
`;
