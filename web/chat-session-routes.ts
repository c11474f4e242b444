/**
 * The chat's conversations around its turns (mounted in web/chat-routes.ts, in the same order
 * as before): the user's decision on a held send, the models on offer, the session list (with
 * search and each chat's running turn), a chat's history, rename / model switch, and delete.
 */
import { Router } from 'express';
import { AppError, isAppError } from '../core/index.js';
import { logAction } from '../domain/action-log.js';
import * as store from '../domain/chat/store.js';
import type { TurnService } from '../domain/chat/turn-service.js';
import type { ApprovalDecisionResponse, ChatSessionInfo, ChatSessionList } from './chat-api.js';
import { chatModelRoutes, checkPick, effectiveIds, recordPick } from './chat-model-routes.js';
import { chatHistory } from './chat-more-routes.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { validateBody } from './validate.js';
import { onOwnedChat, type OwnedSession } from './chat-route-kit.js';
import { ApprovalDecisionSchema, RenameSessionSchema } from '../core/api-requests.js';

/** Longest search query (GET /sessions?q=). */
const MAX_QUERY_CHARS = 200;

export interface ChatSessionDeps {
  /** The user's own session, else 404 ERR_CHAT_SESSION_NOT_FOUND. */
  owned: OwnedSession;
  turns: TurnService;
}

export function chatSessionRoutes(ctx: WebContext, { owned, turns }: ChatSessionDeps): Router {
  const r = Router();
  const db = ctx.database.sql;

  // The user's decision on a mail send held for approval (docs/chat.md#approvals): only the
  // session's own user, with the session cookie and CSRF check of every POST.
  r.post(
    '/sessions/:id/approvals/:approvalId',
    ...onOwnedChat(owned, async (req, res, s) => {
      const approvalId = String(req.params.approvalId);
      if (!/^[A-Za-z0-9-]{1,64}$/.test(approvalId))
        throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
      const body = validateBody(ApprovalDecisionSchema, req.body);
      const d = await ctx.services.approvals.decide({
        userId: req.user!.id,
        sessionId: s.id,
        approvalId,
        decision: body.decision,
        scope: body.scope ?? 'once',
      });
      req.log.info({ sessionId: s.id, approvalId, ...d }, 'mail send decided by the user');
      const out: ApprovalDecisionResponse = { approval_id: approvalId, ...d };
      res.json(out);
    }),
  );

  // The models on offer and the one that answers (web/chat-model-routes.ts).
  r.use(chatModelRoutes(ctx));

  r.get(
    '/sessions',
    requireUser,
    asyncHandler(async (req, res) => {
      const q = req.query.q === undefined ? '' : String(req.query.q).trim();
      if (q.length > MAX_QUERY_CHARS)
        throw new AppError('ERR_VALIDATION', `the search text is longer than ${MAX_QUERY_CHARS} characters`);
      const list = await store.listSessions(db, req.user!.id, q || undefined);
      const modelOf = await effectiveIds(ctx);
      const out: ChatSessionList = {
        sessions: list.map((x) => ({
          ...x,
          model_id: modelOf(x.model_id),
          running_turn_id: turns.runningIn(x.id)?.turnId ?? null,
        })),
      };
      res.json(out);
    }),
  );

  r.get(
    '/sessions/:id/messages',
    ...onOwnedChat(owned, async (req, res, s) => {
      res.json(await chatHistory(ctx, s));
    }),
  );

  r.use(sessionChangeRoutes(ctx, { owned, turns }));
  return r;
}

/** PATCH and DELETE /sessions/:id: rename or switch the model, and delete a conversation. */
function sessionChangeRoutes(ctx: WebContext, { owned, turns }: ChatSessionDeps): Router {
  const r = Router();
  const db = ctx.database.sql;
  r.patch(
    '/sessions/:id',
    ...onOwnedChat(owned, async (req, res, s) => {
      const body = validateBody(RenameSessionSchema, req.body);
      // Switching the model mid-chat: never under a running turn; its next turn runs with it.
      if (body.model_id && turns.runningIn(s.id))
        throw new AppError('ERR_SESSION_BUSY', 'a turn is running in this chat; switch the model when it ends');
      if (body.model_id) await checkPick(ctx, req.user!.id, body.model_id);
      const after = await store.inTransaction(db, async (trx) => {
        if (body.title !== undefined) {
          await store.renameSession(trx, s.id, body.title);
          await logAction(trx, {
            event: 'chat.renamed',
            actorId: req.user!.id,
            subjectId: req.user!.id,
            data: { session_id: s.id },
          });
        }
        if (body.model_id) await recordPick(trx, req.user!.id, s.id, body.model_id);
        return (await store.getOwnedSession(trx, req.user!.id, s.id))!;
      });
      const model_id = (await effectiveIds(ctx))(after.model_id);
      const out: ChatSessionInfo = {
        id: after.id,
        title: after.title,
        created_at: after.created_at,
        updated_at: after.updated_at,
        model_id,
      };
      res.json(out);
    }),
  );

  // Delete a conversation: its running turn is stopped, its sandbox ended, its history removed.
  r.delete(
    '/sessions/:id',
    ...onOwnedChat(owned, async (req, res, s) => {
      const stopped = turns.stopSession(s.id);
      let sandboxEnded = false;
      try {
        await ctx.services.sandboxAdmin.kill(s.id);
        sandboxEnded = true;
      } catch (err) {
        // No live sandbox for this chat (reaped, never started), or none on this server: nothing to end.
        if (!isAppError(err, 'ERR_SESSION_NOT_FOUND') && !isAppError(err, 'ERR_RUNTIME_UNAVAILABLE')) throw err;
      }
      await store.inTransaction(db, async (trx) => {
        await store.deleteSession(trx, s.id);
        await logAction(trx, {
          event: 'chat.deleted',
          actorId: req.user!.id,
          subjectId: req.user!.id,
          data: { session_id: s.id, sandbox_ended: sandboxEnded },
        });
      });
      stopped.forget();
      req.log.info({ sessionId: s.id, sandboxEnded }, 'chat session deleted');
      res.status(204).end();
    }),
  );

  return r;
}
