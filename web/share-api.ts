/**
 * The shapes of the share and feedback routes (web/share-routes.ts, web/feedback-routes.ts),
 * shared by the server and the browser UI. docs/chat.md "Sharing a chat" and "Feedback on answers".
 */
import type { StoredTurn } from '../core/chat-history.js';

/** GET /api/chat/sessions/:id/share: whether the chat has a live link (its token is never shown again). */
export interface ShareState {
  shared: boolean;
  created_at: string | null;
}

/** POST /api/chat/sessions/:id/share (201): the new link, shown this once. */
export interface ShareCreated {
  shared: true;
  created_at: string;
  token: string;
  /** The page that opens it: <public origin>/#/share/<token>. */
  url: string;
}

/** GET /api/share/:token: the chat as the link shows it, read-only. */
export interface SharedChat {
  title: string;
  owner: string;
  shared_at: string;
  turns: StoredTurn[];
  usage: { input_tokens: number; output_tokens: number };
}

export type FeedbackRating = 'up' | 'down';

/** PUT /api/chat/sessions/:id/turns/:turnId/feedback body. */
export interface FeedbackRequest {
  rating: FeedbackRating;
  /** At most 2,000 characters; empty or absent: no note. */
  note?: string;
}

/** One user's feedback on one turn. */
export interface FeedbackEntry {
  turn_id: string;
  rating: FeedbackRating;
  note: string | null;
  updated_at: string;
}

/** GET /api/chat/sessions/:id/feedback: the caller's feedback on the chat's turns. */
export interface FeedbackList {
  feedback: FeedbackEntry[];
}
