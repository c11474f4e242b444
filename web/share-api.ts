/**
 * The shapes of the share and feedback routes (web/share-routes.ts, web/feedback-routes.ts),
 * shared by the server and the browser UI (types only there). docs/chat.md "Sharing a chat" and
 * "Feedback on answers".
 */
import { z } from 'zod';
import { StoredTurn, TokenUsage } from '../core/chat-history.js';

/** GET /api/chat/sessions/:id/share: whether the chat has a live link (its token is never shown again). */
export const ShareState = z.strictObject({ shared: z.boolean(), created_at: z.string().nullable() });
export type ShareState = z.infer<typeof ShareState>;

/** POST /api/chat/sessions/:id/share (201): the new link, shown this once. */
export const ShareCreated = z.strictObject({
  shared: z.literal(true),
  created_at: z.string(),
  token: z.string(),
  /** The page that opens it: <public origin>/#/share/<token>. */
  url: z.string(),
});
export type ShareCreated = z.infer<typeof ShareCreated>;

/** GET /api/share/:token: the chat as the link shows it, read-only. */
export const SharedChat = z.strictObject({
  title: z.string(),
  owner: z.string(),
  shared_at: z.string(),
  turns: z.array(StoredTurn),
  usage: TokenUsage,
});
export type SharedChat = z.infer<typeof SharedChat>;

export const FeedbackRating = z.enum(['up', 'down']);
export type FeedbackRating = z.infer<typeof FeedbackRating>;

/** PUT /api/chat/sessions/:id/turns/:turnId/feedback body. */
export interface FeedbackRequest {
  rating: FeedbackRating;
  /** At most 2,000 characters; empty or absent: no note. */
  note?: string;
}

/** One user's feedback on one turn. */
export const FeedbackEntry = z.strictObject({
  turn_id: z.string(),
  rating: FeedbackRating,
  note: z.string().nullable(),
  updated_at: z.string(),
});
export type FeedbackEntry = z.infer<typeof FeedbackEntry>;

/** GET /api/chat/sessions/:id/feedback: the caller's feedback on the chat's turns. */
export const FeedbackList = z.strictObject({ feedback: z.array(FeedbackEntry) });
export type FeedbackList = z.infer<typeof FeedbackList>;
