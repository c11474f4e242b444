/**
 * Feedback on answers (docs/chat.md "Feedback on answers"): a thumbs up or down per assistant
 * turn with an optional note, one per user per turn (a new rating replaces the old one).
 * Deleting the turn or the user deletes it.
 */
const NOW_SQLITE = `(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;
const NOW_PG = `(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

const table = (now: string) => `
CREATE TABLE chat_feedback (
  turn_id    TEXT NOT NULL REFERENCES chat_turns(id) ON DELETE CASCADE,
  user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  rating     TEXT NOT NULL CHECK (rating IN ('up','down')),
  note       TEXT,
  created_at TEXT NOT NULL DEFAULT ${now},
  updated_at TEXT NOT NULL DEFAULT ${now},
  PRIMARY KEY (turn_id, user_id)
);
CREATE INDEX chat_feedback_rating ON chat_feedback(rating);
`;

export const sqlite = table(NOW_SQLITE);
export const postgres = table(NOW_PG);
