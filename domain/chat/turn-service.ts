/**
 * The chat turn (docs/chat.md "Chat stream", docs/architecture.md): start a turn in a chat — where
 * it goes on the chat's branches (after the branch shown, or beside the turn it edits or
 * regenerates), what is stored first — run it over the server's TurnRunner (the sandbox, or
 * daemon/dev/local-runner.ts) whoever is reading, number and store its events (turn-recorder.ts),
 * end it with exactly one `done`, count it, and stop it on request. The turn runs on in this
 * process when the request that started it goes away; readers replay and follow it by seq
 * (live-turns.ts), or from the store once it has left memory (events.ts). HTTP is not in here:
 * web/chat-routes.ts parses, authorises and streams.
 */
import { randomUUID } from 'node:crypto';
import {
  AppError,
  isAppError,
  type ChatEvent,
  type Logger,
  type Metrics,
  type TurnResult,
  type TurnRunner,
} from '../../core/index.js';
import type { Sql } from '../db/index.js';
import { assertWithinBudget, budgetWarning, recordTurnUsage } from '../usage/index.js';
import { storedEvents } from './events.js';
import { TurnRegistry, type LiveTurn } from './live-turns.js';
import { DEFAULT_MODEL_ID, recordPick, type ResolvedModel } from './models.js';
import * as store from './store.js';
import { branchTranscript } from './transcript.js';
import { TurnRecorder } from './turn-recorder.js';

export type { LiveTurn } from './live-turns.js';

/**
 * What the chat area needs from the daemon (ctx.services.chat): something that runs a turn in the
 * session's sandbox. In `serve` that is the Docker session manager; tests may hand in
 * daemon/dev/local-runner.ts.
 */
export interface ChatService {
  /** Null on a server that runs no sandboxes (no Docker engine): a turn is refused before anything is stored. */
  runner: TurnRunner | null;
}

export interface TurnServiceDeps {
  /** The database (store functions in domain/chat/). */
  sql: Sql;
  /** Read at each turn (the daemon may wire them after the web app is made): the runner, and the turn counters. */
  services: { chat: ChatService; metrics: Metrics };
  /** The chat's model: the context budget of its turns and the revision its sandbox must run. */
  model(sessionId: string): Promise<Pick<ResolvedModel, 'contextTokens' | 'revision'>>;
  /** Called once per turn that ran, after its `done` is out (e.g. a title made by the model), with its prompt and answer text. Must not throw. */
  onTurnEnd?(turn: LiveTurn, result: TurnResult, said: { prompt: string; answer: string }): void;
  /** How long a finished turn stays readable from memory (default: live-turns.ts). */
  retainMs?: number;
}

/** A turn to start. The caller has checked who asks: `session` is the user's own chat. */
export interface NewTurn {
  userId: number;
  /** The user's message (the prompt). */
  message: string;
  /** The chat it continues; absent: a new chat, made with its first turn. */
  session?: { id: string; model_id: string | null };
  /** Edit or regenerate: the new turn goes beside this one (a new branch). */
  replacesTurnId?: string;
  /** A model chosen for the chat with this turn (checked by the caller: web/chat-model-routes.ts checkPick). */
  modelId?: string;
  /** The request's logger (the turn logs with its session and turn ids). */
  log: Logger;
}

/** Refusals a runner makes before a turn begins: the turn leaves no trace. */
const REFUSED_STATUSES = new Set([409, 429, 503]);

export class TurnService {
  private readonly live: TurnRegistry;

  constructor(private readonly deps: TurnServiceDeps) {
    this.live = new TurnRegistry(deps.retainMs);
  }

  /** The turn by id while this process holds it (running, or finished within retainMs). */
  get(turnId: string): LiveTurn | undefined {
    return this.live.get(turnId);
  }

  /** The session's running turn, if this process runs one. */
  runningIn(sessionId: string): LiveTurn | undefined {
    return this.live.runningIn(sessionId);
  }

