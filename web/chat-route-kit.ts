/**
 * The prologue the chat's routes share (web/chat-routes.ts and the route files it mounts,
 * web/feedback-routes.ts, web/share-routes.ts): a signed-in caller, then the caller's own chat,
 * then the route's work. Another user's chat reads exactly like a missing one (404).
 */
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../core/index.js';
import { getOwnedSession, type ChatSessionRow } from '../domain/chat/store.js';
import type { Sql } from '../domain/db/index.js';
import { asyncHandler, requireUser } from './context.js';

/** The user's own chat session, else 404 ERR_CHAT_SESSION_NOT_FOUND. */
export type OwnedSession = (userId: number, id: string) => Promise<ChatSessionRow>;

/** `OwnedSession` over the store: another user's session reads exactly like a missing one. */
export function ownedSessions(db: Sql): OwnedSession {
  return async (userId, id) => {
    const s = await getOwnedSession(db, userId, id);
    if (!s) throw new AppError('ERR_CHAT_SESSION_NOT_FOUND', 'no such chat session');
    return s;
  };
}

/** A route's handlers for a signed-in caller (401 ERR_AUTH_REQUIRED first). */
export function signedIn(handle: (req: Request, res: Response) => Promise<unknown>): RequestHandler[] {
  return [requireUser, asyncHandler(handle)];
}

/** A route's handlers on the caller's own chat `:id`: signed in (401), then the chat (404), then `handle` with it. */
export function onOwnedChat(
  owned: OwnedSession,
  handle: (req: Request, res: Response, s: ChatSessionRow) => Promise<unknown>,
): RequestHandler[] {
  return signedIn(async (req, res) => handle(req, res, await owned(req.user!.id, String(req.params.id))));
}
