import { sql } from 'kysely';
import type { Sql } from './db/index.js';

/** What an admin recognises a live session by, beside its ids: the chat's title, its owner's names. */
export interface SessionLabels {
  titles: Map<string, string>;
  users: Map<number, { username: string; display_name: string | null }>;
  /** When each chat was created: the live-sessions list keeps this order (a restart does not move a row). */
  created: Map<string, string>;
  /** The chat's turns so far: a restarted sandbox starts at 0, the chat does not. */
  turns: Map<string, number>;
}

/** Titles, creation times and turn counts of these chat sessions and names of these users, in three queries. */
export async function sessionLabels(db: Sql, sessionIds: string[], userIds: number[]): Promise<SessionLabels> {
  const [chats, users, turns] = await Promise.all([
    sessionIds.length
      ? db.selectFrom('chat_sessions').select(['id', 'title', 'created_at']).where('id', 'in', sessionIds).execute()
      : [],
    userIds.length
      ? db.selectFrom('users').select(['id', 'username', 'display_name']).where('id', 'in', userIds).execute()
      : [],
    sessionIds.length
      ? db
          .selectFrom('chat_turns')
          .select(['session_id', sql<number>`count(*)`.as('n')])
          .where('session_id', 'in', sessionIds)
          .groupBy('session_id')
          .execute()
      : [],
  ]);
  return {
    titles: new Map(chats.map((c) => [c.id, c.title])),
    users: new Map(users.map((u) => [u.id, { username: u.username, display_name: u.display_name }])),
    created: new Map(chats.map((c) => [c.id, String(c.created_at)])),
    // PostgreSQL answers count(*) as a bigint string.
    turns: new Map(turns.map((r) => [r.session_id, Number(r.n)])),
  };
}
