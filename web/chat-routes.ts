import { randomUUID } from 'node:crypto';
import { constants as fsc, promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { Router } from 'express';
import {
  AppError,
  ConflictError,
  NotFoundError,
  isAppError,
  type AgentEvent,
  type ChatEvent,
  type TurnResult,
  type Metrics,
  type TurnRunner,
} from '../core/index.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { ChatStore } from './chat-store.js';
import { BeneathError, openBeneath } from './open-beneath.js';
import { validateBody } from './validate.js';

/**
 * What the chat area needs from the daemon (ctx.services.chat): something that runs a turn
 * in the session's sandbox. In `serve` that is the Docker session manager; tests may hand in
 * daemon/local-runner.ts.
 */
export interface ChatService {
  runner: TurnRunner;
}

const MESSAGE_SCHEMA = {
  type: 'object',
  required: ['message'],
  additionalProperties: false,
  properties: {
    message: { type: 'string', minLength: 1, maxLength: 32000 },
    session_id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9-]+$' },
  },
} as const;

const ATTACHMENT_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.png$/;
const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/** Largest text_delta passed on; a sandbox is not trusted to keep lines small. */
const MAX_DELTA_CHARS = 64 * 1024;

/**
 * /api/chat: POST /messages streams one turn as NDJSON (DESIGN.md "Chat stream");
 * GET /sessions and GET /sessions/:id/messages serve the history.
 */
