import type { Sql } from './db/index.js';

/** What an admin recognises a live session by, beside its ids: the chat's title, its owner's names. */
export interface SessionLabels {
  titles: Map<string, string>;
  users: Map<number, { username: string; display_name: string | null }>;
}

/** Titles of these chat sessions and names of these users, in two queries. */
export async function sessionLabels(db: Sql, sessionIds: string[], userIds: number[]): Promise<SessionLabels> {
  const [chats, users] = await Promise.all([
    sessionIds.length ? db.selectFrom('chat_sessions').select(['id', 'title']).where('id', 'in', sessionIds).execute() : [],
    userIds.length ? db.selectFrom('users').select(['id', 'username', 'display_name']).where('id', 'in', userIds).execute() : [],
  ]);
  return {
    titles: new Map(chats.map((c) => [c.id, c.title])),
    users: new Map(users.map((u) => [u.id, { username: u.username, display_name: u.display_name }])),
  };
}
