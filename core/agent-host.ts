/**
 * The agent child's host: spawns one agent process (`node agent/main.js`), waits for its
 * `ready` line (the child is up and idle, its MCP servers started), hands it the session's
 * settings (`configure`, answered by `configured`), keeps the map of running turns, relays their events, cancels a turn with a
 * grace period and then kills the process. The in-container supervisor and the daemon's
 * local (no-isolation, development) runner both drive the child through this one class, so
 * the child protocol (ChildInbound / ChildOutbound on stdin/stdout) has one implementation
 * on the host side. It lives in core/ because the supervisor ships in the sandbox and the
 * runner on the host, and neither may import the other.
 *
 * Every stdout line is checked against ChildOutboundSchema; a bad line is logged (code and
 * failing fields only) and dropped. What the process gets as env, uid and cwd is the caller's
 * decision: this class adds nothing to the env.
 */
import type { ChildProcess } from 'node:child_process';
import { launchAgent, type AgentLaunch, type LaunchedAgent } from './agent-launch.js';
import { AppError, appErrorFromPeer } from './errors.js';
import type { ErrorCode } from './error-codes/index.js';
import { protocolLogFields, readMessages, writeMessage } from './ndjson.js';
import {
  ChildOutboundSchema,
  type AgentEvent,
  type ChildInbound,
  type ChildOutbound,
  type PromptContext,
  type StopReason,
  type TurnEndExtras,
} from './sandbox-protocol.js';

