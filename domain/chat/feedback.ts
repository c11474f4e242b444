import { nowIso, type Row, type Sql } from '../db/index.js';

/**
 * Feedback on answers (migration 019, docs/chat.md "Feedback on answers"): a thumbs up or down
 * on a turn's answer with an optional note, one per user per turn; a new rating replaces the
 * old one. web/feedback-routes.ts checks the turn is the user's; the admin turn audit page
 * lists what a turn got.
 */

export type FeedbackRow = Row<'chat_feedback'>;
export type Rating = 'up' | 'down';

/** Longest note, in characters. */
export const MAX_NOTE_CHARS = 2000;

/** Set (or change) the user's feedback on a turn; returns the rating it replaced (undefined: none). */
export async function setFeedback(
  db: Sql,
  turnId: string,
  userId: number,
  rating: Rating,
  note: string | null,
): Promise<{ row: FeedbackRow; before: Rating | undefined }> {
  const old = await db
    .selectFrom('chat_feedback')
    .select('rating')
    .where('turn_id', '=', turnId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const at = nowIso();
  const row = await db
    .insertInto('chat_feedback')
    .values({ turn_id: turnId, user_id: userId, rating, note, created_at: at, updated_at: at })
    .onConflict((oc) => oc.columns(['turn_id', 'user_id']).doUpdateSet({ rating, note, updated_at: at }))
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, before: old?.rating };
}

/** Take the user's feedback on a turn back; returns whether there was one. */
export async function clearFeedback(db: Sql, turnId: string, userId: number): Promise<boolean> {
  const r = await db
    .deleteFrom('chat_feedback')
    .where('turn_id', '=', turnId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The user's feedback on the turns of a chat. */
export async function feedbackInSession(db: Sql, sessionId: string, userId: number): Promise<FeedbackRow[]> {
  return db
    .selectFrom('chat_feedback as f')
    .innerJoin('chat_turns as t', 't.id', 'f.turn_id')
    .selectAll('f')
    .where('t.session_id', '=', sessionId)
    .where('f.user_id', '=', userId)
    .orderBy('f.turn_id')
    .execute();
}

/** Everything a turn got, with who gave it (the admin turn audit page). */
export async function feedbackOnTurn(db: Sql, turnId: string): Promise<(FeedbackRow & { username: string | null })[]> {
  return db
    .selectFrom('chat_feedback as f')
    .leftJoin('users as u', 'u.id', 'f.user_id')
    .selectAll('f')
    .select('u.username')
    .where('f.turn_id', '=', turnId)
    .orderBy('f.updated_at')
    .execute();
}

/** How many answers got each rating (the admin count; /metrics counts the changes). */
export async function feedbackCounts(db: Sql): Promise<Record<Rating, number>> {
  const rows = await db
    .selectFrom('chat_feedback')
    .select(['rating', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('rating')
    .execute();
  const out: Record<Rating, number> = { up: 0, down: 0 };
  for (const r of rows) out[r.rating] = Number(r.n);
  return out;
}
