import type { Db } from '../db.js';

/**
 * Data-access control (docs/rules.md#data-access-rules): roles, per-table grants with
 * column lists and row filters, user assignments, and the `bi` entitlement bit.
 *
 * Initial setup (docs/rules.md#data-access-rules, rule 5): the built-in role `bi_admin` with the unrestricted grant
 * (table "*", columns ["*"], empty row filter), assigned to every superuser that exists
 * when this migration runs; each of them gets the `bi` bit, written to the action log.
 * Users created later (superusers included) get no data role until one is assigned.
 */
export function up(db: Db): void {
  db.exec(`
CREATE TABLE data_roles (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
  description TEXT NOT NULL DEFAULT '',
  builtin     INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);

CREATE TABLE data_policies (
  id              INTEGER PRIMARY KEY,
  role_id         INTEGER NOT NULL REFERENCES data_roles(id) ON DELETE CASCADE,
  table_name      TEXT NOT NULL,
  allowed_columns TEXT NOT NULL,
  row_filter      TEXT NOT NULL DEFAULT '{}',
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (role_id, table_name)
);

CREATE TABLE user_data_roles (
  id          INTEGER PRIMARY KEY,
  user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role_id     INTEGER NOT NULL REFERENCES data_roles(id) ON DELETE CASCADE,
  assigned_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (user_id, role_id)
);
CREATE INDEX user_data_roles_role ON user_data_roles(role_id);

CREATE TABLE user_entitlements (
  user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  granted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY (user_id, name)
);
`);
  const role = db
    .prepare("INSERT INTO data_roles (name, description, builtin) VALUES ('bi_admin', 'Unrestricted access to every table', 1)")
    .run();
  const roleId = Number(role.lastInsertRowid);
  db.prepare("INSERT INTO data_policies (role_id, table_name, allowed_columns, row_filter) VALUES (?, '*', '[\"*\"]', '{}')").run(roleId);
  const supers = db.prepare('SELECT id FROM users WHERE is_superuser = 1 ORDER BY id').all() as { id: number }[];
  const assign = db.prepare('INSERT INTO user_data_roles (user_id, role_id) VALUES (?, ?)');
  const bit = db.prepare("INSERT OR IGNORE INTO user_entitlements (user_id, name) VALUES (?, 'bi')");
  const log = db.prepare("INSERT INTO action_log (event, severity, subject_id, data) VALUES (?, 'info', ?, ?)");
  for (const { id } of supers) {
    assign.run(id, roleId);
    log.run('data.assignment.created', id, JSON.stringify({ role_id: roleId, role: 'bi_admin', initial_setup: true }));
    bit.run(id);
    log.run('bi.entitlement.granted', id, JSON.stringify({ entitlement: 'bi', bi: true, initial_setup: true }));
  }
}