export type AgentHostLog = (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

export interface AgentProcessOptions extends AgentLaunch {
  /**
   * The process, when the owner launched it already with these same options (launchAgent):
   * it is taken over, with whatever it did meanwhile. Absent: the host spawns it.
   */
  launched?: LaunchedAgent;
  /**
   * The session's settings, sent in `configure` as soon as the child is up; then `ready`
   * resolves only once it is configured. Absent: the child stays idle until configure().
   */
  settings?: { env: Record<string, string>; cwd?: string };
  /** `ready` must arrive within this time, else `ready` rejects with ERR_SANDBOX_CHILD_TIMEOUT. */
  readyTimeoutMs: number;
  /** How long a cancelled turn may take to end before the turn is ended and the process killed. */
  cancelGraceMs: number;
  /** SIGTERM → SIGKILL delay when killing. */
  killAfterMs?: number;
  /** What a turn still running when the process exits resolves with. */
  exitedError: { code: ErrorCode; message: string };
  log: AgentHostLog;
  /** The child's stderr (its log), chunk by chunk. Ignored when absent. */
  onStderr?: (chunk: string) => void;
}

export interface TurnOutcome extends TurnEndExtras {
  stop_reason: StopReason;
  error?: { code: string; message: string };
}

interface RunningTurn {
  onEvent(e: AgentEvent): void;
  finish(r: TurnOutcome): void;
  cancelTimer?: NodeJS.Timeout;
}

const DEFAULT_KILL_AFTER_MS = 2_000;
/** After `exit`, how long to wait for stdout to drain so lines written before dying are read first. */
const STDOUT_DRAIN_MS = 200;

/** One spawned agent child. Not restarted here: the owner decides (the supervisor does, with backoff). */
export class AgentProcess {
  readonly proc: ChildProcess;
  /** Resolves on the child's `ready` line (up, idle); rejects when it exits, fails to spawn or times out first. */
  readonly booted: Promise<void>;
  /** Resolves once the child is up and configured (see `settings` and configure()); rejects like `booted` or when configuring fails. */
  readonly ready: Promise<void>;
  /** The `ready` line arrived. */
  isBooted = false;
  /** `configured` arrived without error. */
  isConfigured = false;
  exited = false;
  /** Set once kill() was called: the process is on its way out and takes no new turn. */
  killing = false;
  private readonly turns = new Map<string, RunningTurn>();
  private readonly exitHandlers = new Set<(code: number | null, signal: NodeJS.Signals | null) => void>();
  private configuring?: { resolve: () => void; reject: (e: Error) => void; promise: Promise<void> };
  private resolveReady!: () => void;
  private rejectReady!: (e: Error) => void;

  constructor(private readonly o: AgentProcessOptions) {
    const launched = o.launched ?? launchAgent(o);
    // What it did before this host existed (only a process launched earlier has a past).
    const { error: earlyError, exit: earlyExit } = launched;
    const proc = launched.proc;
    this.proc = proc;
    let resolveBooted!: () => void;
    let rejectBooted!: (e: Error) => void;
    this.booted = new Promise<void>((res, rej) => {
      resolveBooted = res;
      rejectBooted = rej;
    });
    this.booted.catch(() => undefined);
    this.ready = new Promise<void>((res, rej) => {
      this.resolveReady = res;
      this.rejectReady = rej;
    });
    this.ready.catch(() => undefined);
    const rejectBoth = (e: Error) => {
      rejectBooted(e);
      this.rejectReady(e);
      this.configuring?.reject(e);
    };
    const readyTimer = setTimeout(
      () => rejectBoth(new AppError('ERR_SANDBOX_CHILD_TIMEOUT', 'the agent did not become ready in time')),
      o.readyTimeoutMs,
    );
    readyTimer.unref();

    proc.stdin!.on('error', () => {
      // EPIPE after the child died: the exit handler ends its turns.
    });
    readMessages(proc.stdout!, {
      schema: ChildOutboundSchema,
      onMessage: (m) =>
        this.onChildMessage(m, () => {
          clearTimeout(readyTimer);
          this.isBooted = true;
          resolveBooted();
        }),
      onReject: (err) => o.log('warn', 'agent child wrote a bad line', protocolLogFields(err, 'agent-stdout')),
    });
    let stdoutDone = proc.stdout!.closed;
    proc.stdout!.once('close', () => {
      stdoutDone = true;
    });
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (d: string) => o.onStderr?.(d));

    const onGone = (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.exited) return;
      this.exited = true;
      clearTimeout(readyTimer);
      rejectBoth(new AppError(o.exitedError.code, `the agent exited before it was ready (${code ?? signal})`));
      for (const fn of [...this.exitHandlers]) fn(code, signal);
      // Let the lines it wrote before dying be read first (its MCP servers may hold stderr
      // open, so do not wait for the whole process to close).
      const endTurns = () => {
        for (const t of [...this.turns.values()]) t.finish({ stop_reason: 'error', error: { ...o.exitedError } });
      };
      if (stdoutDone) endTurns();
      else {
        const t = setTimeout(endTurns, STDOUT_DRAIN_MS);
        proc.stdout!.once('close', () => {
          clearTimeout(t);
          endTurns();
        });
      }
    };
    const onError = (err: NodeJS.ErrnoException) => {
      o.log('error', 'agent process error', { err: err.code ?? err.message });
      if (proc.pid === undefined) {
        // A failed spawn emits no 'exit': treat it as one.
        rejectBoth(new AppError('ERR_SANDBOX_CHILD_SPAWN', `agent could not be spawned: ${err.code ?? err.message}`));
        onGone(null, null);
      }
    };
    proc.on('exit', onGone);
    proc.on('error', onError);
    // Replayed on the next turn of the loop, as a spawn's own events come: whoever built this
    // host registers its onExit() first.
    if (earlyError || earlyExit) {
      setImmediate(() => {
        if (earlyError) onError(earlyError);
        if (earlyExit) onGone(earlyExit.code, earlyExit.signal);
      });
    }
  }

  /** A line from the agent child: ready, configured, a turn's event or its end. */
  private onChildMessage(m: ChildOutbound, booted: () => void): void {
    if (m.type === 'ready') {
      booted();
      if (this.o.settings) void this.configure(this.o.settings.env, this.o.settings.cwd).catch(() => undefined);
    } else if (m.type === 'configured') {
      const c = this.configuring;
      if (!c) return;
      if (m.error) c.reject(appErrorFromPeer(m.error));
      else {
        this.isConfigured = true;
        c.resolve();
      }
    } else if (m.type === 'event') this.turns.get(m.turn_id)?.onEvent(m.event);
    else
      this.turns.get(m.turn_id)?.finish({
        stop_reason: m.stop_reason,
        ...(m.error ? { error: m.error } : {}),
        ...(m.items ? { items: m.items } : {}),
        ...(m.usage ? { usage: m.usage } : {}),
      });
  }

  /**
   * Hand the child its session's settings (once; a second call returns the first's promise).
   * Waits for the child to be up; resolves on `configured`, rejects with the child's error code
   * (ERR_AGENT_CONFIG for refused settings) or when the child exits or times out first.
   */
  configure(env: Record<string, string>, cwd?: string): Promise<void> {
    if (this.configuring) return this.configuring.promise;
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.configuring = { resolve, reject, promise };
    promise.then(this.resolveReady, this.rejectReady);
    promise.catch(() => undefined);
    const timer = setTimeout(
      () => reject(new AppError('ERR_SANDBOX_CHILD_TIMEOUT', 'the agent was not configured in time')),
      this.o.readyTimeoutMs,
    );
    timer.unref();
    promise.finally(() => clearTimeout(timer)).catch(() => undefined);
    this.booted.then(
      () => {
        try {
          this.send({ type: 'configure', env, ...(cwd !== undefined ? { cwd } : {}) });
        } catch (err) {
          reject(err instanceof Error ? err : new AppError('ERR_SANDBOX_CHILD_EXITED', 'agent is not running'));
        }
      },
      (err: Error) => reject(err),
    );
    return promise;
  }

  /** Alive and not being killed: it may take a turn. */
  get usable(): boolean {
    return !this.exited && !this.killing;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Called once when the process exits (or fails to spawn), before its turns are ended. */
  onExit(fn: (code: number | null, signal: NodeJS.Signals | null) => void): void {
    this.exitHandlers.add(fn);
  }

  /** Turns running now. */
  runningTurns(): string[] {
    return [...this.turns.keys()];
  }

  /**
   * Send a prompt and resolve when its turn ends (turn_end from the child, the process exiting,
   * or a cancel that was not honoured in time). Throws ERR_SANDBOX_CHILD_EXITED at once when
   * the process is gone. `signal` aborting cancels the turn.
   */
  runTurn(
    turnId: string,
    prompt: string,
    onEvent: (e: AgentEvent) => void,
    signal?: AbortSignal,
    context: PromptContext = {},
  ): Promise<TurnOutcome> {
    this.send({ type: 'prompt', turn_id: turnId, prompt, ...context });
    return new Promise<TurnOutcome>((resolve) => {
      const onAbort = () => this.cancel(turnId);
      const turn: RunningTurn = {
        onEvent,
        finish: (r) => {
          if (this.turns.get(turnId) !== turn) return;
          this.turns.delete(turnId);
          clearTimeout(turn.cancelTimer);
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
      };
      this.turns.set(turnId, turn);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ask the child to cancel a turn; after the grace period the turn ends `cancelled` and the process is killed. */
  cancel(turnId: string): void {
    const turn = this.turns.get(turnId);
    if (!turn || turn.cancelTimer) return;
    try {
      this.send({ type: 'cancel', turn_id: turnId });
    } catch {
      // Already gone: the exit handler ends the turn.
    }
    turn.cancelTimer = setTimeout(() => {
      this.o.log('warn', 'agent did not end a cancelled turn; killing it', { turnId });
      turn.finish({ stop_reason: 'cancelled' });
      this.kill();
    }, this.o.cancelGraceMs);
    turn.cancelTimer.unref();
  }

  private send(m: ChildInbound): void {
    const stdin = this.proc.stdin;
    if (!this.usable || !stdin || !writeMessage<ChildInbound>(stdin, m))
      throw new AppError('ERR_SANDBOX_CHILD_EXITED', 'agent is not running');
  }

  /** End stdin, SIGTERM, SIGKILL after `killAfterMs`. Idempotent. */
  kill(): void {
    if (this.exited || this.killing) return;
    this.killing = true;
    this.proc.stdin?.end();
    try {
      this.proc.kill('SIGTERM');
    } catch {
      // ESRCH: already gone.
    }
    const t = setTimeout(() => {
      if (!this.exited) this.proc.kill('SIGKILL');
    }, this.o.killAfterMs ?? DEFAULT_KILL_AFTER_MS);
    t.unref();
  }

  /** Kill and wait for the exit. */
  async stop(): Promise<void> {
    if (this.exited || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.kill();
    await gone;
  }
}
