/**
 * Identity: IdP connections (SSO + directory sync), external identities, synced directory
 * users and groups, organisations, teams, agent policies and directory-sync jobs.
 */
export const sqlite = `
CREATE TABLE idp_connections (
  id                    INTEGER PRIMARY KEY,
  provider              TEXT NOT NULL UNIQUE,
  display_name          TEXT NOT NULL,
  issuer                TEXT NOT NULL,
  client_id             TEXT NOT NULL,
  client_secret_enc     TEXT,
  service_account_enc   TEXT,
  service_account_email TEXT,
  delegated_admin_email TEXT,
  customer              TEXT NOT NULL DEFAULT 'my_customer',
  is_active             INTEGER NOT NULL DEFAULT 1,
  last_sync_started_at  TEXT,
  last_sync_finished_at TEXT,
  last_sync_succeeded_at TEXT,
  created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);

CREATE TABLE external_identities (
  id            INTEGER PRIMARY KEY,
  user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  sub           TEXT NOT NULL,
  email         TEXT,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  last_login_at TEXT,
  UNIQUE (connection_id, sub)
);
CREATE INDEX external_identities_user ON external_identities(user_id);

-- One row per directory user ever seen by sync; present = 0 once gone from the directory.
CREATE TABLE directory_users (
  connection_id       INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  directory_id        TEXT NOT NULL,
  user_id             INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  email               TEXT NOT NULL,
  full_name           TEXT,
  suspended           INTEGER NOT NULL DEFAULT 0,
  archived            INTEGER NOT NULL DEFAULT 0,
  present             INTEGER NOT NULL DEFAULT 1,
  deactivated_by_sync INTEGER NOT NULL DEFAULT 0,
  synced_at           TEXT NOT NULL,
  PRIMARY KEY (connection_id, directory_id),
  UNIQUE (connection_id, user_id)
);

CREATE TABLE external_groups (
  id            INTEGER PRIMARY KEY,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  directory_id  TEXT NOT NULL,
  email         TEXT NOT NULL,
  name          TEXT NOT NULL,
  description   TEXT NOT NULL DEFAULT '',
  synced_at     TEXT NOT NULL,
  UNIQUE (connection_id, directory_id)
);

CREATE TABLE external_group_members (
  group_id INTEGER NOT NULL REFERENCES external_groups(id) ON DELETE CASCADE,
  user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
CREATE INDEX external_group_members_user ON external_group_members(user_id);

CREATE TABLE organisations (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);

CREATE TABLE organisation_members (
  organisation_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role            TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('member','manager')),
  PRIMARY KEY (organisation_id, user_id)
) WITHOUT ROWID;
CREATE INDEX organisation_members_user ON organisation_members(user_id);

CREATE TABLE teams (
  id                INTEGER PRIMARY KEY,
  organisation_id   INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  external_group_id INTEGER REFERENCES external_groups(id) ON DELETE SET NULL,
  created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (organisation_id, name)
);
CREATE INDEX teams_group ON teams(external_group_id);

CREATE TABLE team_members (
  team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (team_id, user_id)
) WITHOUT ROWID;
CREATE INDEX team_members_user ON team_members(user_id);

CREATE TABLE agent_policies (
  id              INTEGER PRIMARY KEY,
  organisation_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  applies_to      TEXT NOT NULL CHECK (applies_to IN ('all','teams')),
  allowed_tools   TEXT,
  allowed_models  TEXT,
  denied_tools    TEXT NOT NULL DEFAULT '[]',
  denied_models   TEXT NOT NULL DEFAULT '[]',
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (organisation_id, name)
);

CREATE TABLE agent_policy_teams (
  policy_id INTEGER NOT NULL REFERENCES agent_policies(id) ON DELETE CASCADE,
  team_id   INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  PRIMARY KEY (policy_id, team_id)
) WITHOUT ROWID;

-- The sandbox policy last written for a user (rewritten when their teams change).
CREATE TABLE user_agent_policies (
  user_id    INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  policy     TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE directory_sync_jobs (
  id            INTEGER PRIMARY KEY,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','succeeded','failed')),
  trigger       TEXT NOT NULL CHECK (trigger IN ('manual','scheduled')),
  requested_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
  result        TEXT,
  error         TEXT,
  progress      TEXT,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  started_at    TEXT,
  finished_at   TEXT
);
CREATE INDEX directory_sync_jobs_conn ON directory_sync_jobs(connection_id, id);
-- At most one unfinished job per connection, enforced by the database (docs/rules.md#identity-rules: no overlap).
CREATE UNIQUE INDEX directory_sync_jobs_one_running ON directory_sync_jobs(connection_id)
  WHERE status IN ('pending','running');
`;

