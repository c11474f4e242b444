import { randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import {
  AppError,
  isAppError,
  type AgentEvent,
  type ChatEvent,
  type DaemonEvent,
  type Logger,
  type TurnResult,
  type Metrics,
  type TurnRunner,
} from '../core/index.js';
import type {
  ApprovalDecisionRequest,
  ApprovalDecisionResponse,
  CancelTurnResponse,
  ChatModelInfo,
  ChatSessionInfo,
  ChatSessionList,
  RenameSessionRequest,
  SendMessageRequest,
  StoredTurn,
} from './chat-api.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import * as store from '../domain/chat/store.js';
import { logAction } from '../domain/action-log.js';
import type { Sql } from '../domain/db/index.js';
import { chatHistory, chatMoreRoutes } from './chat-more-routes.js';
import { uploadRoutes } from './upload-routes.js';
import { approvalRoutes } from './approval-routes.js';
import { TurnRegistry, type LiveTurn } from './turns.js';
import { fleetForwarding } from './fleet.js';
import { validateBody } from './validate.js';
import { ApprovalDecisionSchema, RenameSessionSchema, SendMessageSchema } from '../core/api-requests.js';
import { daemonEvent, sanitize } from './chat-events.js';
import { branchTranscript } from '../domain/chat/transcript.js';
import { chatModel, chatModelRoutes, checkPick, effectiveIds, recordPick } from './chat-model-routes.js';

/**
 * What the chat area needs from the daemon (ctx.services.chat): something that runs a turn
 * in the session's sandbox. In `serve` that is the Docker session manager; tests may hand in
 * daemon/local-runner.ts.
 */
export interface ChatService {
  runner: TurnRunner;
}

/** Longest search query (GET /sessions?q=). */
const MAX_QUERY_CHARS = 200;

/** What ends a session's sandbox when its chat is deleted (the session manager: ctx.services.sandboxAdmin). */
interface SandboxKiller {
  kill(sessionId: string): Promise<unknown>;
}

/**
 * /api/chat: POST /messages starts a turn and streams it as NDJSON (docs/chat.md "Chat stream");
 * the turn runs on in this process when the client goes away, and
 * GET /sessions/:id/turns/:turnId/events?after=SEQ replays and follows it; POST …/cancel stops it.
 * GET/PATCH/DELETE /sessions[/:id] list (with search), rename and delete conversations.
 */
export function chatRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;
  const turns = new TurnRegistry();

  const owned = async (userId: number, id: string) => {
    const s = await store.getOwnedSession(db, userId, id);
    // Another user's session reads exactly like a missing one.
    if (!s) throw new AppError('ERR_CHAT_SESSION_NOT_FOUND', 'no such chat session');
    return s;
  };

  /** Write a turn's events (from `after`) to an NDJSON response until done; a client that leaves only stops the writing. */
  async function streamTo(req: Request, res: Response, turn: LiveTurn, after: number, eager: boolean): Promise<void> {
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

  // A session whose sandbox another node of the fleet owns is served there (web/fleet.ts).
  r.use(fleetForwarding(ctx));

  r.post(
    '/messages',
    requireUser,
    asyncHandler(async (req, res) => {
      const service = ctx.services.chat;
      if (!service) throw new AppError('ERR_CHAT_UNAVAILABLE', 'chat is not available on this server');
      const body = validateBody(SendMessageSchema, req.body);
      const user = req.user!;
      const session = body.session_id ? await owned(user.id, body.session_id) : undefined;
      const busy = () => {
        if (session && turns.runningIn(session.id)) throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session');
      };
      busy();
      // The chat's model (docs/chat.md "A model per chat"): a new chat's, or a switch before this turn.
      if (body.model_id) await checkPick(ctx, user.id, body.model_id);
      if (body.replaces_turn_id && !session) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
      // Where the turn goes: after the branch shown, or beside the turn it edits or regenerates.
      const place = session ? await store.placeTurn(db, session.id, body.replaces_turn_id) : { parent: null, head: null };
      // Checked again with no await before start: another request may have started one meanwhile.
      busy();
      const sessionId = session?.id ?? randomUUID();
      const turnId = randomUUID();
      const turn = turns.start(turnId, sessionId, user.id);
      try {
        // A new chat and its first turn are written together.
        await store.inTransaction(db, async (trx) => {
          if (!session) await store.createSession(trx, user.id, body.message, sessionId);
          if (body.model_id && body.model_id !== session?.model_id) await recordPick(trx, user.id, sessionId, body.model_id);
          await store.startTurn(trx, sessionId, turnId, body.message, place.parent);
        });
      } catch (err) {
        turns.refuse(turn, err);
        throw err;
      }
      void runTurn(service, turn, body.message, place, req.log.child({ sessionId, turnId }));
      await streamTo(req, res, turn, 0, false);
    }),
  );

  /**
   * Run one turn to its end, whoever is reading: events go to the registry (and the store), and
   * exactly one `done` ends it. A refusal before it began (busy, host full) leaves no trace.
   */
  async function runTurn(service: ChatService, turn: LiveTurn, prompt: string, place: { parent: string | null; head: string | null }, log: Logger): Promise<void> {
    const { turnId, sessionId, userId } = turn;
    let seq = 0;
    let text = '';
    const inputs = new Map<string, Record<string, unknown>>();
    // The turn's writes run one after another in the order of its events; the end waits for them.
    let writes: Promise<void> = Promise.resolve();
    const write = (what: string, fn: () => Promise<unknown>) => {
      writes = writes.then(fn).then(
        () => undefined,
        (err: unknown) => log.error({ err }, `could not record ${what}`),
      );
    };
    // Approvals (a send held at the proxy): numbered with the agent's events, kept with the turn.
    const onDaemonEvent = (raw: DaemonEvent) => {
      if (turn.finished) return;
      const e = daemonEvent(raw, seq + 1);
      if (!e) return;
      seq++;
      turns.push(turn, e);
    };
    const onEvent = (raw: AgentEvent) => {
      if (turn.finished) return;
      const e = sanitize(raw, seq + 1);
      if (!e) {
        log.warn('sandbox sent an unknown event; dropped');
        return;
      }
      seq++;
      if (e.type === 'text_delta') text += e.text;
      else if (e.type === 'tool_start') {
        inputs.set(e.call_id, e.input);
        write('a chat event', () => store.toolStarted(db, turnId, e.call_id, e.tool, e.input));
      } else if (e.type === 'tool_end') {
        const input = inputs.get(e.call_id);
        write('a chat event', () =>
          // A sent mail's log entry and its tool call's end are one change.
          store.inTransaction(db, async (trx) => {
            await store.toolEnded(trx, turnId, e.call_id, e.tool, e.ok, e.output, e.error, e.duration_ms);
            if (e.ok && e.tool === 'send_email') await logMailSent(trx, userId, sessionId, turnId, input);
          }),
        );
      }
      turns.push(turn, e);
    };

    let result: TurnResult;
    try {
      // The model's context is the branch this turn continues, from the store, within the budget of
      // the chat's model; a sandbox prepared for another model is replaced (docs/chat.md).
      const model = await chatModel(ctx, sessionId);
      const context = () => branchTranscript(db, sessionId, model.contextTokens, place.parent);
      result = await service.runner.runTurn({ userId, sessionId, turnId, prompt, base: place.parent, context, modelRevision: model.revision, signal: turn.controller.signal, onEvent, onDaemonEvent });
    } catch (err) {
      if (seq === 0 && isAppError(err) && (err.status === 409 || err.status === 429 || err.status === 503)) {
        // Refused before it began: a plain HTTP error for the request that started it, no record.
        write('the drop of a refused turn', () => store.dropTurn(db, turnId, place.head));
        await writes;
        turns.refuse(turn, err);
        return;
      }
      log.error({ err, code: isAppError(err) ? err.code : undefined }, 'turn failed');
      result = {
        stop_reason: 'error',
        error: isAppError(err) && err.status < 500 ? { code: err.code, message: err.message } : { code: 'ERR_SANDBOX_FAILED', message: 'the sandbox failed to run the turn' },
      };
    }
    if (result.stop_reason === 'error' && !result.error) result.error = { code: 'ERR_SANDBOX_FAILED', message: 'the turn failed' };
    // The turn and its tool calls end in one transaction, after every write of its events.
    const { stop_reason: stopReason, error } = result;
    const extras = { ...(result.items ? { items: result.items } : {}), ...(result.usage ? { usage: result.usage } : {}) };
    write('the end of a turn', () => store.endTurn(db, turnId, text, stopReason, error, inputs.size > 0, extras));
    await writes;
    log.info({ stopReason: result.stop_reason, code: result.error?.code, events: seq, ...result.usage }, 'turn done');
    ctx.services.metrics?.turns.inc({ stop_reason: result.stop_reason });
    if (result.usage) ctx.services.metrics?.modelTokens.inc({ kind: 'input' }, result.usage.input_tokens);
    if (result.usage) ctx.services.metrics?.modelTokens.inc({ kind: 'output' }, result.usage.output_tokens);
    // Exactly one done per turn, made here and nowhere else.
    turns.push(turn, {
      type: 'done',
      seq: seq + 1,
      session_id: sessionId,
      turn_id: turnId,
      stop_reason: result.stop_reason,
      ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
    });
  }

  // Replay and follow a turn from the event after `after` (0: from the start). A running turn is
  // followed live; a finished one is replayed from memory, or rebuilt from the store once it has
  // left memory (then seq counts the stored events: tool calls, the whole text, done).
  r.get(
    '/sessions/:id/turns/:turnId/events',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      const turnId = String(req.params.turnId);
      const afterRaw = req.query.after === undefined ? '0' : String(req.query.after);
      if (!/^(0|[1-9]\d{0,8})$/.test(afterRaw)) throw new AppError('ERR_VALIDATION', 'after must be a whole number ≥ 0 (the last seq you saw)');
      const after = Number(afterRaw);
      const live = turns.get(turnId);
      if (live && live.sessionId === s.id) return streamTo(req, res, live, after, true);
      const stored = await store.storedTurn(db, s.id, turnId);
      if (!stored) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
      const events = storedEvents(s.id, stored);
      res.status(200);
      res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('X-Chat-Session-Id', s.id);
      res.setHeader('X-Chat-Turn-Id', turnId);
      res.end(events.slice(after).map((e) => JSON.stringify(e) + '\n').join(''));
    }),
  );

  r.post(
    '/sessions/:id/turns/:turnId/cancel',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      const turnId = String(req.params.turnId);
      const live = turns.get(turnId);
      if (!(live && live.sessionId === s.id) && !(await store.storedTurn(db, s.id, turnId)))
        throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
      const cancelling = live?.sessionId === s.id && turns.cancel(turnId);
      if (cancelling) req.log.info({ sessionId: s.id, turnId }, 'turn stopped by the user');
      const out: CancelTurnResponse = { turn_id: turnId, cancelling };
      res.status(cancelling ? 202 : 200).json(out);
    }),
  );

  // The user's decision on a mail send held for approval (docs/chat.md#approvals): only the
  // session's own user, with the session cookie and CSRF check of every POST.
  r.post(
    '/sessions/:id/approvals/:approvalId',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      const approvalId = String(req.params.approvalId);
      if (!/^[A-Za-z0-9-]{1,64}$/.test(approvalId)) throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
      const body = validateBody(ApprovalDecisionSchema, req.body);
      const approvals = ctx.services.approvals;
      if (!approvals) throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
      const d = await approvals.decide({ userId: req.user!.id, sessionId: s.id, approvalId, decision: body.decision, scope: body.scope ?? 'once' });
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
      if (q.length > MAX_QUERY_CHARS) throw new AppError('ERR_VALIDATION', `the search text is longer than ${MAX_QUERY_CHARS} characters`);
      const list = await store.listSessions(db, req.user!.id, q || undefined);
      const modelOf = await effectiveIds(ctx);
      const out: ChatSessionList = { sessions: list.map((x) => ({ ...x, model_id: modelOf(x.model_id), running_turn_id: turns.runningIn(x.id)?.turnId ?? null })) };
      res.json(out);
    }),
  );

  r.get(
    '/sessions/:id/messages',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      res.json(await chatHistory(ctx, s));
    }),
  );

  r.patch(
    '/sessions/:id',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      const body = validateBody(RenameSessionSchema, req.body);
      // Switching the model mid-chat: never under a running turn; its next turn runs with it.
      if (body.model_id && turns.runningIn(s.id)) throw new AppError('ERR_SESSION_BUSY', 'a turn is running in this chat; switch the model when it ends');
      if (body.model_id) await checkPick(ctx, req.user!.id, body.model_id);
      const after = await store.inTransaction(db, async (trx) => {
        if (body.title !== undefined) {
          await store.renameSession(trx, s.id, body.title);
          await logAction(trx, { event: 'chat.renamed', actorId: req.user!.id, subjectId: req.user!.id, data: { session_id: s.id } });
        }
        if (body.model_id) await recordPick(trx, req.user!.id, s.id, body.model_id);
        return (await store.getOwnedSession(trx, req.user!.id, s.id))!;
      });
      const model_id = (await effectiveIds(ctx))(after.model_id);
      const out: ChatSessionInfo = { id: after.id, title: after.title, created_at: after.created_at, updated_at: after.updated_at, model_id };
      res.json(out);
    }),
  );

  // Delete a conversation: its running turn is stopped, its sandbox ended, its history removed.
  r.delete(
    '/sessions/:id',
    requireUser,
    asyncHandler(async (req, res) => {
      const s = await owned(req.user!.id, String(req.params.id));
      const live = turns.runningIn(s.id);
      if (live) turns.cancel(live.turnId, 'chat deleted');
      const killer = ctx.services.sandboxAdmin;
      let sandboxEnded = false;
      if (killer) {
        try {
          await killer.kill(s.id);
          sandboxEnded = true;
        } catch (err) {
          // No live sandbox for this chat (reaped, never started): nothing to end.
          if (!isAppError(err, 'ERR_SESSION_NOT_FOUND')) throw err;
        }
      }
      await store.inTransaction(db, async (trx) => {
        await store.deleteSession(trx, s.id);
        await logAction(trx, { event: 'chat.deleted', actorId: req.user!.id, subjectId: req.user!.id, data: { session_id: s.id, sandbox_ended: sandboxEnded } });
      });
      if (live) turns.forget(live.turnId);
      req.log.info({ sessionId: s.id, sandboxEnded }, 'chat session deleted');
      res.status(204).end();
    }),
  );

  // A held send's message while it waits (web/approval-routes.ts).
  r.use(approvalRoutes(ctx, owned));

  // Attachments, export and branch switching (web/chat-more-routes.ts).
  r.use(chatMoreRoutes(ctx, { owned, busy: (id) => !!turns.runningIn(id) }));
  // Files the user uploads into the workspace (web/upload-routes.ts).
  r.use(uploadRoutes(ctx, { owned, log: ctx.log }));

  return r;
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