export function chatRoutes(ctx: WebContext): Router {
  const r = Router();
  const store = new ChatStore(ctx.db);
  /** Sessions with a turn streaming from this process (the 409 before any byte is sent). */
  const active = new Set<string>();

  r.post(
    '/messages',
    requireUser,
    asyncHandler(async (req, res) => {
      const service = ctx.services.chat as ChatService | undefined;
      if (!service) throw new AppError('ERR_CHAT_UNAVAILABLE', 'chat is not available on this server', { status: 503 });
      const body = validateBody<{ message: string; session_id?: string }>(MESSAGE_SCHEMA, req.body);
      const user = req.user!;
      let session = body.session_id ? store.getOwned(user.id, body.session_id) : undefined;
      // Another user's session reads exactly like a missing one.
      if (body.session_id && !session) throw new NotFoundError('ERR_CHAT_SESSION_NOT_FOUND', 'no such chat session');
      if (session && active.has(session.id)) throw new ConflictError('ERR_SESSION_BUSY', 'a turn is already running in this session');
      session ??= store.createSession(user.id, body.message);
      const sessionId = session.id;
      const turnId = randomUUID();
      active.add(sessionId);
      const log = req.log.child({ sessionId, turnId });

      const ac = new AbortController();
      let seq = 0;
      let text = '';
      let started = false;
      let ended = false;
      const begin = () => {
        started = true;
        res.status(200);
        res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('X-Accel-Buffering', 'no');
        res.setHeader('X-Chat-Session-Id', sessionId);
        res.setHeader('X-Chat-Turn-Id', turnId);
        req.socket.setNoDelay(true);
        res.flushHeaders();
      };
      const write = (e: ChatEvent) => {
        // A client that went away gets nothing more; the turn is still recorded.
        if (res.writableEnded || res.destroyed) return;
        if (!started) begin();
        res.write(JSON.stringify(e) + '\n');
      };
      res.on('close', () => {
        if (!ended) {
          log.info('client went away; cancelling the turn');
          ac.abort(new Error('client disconnected'));
        }
      });

      const onEvent = (raw: AgentEvent) => {
        if (ended) return;
        const e = sanitize(raw, ++seq);
        if (!e) {
          seq--;
          log.warn('sandbox sent an unknown event; dropped');
          return;
        }
        try {
          if (e.type === 'text_delta') text += e.text;
          else if (e.type === 'tool_start') store.toolStarted(turnId, e.call_id, e.tool, e.input);
          else if (e.type === 'tool_end') store.toolEnded(turnId, e.call_id, e.tool, e.ok, e.output, e.error, e.duration_ms);
        } catch (err) {
          log.error({ err }, 'could not record a chat event');
        }
        write(e);
      };

      store.startTurn(sessionId, turnId, body.message);
      let result: TurnResult;
      try {
        result = await service.runner.runTurn({ userId: user.id, sessionId, turnId, prompt: body.message, signal: ac.signal, onEvent });
      } catch (err) {
        if (!started && isAppError(err) && (err.status === 409 || err.status === 429 || err.status === 503)) {
          // Refused before it began (busy, host full): a plain HTTP error, no stream, no record.
          active.delete(sessionId);
          store.dropTurn(turnId);
          throw err;
        }
        log.error({ err, code: isAppError(err) ? err.code : undefined }, 'turn failed');
        result = {
          stop_reason: 'error',
          error: isAppError(err) && err.status < 500 ? { code: err.code, message: err.message } : { code: 'ERR_SANDBOX_FAILED', message: 'the sandbox failed to run the turn' },
        };
      } finally {
        active.delete(sessionId);
      }
      if (result.stop_reason === 'error' && !result.error) result.error = { code: 'ERR_SANDBOX_FAILED', message: 'the turn failed' };
      ended = true;
      try {
        store.endTurn(turnId, text, result.stop_reason, result.error);
      } catch (err) {
        log.error({ err }, 'could not record the end of a turn');
      }
      log.info({ stopReason: result.stop_reason, code: result.error?.code, events: seq }, 'turn done');
      (ctx.services.metrics as Metrics | undefined)?.turns.inc({ stop_reason: result.stop_reason });
      // Exactly one done per turn, written by this route and nobody else.
      write({
        type: 'done',
        seq: seq + 1,
        session_id: sessionId,
        turn_id: turnId,
        stop_reason: result.stop_reason,
        ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
      });
      res.end();
    }),
  );

  // Which model answers (the chat page names the offline demo model as such).
  r.get('/model', requireUser, (_req, res) => {
    const m = ctx.config.model;
    res.json({ provider: m.provider, model: m.provider === 'demo' ? 'demo' : m.model, demo: m.provider === 'demo' });
  });

  r.get('/sessions', requireUser, (req, res) => {
    res.json({ sessions: store.listSessions(req.user!.id) });
  });

  r.get('/sessions/:id/messages', requireUser, (req, res) => {
    const s = store.getOwned(req.user!.id, String(req.params.id));
    if (!s) throw new NotFoundError('ERR_CHAT_SESSION_NOT_FOUND', 'no such chat session');
    res.json({ session: { id: s.id, title: s.title, created_at: s.created_at, updated_at: s.updated_at }, turns: store.messages(s.id) });
  });

  // A rasterized chart from the user's own workspace (what rasterize_chart wrote), for the chat
  // page. Same name rule as send_email. The agent owns everything under its workspace, so every
  // component below <data>/workspaces is opened without following links (openBeneath), and only
  // a regular file owned by the workspace's owner (the sandbox user) and under the cap is served.
  r.get(
    '/attachments/:name',
    requireUser,
    asyncHandler(async (req, res) => {
      const name = String(req.params.name);
      if (!ATTACHMENT_RE.test(name)) throw new NotFoundError('ERR_CHAT_ATTACHMENT_NOT_FOUND', 'no such attachment');
      const root = join(ctx.config.dataDir, 'workspaces');
      const userDir = String(req.user!.id);
      let fh: fsp.FileHandle | undefined;
      try {
        // The workspace folder's owner is the sandbox user (root-owned parent: the agent cannot swap it).
        const owner = (await fsp.lstat(join(root, userDir))).uid;
        ({ fh } = await openBeneath(root, [userDir, '.agent-attachments', name], { ownerUid: owner, maxBytes: MAX_ATTACHMENT_BYTES }));
        const buf = await fh.readFile();
        res.setHeader('Content-Type', 'image/png');
        res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
        res.setHeader('Cache-Control', 'private, max-age=3600');
        res.end(buf);
      } catch (err) {
        if (err instanceof BeneathError) req.log.warn({ event: 'attachment_refused', reason: err.reason }, 'attachment refused');
        throw new NotFoundError('ERR_CHAT_ATTACHMENT_NOT_FOUND', 'no such attachment');
      } finally {
        await fh?.close();
      }
    }),
  );

  return r;
}

/**
 * Rebuild an event from the sandbox field by field: the sandbox is not trusted, so it cannot
 * send a `done`, pick its own `seq` or add fields.
 */
function sanitize(e: AgentEvent, seq: number): ChatEvent | undefined {
  const x = e as unknown as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  if (x.type === 'text_delta' && typeof x.text === 'string') return { type: 'text_delta', seq, text: x.text.slice(0, MAX_DELTA_CHARS) };
  if (x.type === 'tool_start')
    return { type: 'tool_start', seq, call_id: str(x.call_id), tool: str(x.tool), input: x.input && typeof x.input === 'object' ? (x.input as Record<string, unknown>) : {} };
  if (x.type === 'tool_end')
    return {
      type: 'tool_end',
      seq,
      call_id: str(x.call_id),
      tool: str(x.tool),
      ok: x.ok === true,
      ...(x.output !== undefined ? { output: x.output } : {}),
      ...(typeof x.error === 'string' ? { error: x.error } : {}),
      duration_ms: typeof x.duration_ms === 'number' && Number.isFinite(x.duration_ms) ? Math.max(0, Math.round(x.duration_ms)) : 0,
    };
  return undefined;
}