export const postgres = `
CREATE TABLE idp_connections (
  id                    INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  provider              TEXT NOT NULL UNIQUE,
  display_name          TEXT NOT NULL,
  issuer                TEXT NOT NULL,
  client_id             TEXT NOT NULL,
  client_secret_enc     TEXT,
  service_account_enc   TEXT,
  service_account_email TEXT,
  delegated_admin_email TEXT,
  customer              TEXT NOT NULL DEFAULT 'my_customer',
  is_active             INTEGER NOT NULL DEFAULT 1,
  last_sync_started_at  TEXT,
  last_sync_finished_at TEXT,
  last_sync_succeeded_at TEXT,
  created_at            TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  updated_at            TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);

CREATE TABLE external_identities (
  id            INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  sub           TEXT NOT NULL,
  email         TEXT,
  created_at    TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  updated_at    TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  last_login_at TEXT,
  UNIQUE (connection_id, sub)
);
CREATE INDEX external_identities_user ON external_identities(user_id);

-- One row per directory user ever seen by sync; present = 0 once gone from the directory.
CREATE TABLE directory_users (
  connection_id       INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  directory_id        TEXT NOT NULL,
  user_id             INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  email               TEXT NOT NULL,
  full_name           TEXT,
  suspended           INTEGER NOT NULL DEFAULT 0,
  archived            INTEGER NOT NULL DEFAULT 0,
  present             INTEGER NOT NULL DEFAULT 1,
  deactivated_by_sync INTEGER NOT NULL DEFAULT 0,
  synced_at           TEXT NOT NULL,
  PRIMARY KEY (connection_id, directory_id),
  UNIQUE (connection_id, user_id)
);

CREATE TABLE external_groups (
  id            INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  directory_id  TEXT NOT NULL,
  email         TEXT NOT NULL,
  name          TEXT NOT NULL,
  description   TEXT NOT NULL DEFAULT '',
  synced_at     TEXT NOT NULL,
  UNIQUE (connection_id, directory_id)
);

CREATE TABLE external_group_members (
  group_id INTEGER NOT NULL REFERENCES external_groups(id) ON DELETE CASCADE,
  user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX external_group_members_user ON external_group_members(user_id);

CREATE TABLE organisations (
  id         INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);

CREATE TABLE organisation_members (
  organisation_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role            TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('member','manager')),
  PRIMARY KEY (organisation_id, user_id)
);
CREATE INDEX organisation_members_user ON organisation_members(user_id);

CREATE TABLE teams (
  id                INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  organisation_id   INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  external_group_id INTEGER REFERENCES external_groups(id) ON DELETE SET NULL,
  created_at        TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  updated_at        TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  UNIQUE (organisation_id, name)
);
CREATE INDEX teams_group ON teams(external_group_id);

CREATE TABLE team_members (
  team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members(user_id);

CREATE TABLE agent_policies (
  id              INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  organisation_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  applies_to      TEXT NOT NULL CHECK (applies_to IN ('all','teams')),
  allowed_tools   TEXT,
  allowed_models  TEXT,
  denied_tools    TEXT NOT NULL DEFAULT '[]',
  denied_models   TEXT NOT NULL DEFAULT '[]',
  created_at      TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  updated_at      TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  UNIQUE (organisation_id, name)
);

CREATE TABLE agent_policy_teams (
  policy_id INTEGER NOT NULL REFERENCES agent_policies(id) ON DELETE CASCADE,
  team_id   INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  PRIMARY KEY (policy_id, team_id)
);

-- The sandbox policy last written for a user (rewritten when their teams change).
CREATE TABLE user_agent_policies (
  user_id    INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  policy     TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE directory_sync_jobs (
  id            INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  connection_id INTEGER NOT NULL REFERENCES idp_connections(id) ON DELETE CASCADE,
  status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','succeeded','failed')),
  trigger       TEXT NOT NULL CHECK (trigger IN ('manual','scheduled')),
  requested_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
  result        TEXT,
  error         TEXT,
  progress      TEXT,
  created_at    TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  started_at    TEXT,
  finished_at   TEXT
);
CREATE INDEX directory_sync_jobs_conn ON directory_sync_jobs(connection_id, id);
-- At most one unfinished job per connection, enforced by the database (docs/rules.md#identity-rules: no overlap).
CREATE UNIQUE INDEX directory_sync_jobs_one_running ON directory_sync_jobs(connection_id)
  WHERE status IN ('pending','running');
CREATE UNIQUE INDEX organisations_name_ci ON organisations (lower(name));
`;
