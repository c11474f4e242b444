/**
 * A user's own settings and chat titles made from the first exchange (docs/chat.md "Settings",
 * "Chat titles"): the model a new chat starts with (`users.default_model_id`, null: the server's
 * default) and where a chat's title came from (`chat_sessions.title_source`: 'message' the first
 * message, provisional; 'model' or 'fallback' made after the first turn; 'user' renamed, never
 * overwritten).
 */
const SQL = `
ALTER TABLE users ADD COLUMN default_model_id TEXT;
ALTER TABLE chat_sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT 'message';
`;
export const sqlite = SQL;
export const postgres = SQL;
