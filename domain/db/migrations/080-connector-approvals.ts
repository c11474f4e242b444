/**
 * Connector approvals kept with the turn (docs/connectors.md, "Approval binding"): each call of a
 * connector tool marked ask that the egress gateway held for the user, with the connector, the
 * tool, the exact arguments it would forward and the decision. The chat shows its card from here
 * after a reload or a restart, as a mail send's comes from `mail_holds`. A row goes with its chat
 * or turn (deleted beside chat_turns) and with its user; the action log keeps the decision without
 * the arguments.
 */
const STAMP_SQLITE = "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))";
const STAMP_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

function steps(stamp: string): string {
  return `
CREATE TABLE connector_approvals (
  id              TEXT PRIMARY KEY,
  session_id      TEXT NOT NULL,
  turn_id         TEXT NOT NULL,
  call_id         TEXT,
  user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  connector_id    TEXT NOT NULL,
  connector_label TEXT NOT NULL,
  tool            TEXT NOT NULL,
  arguments       TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending','approved','denied','timed_out')),
  created_at      TEXT NOT NULL DEFAULT ${stamp},
  decided_at      TEXT
);
CREATE INDEX connector_approvals_turn ON connector_approvals(session_id, turn_id);
CREATE INDEX connector_approvals_user ON connector_approvals(user_id);
`;
}

export const sqlite = steps(STAMP_SQLITE);
export const postgres = steps(STAMP_PG);
