import { Router, type Request, type Response } from 'express';
import { AppError } from '../core/index.js';
import type { CancelTurnResponse } from './chat-api.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { onOwnedChat, ownedSessions } from './chat-route-kit.js';
import { TurnService, type LiveTurn } from '../domain/chat/turn-service.js';
import { chatMoreRoutes } from './chat-more-routes.js';
import { chatSessionRoutes, type ChatSessionDeps } from './chat-session-routes.js';
import { uploadRoutes } from './upload-routes.js';
import { approvalRoutes } from './approval-routes.js';
import { fleetForwarding } from './fleet.js';
import { validateBody } from './validate.js';
import { chatModel, checkPick } from './chat-model-routes.js';
import { SendMessageSchema } from '../core/api-requests.js';
import { titleAfterTurn } from '../domain/chat/titles.js';

/** The chat area's port (ctx.services.chat): the turn runner (domain/chat/turn-service.ts). */
export type { ChatService } from '../domain/chat/turn-service.js';

/**
 * /api/chat: POST /messages starts a turn and streams it as NDJSON (docs/chat.md "Chat stream");
 * the turn runs on in this process when the client goes away, and
 * GET /sessions/:id/turns/:turnId/events?after=SEQ replays and follows it; POST …/cancel stops it.
 * The turn itself lives in domain/chat/turn-service.ts; the conversations around it (list, rename,
 * delete, approvals) in web/chat-session-routes.ts.
 */
export function chatRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;
  // The turn itself (domain/chat/turn-service.ts): these routes parse, authorise and stream.
  const turns = new TurnService({
    sql: db,
    services: ctx.services,
    model: (sessionId) => chatModel(ctx, sessionId),
    // A new chat's title from its first exchange (never throws; docs/chat.md "Chat titles").
    onTurnEnd: (turn, _result, said) =>
      void titleAfterTurn(
        { db, encryptor: ctx.encryptor, model: ctx.config.model, log: ctx.log },
        turn.sessionId,
        said.prompt,
        said.answer,
      ),
  });
  // Another user's session reads exactly like a missing one (web/chat-route-kit.ts).
  const owned = ownedSessions(db);

  // A session whose sandbox another node of the fleet owns is served there (web/fleet.ts).
  r.use(fleetForwarding(ctx));
  r.use(turnRoutes(ctx, { owned, turns }));
  // Approvals, the models, the session list, rename and delete (web/chat-session-routes.ts).
  r.use(chatSessionRoutes(ctx, { owned, turns }));
  // A held send's message while it waits (web/approval-routes.ts).
  r.use(approvalRoutes(ctx, owned));
  // Attachments, export and branch switching (web/chat-more-routes.ts).
  r.use(chatMoreRoutes(ctx, { owned, busy: (id) => !!turns.runningIn(id) }));
  // Files the user uploads into the workspace (web/upload-routes.ts).
  r.use(uploadRoutes(ctx, { owned, log: ctx.log }));
  return r;
}

/** POST /messages, GET …/turns/:turnId/events, POST …/turns/:turnId/cancel. */
function turnRoutes(ctx: WebContext, { owned, turns }: ChatSessionDeps): Router {
  const r = Router();
  r.post(
    '/messages',
    requireUser,
    asyncHandler(async (req, res) => {
      if (!ctx.services.chat.runner) throw new AppError('ERR_CHAT_UNAVAILABLE', 'chat is not available on this server');
      const body = validateBody(SendMessageSchema, req.body);
      const user = req.user!;
      const session = body.session_id ? await owned(user.id, body.session_id) : undefined;
      turns.assertIdle(session?.id);
      // The chat's model (docs/chat.md "A model per chat"): a new chat's, or a switch before this turn.
      if (body.model_id) await checkPick(ctx, user.id, body.model_id);
      const turn = await turns.start({
        userId: user.id,
        message: body.message,
        session,
        replacesTurnId: body.replaces_turn_id,
        modelId: body.model_id,
        log: req.log,
      });
      await streamTo(turns, req, res, turn, 0, false);
    }),
  );

  // Replay and follow a turn from the event after `after` (0: from the start). A running turn is
  // followed live; a finished one is replayed from memory, or rebuilt from the store once it has
  // left memory (then seq counts the stored events: tool calls, the whole text, done).
  r.get(
    '/sessions/:id/turns/:turnId/events',
    ...onOwnedChat(owned, async (req, res, s) => {
      const turnId = String(req.params.turnId);
      const afterRaw = req.query.after === undefined ? '0' : String(req.query.after);
      if (!/^(0|[1-9]\d{0,8})$/.test(afterRaw))
        throw new AppError('ERR_VALIDATION', 'after must be a whole number ≥ 0 (the last seq you saw)');
      const after = Number(afterRaw);
      const found = await turns.events(s.id, turnId);
      if ('live' in found) return streamTo(turns, req, res, found.live, after, true);
      res.status(200);
      res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('X-Chat-Session-Id', s.id);
      res.setHeader('X-Chat-Turn-Id', turnId);
      res.end(
        found.stored
          .slice(after)
          .map((e) => JSON.stringify(e) + '\n')
          .join(''),
      );
    }),
  );

  r.post(
    '/sessions/:id/turns/:turnId/cancel',
    ...onOwnedChat(owned, async (req, res, s) => {
      const turnId = String(req.params.turnId);
      const cancelling = await turns.cancel(s.id, turnId);
      if (cancelling) req.log.info({ sessionId: s.id, turnId }, 'turn stopped by the user');
      const out: CancelTurnResponse = { turn_id: turnId, cancelling };
      res.status(cancelling ? 202 : 200).json(out);
    }),
  );
  return r;
}

/** Write a turn's events (from `after`) to an NDJSON response until done; a client that leaves only stops the writing. */
async function streamTo(
  turns: TurnService,
  req: Request,
  res: Response,
  turn: LiveTurn,
  after: number,
  eager: boolean,
): Promise<void> {
  const stop = new AbortController();
  res.on('close', () => stop.abort());
  // A new turn answers at its first event (a refusal before it stays a plain HTTP error); a
  // reader reattaching gets its headers at once, even while a tool runs without events.
  let started = eager;
  if (eager) beginNdjson(req, res, turn, true);
  for await (const e of turns.follow(turn, after, stop.signal)) {
    if (res.writableEnded || res.destroyed) break;
    if (!started) {
      started = true;
      beginNdjson(req, res, turn, false); // the headers leave with the first event, in one write
    }
    res.write(JSON.stringify(e) + '\n');
  }
  if (!started && turn.refused) throw turn.refused;
  if (!started && !res.headersSent) beginNdjson(req, res, turn, false);
  res.end();
}

/** Set the NDJSON answer's headers; `flush` sends them now (a reader reattaching, before any event). */
function beginNdjson(req: Request, res: Response, turn: LiveTurn, flush: boolean): void {
  res.status(200);
  res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Accel-Buffering', 'no');
  res.setHeader('X-Chat-Session-Id', turn.sessionId);
  res.setHeader('X-Chat-Turn-Id', turn.turnId);
  req.socket.setNoDelay(true);
  if (flush) res.flushHeaders();
}
