/**
 * The server-wide send policy kept in the database (docs/proxy.md#send-policy), and the per-user
 * lock rows the hourly mail limit reserves its slots under:
 * - `mail_server_policy`: one row (id 1), seeded from AIRLOCK_MAIL_* on first use, then changed by
 *   an admin through PUT /api/admin/mail-policy: allowed and blocked domains (JSON lists), what
 *   happens to any other recipient, the most recipients per message and messages per user per
 *   hour, the approval timeout, and who changed it when;
 * - `mail_send_locks`: one row per user that ever sent; a send's reservation updates it first, so
 *   the reservations of one user are made one at a time on every node (a row lock on PostgreSQL,
 *   the writer lock on SQLite), and the count it checks cannot change under it.
 */
const STAMP_SQLITE = "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))";
const STAMP_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

function tables(stamp: string): string {
  return `
CREATE TABLE mail_server_policy (
  id                 INTEGER PRIMARY KEY CHECK (id = 1),
  allow_domains      TEXT NOT NULL,
  block_domains      TEXT NOT NULL,
  other              TEXT NOT NULL CHECK (other IN ('allow','ask','block')),
  max_recipients     INTEGER NOT NULL,
  max_per_hour       INTEGER NOT NULL,
  approval_timeout_s INTEGER NOT NULL,
  updated_by         INTEGER,
  updated_at         TEXT NOT NULL DEFAULT ${stamp}
);

CREATE TABLE mail_send_locks (
  user_id     INTEGER PRIMARY KEY,
  reserved_at TEXT NOT NULL
);
CREATE INDEX mail_holds_user_state ON mail_holds(user_id, state, created_at);
`;
}

export const sqlite = tables(STAMP_SQLITE);
export const postgres = tables(STAMP_PG);
