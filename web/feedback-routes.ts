import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError } from '../core/index.js';
import * as store from '../domain/chat/store.js';
import { clearFeedback, feedbackInSession, MAX_NOTE_CHARS, setFeedback } from '../domain/chat/feedback.js';
import type { WebContext } from './context.js';
import { onOwnedChat, ownedSessions } from './chat-route-kit.js';
import type { FeedbackEntry, FeedbackList } from './share-api.js';

export const FeedbackSchema = z
  .object({
    rating: z.enum(['up', 'down']),
    note: z.string().max(MAX_NOTE_CHARS).optional(),
  })
  .strict();

const ID_RE = /^[A-Za-z0-9-]{1,64}$/;

/**
 * Feedback on answers (docs/chat.md "Feedback on answers"), mounted at /api/chat: the chat's
 * owner rates a finished turn's answer up or down with an optional note (≤ 2,000 characters).
 * PUT …/turns/:turnId/feedback sets or changes it, DELETE takes it back, GET /sessions/:id/feedback
 * lists the caller's. Another user's chat or turn is 404; /metrics counts ratings given
 * (airlock_chat_feedback_total{rating}); the admin turn audit page shows them.
 */
export function feedbackRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;

  const owned = ownedSessions(db);
  // The turn `:turnId` of the caller's own chat `s` (checked first: web/chat-route-kit.ts).
  const turnOf = async (req: Request, s: store.ChatSessionRow) => {
    const turnId = String(req.params.turnId);
    const t = ID_RE.test(turnId) ? await store.storedTurn(db, s.id, turnId) : undefined;
    if (!t) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
    return t;
  };

  r.get(
    '/sessions/:id/feedback',
    ...onOwnedChat(owned, async (req, res, s) => {
      const rows = await feedbackInSession(db, s.id, req.user!.id);
      const out: FeedbackList = {
        feedback: rows.map((f) => ({ turn_id: f.turn_id, rating: f.rating, note: f.note, updated_at: f.updated_at })),
      };
      res.setHeader('Cache-Control', 'no-store');
      res.json(out);
    }),
  );

  r.put(
    '/sessions/:id/turns/:turnId/feedback',
    ...onOwnedChat(owned, async (req, res, s) => {
      const t = await turnOf(req, s);
      const body = FeedbackSchema.safeParse(req.body);
      if (!body.success)
        throw new AppError(
          'ERR_VALIDATION',
          `rating must be up or down; note at most ${MAX_NOTE_CHARS} characters; nothing else`,
        );
      if (t.status !== 'done')
        throw new AppError('ERR_FEEDBACK_TURN_RUNNING', 'the answer is still running: rate it when it ends');
      const note = body.data.note?.trim() || null;
      const { row, before } = await setFeedback(db, t.turn_id, req.user!.id, body.data.rating, note);
      if (before !== row.rating) ctx.services.metrics.chatFeedback.inc({ rating: row.rating });
      const out: FeedbackEntry = {
        turn_id: row.turn_id,
        rating: row.rating,
        note: row.note,
        updated_at: row.updated_at,
      };
      res.json(out);
    }),
  );

  r.delete(
    '/sessions/:id/turns/:turnId/feedback',
    ...onOwnedChat(owned, async (req, res, s) => {
      const t = await turnOf(req, s);
      await clearFeedback(db, t.turn_id, req.user!.id);
      res.status(204).end();
    }),
  );

  return r;
}