/** A stored approval as the events it emitted: the request (without the body it never had) and its decision. */
function approvalEvents(out: ChatEvent[], a: NonNullable<StoredTurn['approvals']>[number]): void {
  out.push({ type: 'approval_request', seq: out.length + 1, approval_id: a.approval_id, call_id: a.call_id, recipients: a.recipients, ask: a.ask, subject: a.subject, attachments: a.attachments, expires_at: a.decided_at ?? a.created_at });
  if (a.state !== 'pending') out.push({ type: 'approval_result', seq: out.length + 1, approval_id: a.approval_id, decision: a.state, ...(a.scope ? { scope: a.scope } : {}) });
}

/** A stored turn as the events it emitted: each tool call (with its approvals), the whole text, then done. */
function storedEvents(sessionId: string, t: StoredTurn): ChatEvent[] {
  const out: ChatEvent[] = [];
  const approvals = t.approvals ?? [];
  const placed = new Set<string>();
  for (const c of t.tool_calls) {
    out.push({ type: 'tool_start', seq: out.length + 1, call_id: c.call_id, tool: c.tool, input: (c.input && typeof c.input === 'object' ? c.input : {}) as Record<string, unknown> });
    for (const a of approvals) if (a.call_id === c.call_id && !placed.has(a.approval_id)) {
      placed.add(a.approval_id);
      approvalEvents(out, a);
    }
    if (c.status !== 'running')
      out.push({
        type: 'tool_end',
        seq: out.length + 1,
        call_id: c.call_id,
        tool: c.tool,
        ok: c.status === 'ok',
        ...(c.output !== undefined ? { output: c.output } : {}),
        ...(c.error !== undefined ? { error: c.error } : c.status === 'cancelled' ? { error: 'cancelled' } : {}),
        duration_ms: c.duration_ms ?? 0,
      });
  }
  for (const a of approvals) if (!placed.has(a.approval_id)) approvalEvents(out, a);
  if (t.text) out.push({ type: 'text_delta', seq: out.length + 1, text: t.text });
  // A turn still "running" in the store but not in this process was cut off by a restart.
  const lost = t.status === 'running';
  out.push({
    type: 'done',
    seq: out.length + 1,
    session_id: sessionId,
    turn_id: t.turn_id,
    stop_reason: lost ? 'error' : (t.stop_reason ?? 'error'),
    ...(lost ? { error: { code: 'ERR_CHAT_TURN_LOST', message: 'the server restarted while this turn ran' } } : t.error ? { error: t.error } : {}),
  });
  return out;
}

/** The action log gets how many recipients a sent mail had, never its addresses or body. */
async function logMailSent(db: Sql, userId: number, sessionId: string, turnId: string, input: Record<string, unknown> | undefined): Promise<void> {
  const count = (v: unknown) => (Array.isArray(v) ? v.length : typeof v === 'string' && v.trim() ? v.split(',').length : 0);
  const recipients = count(input?.to) + count(input?.cc) + count(input?.bcc);
  await logAction(db, { event: 'chat.mail_sent', actorId: userId, subjectId: userId, data: { session_id: sessionId, turn_id: turnId, recipients } });
}
