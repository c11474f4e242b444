/**
 * One turn in a live sandbox: send the prompt over its control connection, pass the agent's events
 * on, end on the supervisor's `turn_end` (or the connection's loss), and cancel when the caller's
 * signal aborts or a backstop deadline passes. The session manager owns which sandbox runs it.
 */
import { isAppError, turnTimedOut, type AppError, type Clock, type Config, type Logger } from '../../core/index.js';
import type {
  AgentEvent,
  PromptContext,
  StopReason,
  TurnEndExtras,
  TurnRequest,
  TurnResult,
} from '../../core/sandbox-protocol.js';
import { TurnCalls } from '../../core/turn-calls.js';
import type { Sandbox } from './sandbox.js';
import { nextPhase, turnStarted } from './turn-phase.js';

/**
 * When the daemon's backstop cancels a turn the agent did not end at its own whole-turn bound:
 * the turn limit plus a tenth of it, at least 5 s and at most 30 s (600 s → 630 s, 10 s → 15 s),
 * so a short limit also gets a short backstop (docs/chat.md, "Bounds").
 */
export function turnBackstopMs(turnTimeoutS: number): number {
  const limit = turnTimeoutS * 1000;
  return limit + Math.min(30_000, Math.max(5_000, Math.round(limit / 10)));
}

/**
 * How long after its cancel the backstop waits for the sandbox's `turn_end` before it ends the
 * turn itself: the supervisor ends a turn its child ignores after 5 s (CANCEL_GRACE_MS).
 */
export const BACKSTOP_END_GRACE_MS = 10_000;

export function turnIn(
  sb: Sandbox,
  req: TurnRequest,
  config: Readonly<Config>,
  log: Logger,
  clock: Clock,
  context: PromptContext = {},
): Promise<TurnResult> {
  const client = sb.client!;
  sb.state = 'busy';
  sb.turn = req;
  const calls = new TurnCalls();
  sb.calls = calls;
  sb.lastUsedAt = clock.now();
  const phase = (sb.phase = turnStarted(sb.lastUsedAt));
  return new Promise<TurnResult>((resolve) => {
    let finished = false;
    let backstopped = false;
    let hardEnd: NodeJS.Timeout | undefined;
    const finish = (stop: StopReason, error?: { code: string; message: string }, extras: TurnEndExtras = {}) => {
      if (finished) return;
      finished = true;
      clearTimeout(hardEnd);
      if (backstopped && stop === 'cancelled') {
        // The user did not stop it: the turn ran past its bound (never "Stopped." on the page).
        const t = turnTimedOut(config.model.turnTimeoutS * 1000, extras.items);
        stop = 'error';
        error = t.error;
        extras = { ...extras, ...(t.items ? { items: t.items } : {}) };
        log.warn({ sessionId: req.sessionId, turnId: req.turnId }, 'turn ended by the daemon backstop');
      }
      if (sb.turn === req) sb.turn = undefined;
      if (sb.calls === calls) sb.calls = undefined;
      if (sb.phase?.startedAt === phase.startedAt) sb.phase = undefined;
      calls.end();
      unwatch();
      clearTimeout(deadline);
      req.signal.removeEventListener('abort', onAbort);
      sb.turns++;
      sb.lastUsedAt = clock.now();
      if (sb.state === 'busy') sb.state = client.closed ? 'dead' : 'ready';
      resolve({ stop_reason: stop, ...(error ? { error } : {}), ...extras, containerId: sb.containerId });
    };
    const unwatch = client.watchTurn(req.turnId, {
      onEvent: (e: AgentEvent) => {
        calls.observe(e);
        if (sb.phase) sb.phase = nextPhase(sb.phase, e, clock.now());
        try {
          req.onEvent(e);
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'onEvent threw');
        }
      },
      onEnd: (stop, error, extras) => finish(stop, error, extras),
    });
    const onAbort = () => {
      client.request({ type: 'cancel', turn_id: req.turnId }).catch(() => undefined);
    };
    // Backstop so a wedged agent cannot hold a turn forever: the agent ends its own turn at
    // AIRLOCK_TURN_TIMEOUT_S (ERR_TURN_TIMEOUT); turnBackstopMs later this cancels it, and the
    // supervisor kills a child that ignores the cancel and ends the turn, which then ends as
    // ERR_TURN_TIMEOUT too. A sandbox that does not even answer that is ended here.
    const deadline = setTimeout(() => {
      backstopped = true;
      onAbort();
      hardEnd = setTimeout(() => finish('cancelled'), BACKSTOP_END_GRACE_MS);
      hardEnd.unref();
    }, turnBackstopMs(config.model.turnTimeoutS));
    deadline.unref();
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
    client.request({ type: 'prompt', turn_id: req.turnId, prompt: req.prompt, ...context }).catch((err: AppError) => {
      finish('error', {
        code: err.code ?? 'ERR_SANDBOX_INTERNAL',
        message:
          err.code === 'ERR_SESSION_BUSY'
            ? 'a turn is already running in this session'
            : 'the sandbox refused the prompt',
      });
    });
  });
}

/**
 * A session start that failed, as the turn's result. A refusal meant for the user (4xx AppError,
 * e.g. ERR_POLICY_MODEL_DENIED) keeps its code and message; anything else is an internal failure,
 * said without details.
 */
export function startFailed(log: Logger, req: TurnRequest, err: unknown): TurnResult {
  if (isAppError(err) && err.status >= 400 && err.status < 500) {
    log.warn({ sessionId: req.sessionId, userId: req.userId, code: err.code }, 'session start refused');
    return { stop_reason: 'error', error: { code: err.code, message: err.message } };
  }
  log.error(
    { sessionId: req.sessionId, err: { code: (err as AppError).code, message: (err as Error).message } },
    'sandbox start failed',
  );
  return { stop_reason: 'error', error: { code: 'ERR_SANDBOX_START', message: 'the sandbox could not be started' } };
}
