/** Users and web sessions (express-session store). */
export const up = `
CREATE TABLE users (
  id            INTEGER PRIMARY KEY,
  username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
  email         TEXT UNIQUE COLLATE NOCASE,
  display_name  TEXT,
  password_hash TEXT,
  is_superuser  INTEGER NOT NULL DEFAULT 0,
  is_active     INTEGER NOT NULL DEFAULT 1,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  last_login_at TEXT
);

CREATE TABLE web_sessions (
  sid        TEXT PRIMARY KEY,
  user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE,
  data       TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
CREATE INDEX web_sessions_user ON web_sessions(user_id);

CREATE TABLE action_log (
  id         INTEGER PRIMARY KEY,
  event      TEXT NOT NULL,
  severity   TEXT NOT NULL DEFAULT 'info' CHECK (severity IN ('info','warning','critical')),
  actor_id   INTEGER REFERENCES users(id) ON DELETE SET NULL,
  subject_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
  data       TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX action_log_event ON action_log(event, created_at);
CREATE INDEX action_log_severity ON action_log(severity, created_at);
`;
