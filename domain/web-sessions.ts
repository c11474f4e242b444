import type { Sql } from './db/index.js';

/** One stored login session: express-session's JSON, its owner (when signed in) and expiry (ms). */
export interface WebSessionRecord {
  userId: number | null;
  data: string;
  expiresAt: number;
}

/** The session's JSON, unless it is missing or expired at `now`. */
export async function readWebSession(db: Sql, sid: string, now = Date.now()): Promise<string | undefined> {
  const r = await db
    .selectFrom('web_sessions')
    .select(['data', 'expires_at'])
    .where('sid', '=', sid)
    .executeTakeFirst();
  return r && Number(r.expires_at) > now ? r.data : undefined;
}

/** Create or replace a session. */
export async function writeWebSession(db: Sql, sid: string, s: WebSessionRecord): Promise<void> {
  await db
    .insertInto('web_sessions')
    .values({ sid, user_id: s.userId, data: s.data, expires_at: s.expiresAt })
    .onConflict((oc) =>
      oc.column('sid').doUpdateSet((eb) => ({
        user_id: eb.ref('excluded.user_id'),
        data: eb.ref('excluded.data'),
        expires_at: eb.ref('excluded.expires_at'),
      })),
    )
    .execute();
}

export async function touchWebSession(db: Sql, sid: string, expiresAt: number): Promise<void> {
  await db.updateTable('web_sessions').set({ expires_at: expiresAt }).where('sid', '=', sid).execute();
}

export async function deleteWebSession(db: Sql, sid: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('sid', '=', sid).execute();
}

/** End every login session of a user (deactivation, password change); returns how many. Pass the transaction when there is one. */
export async function deleteUserWebSessions(db: Sql, userId: number): Promise<number> {
  const r = await db.deleteFrom('web_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** End every login session of a user but one (their own password change keeps the session that made it). */
export async function deleteOtherWebSessions(db: Sql, userId: number, keepSid: string): Promise<number> {
  const r = await db
    .deleteFrom('web_sessions')
    .where('user_id', '=', userId)
    .where('sid', '<>', keepSid)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Remove the sessions expired at `now`; returns how many. */
export async function pruneWebSessions(db: Sql, now = Date.now()): Promise<number> {
  const r = await db.deleteFrom('web_sessions').where('expires_at', '<=', now).executeTakeFirst();
  return Number(r.numDeletedRows);
}
