/**
 * The conversation belongs to the service (docs/chat.md):
 * - each turn keeps its model-facing items (`items`, a JSON array of core/transcript.ts items: the
 *   prompt, answers, tool calls and results, a stop or an error) and the tokens its model calls
 *   used (`input_tokens`, `output_tokens`, as the provider reported them);
 * - turns form a tree: `parent_id` names the turn a turn continues (null: the chat's first), so an
 *   edit or a regenerate is a sibling and the old branch stays; a chat's `head_turn_id` is the
 *   newest turn of the branch shown.
 * Existing chats become one branch: each turn's parent is the turn before it, the head the last.
 */
const COLUMNS = `
ALTER TABLE chat_turns ADD COLUMN parent_id TEXT;
ALTER TABLE chat_turns ADD COLUMN items TEXT;
ALTER TABLE chat_turns ADD COLUMN input_tokens INTEGER;
ALTER TABLE chat_turns ADD COLUMN output_tokens INTEGER;
ALTER TABLE chat_sessions ADD COLUMN head_turn_id TEXT;
CREATE INDEX chat_turns_parent ON chat_turns(session_id, parent_id);
UPDATE chat_turns SET parent_id = (
  SELECT p.id FROM chat_turns p
  WHERE p.session_id = chat_turns.session_id
    AND (p.started_at < chat_turns.started_at OR (p.started_at = chat_turns.started_at AND p.id < chat_turns.id))
  ORDER BY p.started_at DESC, p.id DESC LIMIT 1);
UPDATE chat_sessions SET head_turn_id = (
  SELECT t.id FROM chat_turns t WHERE t.session_id = chat_sessions.id ORDER BY t.started_at DESC, t.id DESC LIMIT 1);
`;

export const sqlite = COLUMNS;
export const postgres = COLUMNS;