  /** 409 ERR_SESSION_BUSY while the session has a running turn. */
  assertIdle(sessionId: string | undefined, message = 'a turn is already running in this session'): void {
    if (sessionId && this.live.runningIn(sessionId)) throw new AppError('ERR_SESSION_BUSY', message);
  }

  /**
   * Place, store and start a turn; it runs on in the background (follow it for its events). Throws
   * before anything is stored when the chat is busy or the replaced turn is missing.
   */
  async start(t: NewTurn): Promise<LiveTurn> {
    const runner = this.deps.services.chat.runner;
    if (!runner) throw new AppError('ERR_CHAT_UNAVAILABLE', 'chat is not available on this server');
    const { session, userId } = t;
    if (t.replacesTurnId && !session)
      throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
    // A used-up budget refuses the turn before anything is stored or any model is called (docs/usage.md).
    await assertWithinBudget(this.deps.sql, userId);
    // Where the turn goes: after the branch shown, or beside the turn it edits or regenerates.
    const place = session
      ? await store.placeTurn(this.deps.sql, session.id, t.replacesTurnId)
      : { parent: null, head: null };
    // Checked again with no await before the registry's start: another request may have started one meanwhile.
    this.assertIdle(session?.id);
    const sessionId = session?.id ?? randomUUID();
    const turnId = randomUUID();
    const turn = this.live.start(turnId, sessionId, userId);
    try {
      // A new chat and its first turn are written together.
      await store.inTransaction(this.deps.sql, async (trx) => {
        if (!session) await store.createSession(trx, userId, t.message, sessionId);
        if (t.modelId && t.modelId !== session?.model_id) await recordPick(trx, userId, sessionId, t.modelId);
        await store.startTurn(trx, sessionId, turnId, t.message, place.parent);
      });
    } catch (err) {
      this.live.refuse(turn, err);
      throw err;
    }
    void this.run(runner, turn, t.message, place, t.log.child({ sessionId, turnId })); // run() never rejects: it ends every turn with done
    return turn;
  }

  /** The turn's events after seq `after`, then each new one until `done` (a reader leaving never stops the turn). */
  follow(turn: LiveTurn, after: number, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    return this.live.follow(turn, after, signal);
  }

  /**
   * A turn of the session as events: from memory while this process holds it (`live`), else rebuilt
   * from the store (seq then counts the stored events: tool calls, the whole text, done). 404 when missing.
   */
  async events(sessionId: string, turnId: string): Promise<{ live: LiveTurn } | { stored: ChatEvent[] }> {
    const live = this.live.get(turnId);
    if (live && live.sessionId === sessionId) return { live };
    const stored = await store.storedTurn(this.deps.sql, sessionId, turnId);
    if (!stored) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
    return { stored: storedEvents(sessionId, stored) };
  }

  /** Stop the session's turn: true when it was running here (it ends with stop_reason `cancelled`). 404 when missing. */
  async cancel(sessionId: string, turnId: string): Promise<boolean> {
    const live = this.live.get(turnId);
    const here = live?.sessionId === sessionId;
    if (!here && !(await store.storedTurn(this.deps.sql, sessionId, turnId)))
      throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
    return here && this.live.cancel(turnId);
  }

  /** A chat is being deleted: stop its running turn; call the returned `forget` once the chat is gone. */
  stopSession(sessionId: string): { forget(): void } {
    const live = this.live.runningIn(sessionId);
    if (live) this.live.cancel(live.turnId, 'chat deleted');
    return {
      forget: () => {
        if (live) this.live.forget(live.turnId);
      },
    };
  }

  /** Stop every running turn (shutdown) and the sweeper of finished ones. */
  close(why = 'the server is shutting down'): void {
    this.live.cancelAll(why);
    this.live.close();
  }

