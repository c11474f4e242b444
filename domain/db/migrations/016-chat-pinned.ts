/** Chats a user pinned stay at the top of their list (docs/chat.md "GET /api/chat/sessions"). */
const SQL = `
ALTER TABLE chat_sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
`;
export const sqlite = SQL;
export const postgres = SQL;