  /**
   * Run one turn to its end, whoever is reading: events go to the registry (and the store), and
   * exactly one `done` ends it. A refusal before it began (busy, host full) leaves no trace.
   */
  private async run(
    runner: TurnRunner,
    turn: LiveTurn,
    prompt: string,
    place: { parent: string | null; head: string | null },
    log: Logger,
  ): Promise<void> {
    const { turnId, sessionId, userId } = turn;
    const rec = new TurnRecorder(this.deps.sql, this.live, turn, log);
    let result: TurnResult;
    let modelId = DEFAULT_MODEL_ID;
    try {
      // The model's context is the branch this turn continues, from the store, within the budget of
      // the chat's model; a sandbox prepared for another model is replaced (docs/chat.md).
      const model = await this.deps.model(sessionId);
      modelId = model.revision.slice(0, model.revision.lastIndexOf(':')) || DEFAULT_MODEL_ID;
      const context = () => branchTranscript(this.deps.sql, sessionId, model.contextTokens, place.parent);
      const { onEvent, onDaemonEvent } = rec;
      result = await runner.runTurn({
        userId,
        sessionId,
        turnId,
        prompt,
        base: place.parent,
        context,
        modelRevision: model.revision,
        signal: turn.controller.signal,
        onEvent,
        onDaemonEvent,
      });
    } catch (err) {
      if (rec.seq === 0 && isAppError(err) && REFUSED_STATUSES.has(err.status)) {
        // Refused before it began: a plain HTTP error for the request that started it, no record.
        rec.write('the drop of a refused turn', () => store.dropTurn(this.deps.sql, turnId, place.head));
        await rec.settled();
        this.live.refuse(turn, err);
        return;
      }
      log.error({ err, code: isAppError(err) ? err.code : undefined }, 'turn failed');
      result = {
        stop_reason: 'error',
        error:
          isAppError(err) && err.status < 500
            ? { code: err.code, message: err.message }
            : { code: 'ERR_SANDBOX_FAILED', message: 'the sandbox failed to run the turn' },
      };
    }
    await this.finish(rec, turn, result, log, modelId);
    this.deps.onTurnEnd?.(turn, result, { prompt, answer: rec.text });
  }

  /** The turn's end: stored after every write of its events, logged, counted, then its one `done`. */
  private async finish(
    rec: TurnRecorder,
    turn: LiveTurn,
    result: TurnResult,
    log: Logger,
    modelId: string,
  ): Promise<void> {
    if (result.stop_reason === 'error' && !result.error)
      result.error = { code: 'ERR_SANDBOX_FAILED', message: 'the turn failed' };
    // The turn and its tool calls end in one transaction, after every write of its events.
    const { stop_reason: stopReason, error } = result;
    const extras = {
      ...(result.items ? { items: result.items } : {}),
      ...(result.usage ? { usage: result.usage } : {}),
    };
    // Its usage is added to the day's rollup in the same transaction (docs/usage.md), also when the chat was deleted meanwhile.
    const usage = {
      userId: turn.userId,
      modelId,
      usage: result.usage,
      toolCalls: rec.toolCalls,
      mails: rec.mails,
      at: new Date(),
    };
    let cost = 0;
    rec.write('the end of a turn', () =>
      store.inTransaction(this.deps.sql, async (trx) => {
        await store.endTurn(trx, turn.turnId, rec.text, stopReason, error, rec.usedTools, extras);
        cost = await recordTurnUsage(trx, usage);
      }),
    );
    await rec.settled();
    const budget = await budgetWarning(this.deps.sql, turn.userId).catch(
      (err: unknown) => void log.error({ err }, 'could not read the budgets'),
    );
    log.info({ stopReason, code: result.error?.code, events: rec.seq, ...result.usage }, 'turn done');
    const metrics = this.deps.services.metrics;
    metrics.turns.inc({ stop_reason: stopReason });
    if (result.usage) metrics.modelTokens.inc({ kind: 'input' }, result.usage.input_tokens);
    if (result.usage) metrics.modelTokens.inc({ kind: 'output' }, result.usage.output_tokens);
    metrics.usage(modelId, result.usage, cost);
    // Exactly one done per turn, made here and nowhere else.
    rec.push({
      type: 'done',
      seq: rec.seq + 1,
      session_id: turn.sessionId,
      turn_id: turn.turnId,
      stop_reason: stopReason,
      ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
      ...(budget ? { budget } : {}),
    });
  }
}
