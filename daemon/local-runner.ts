/**
 * DEVELOPMENT RUNNER — NO ISOLATION. Never used by `serve`.
 *
 * A TurnRunner that spawns the real agent child (`node dist/agent/main.js`) directly on the
 * host, one warm process per chat session, speaking the same child protocol
 * (ChildInbound/ChildOutbound NDJSON on stdin/stdout) the in-container supervisor speaks.
 * There is no container, no uid switch, no proxy and no egress control: the child runs as
 * the daemon's own user. It exists so the agent loop and the chat stream can be tested end
 * to end on a machine without Docker; the Docker session manager is the real TurnRunner.
 *
 * The child gets exactly the env given here (never the daemon's own environment).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { ConflictError, type AgentEvent, type ChildInbound, type ChildOutbound, type Logger, type TurnRequest, type TurnResult, type TurnRunner } from '../core/index.js';

export interface LocalRunnerOptions {
  /** The child's whole environment (AGENT_*, MAIL_* …). PATH is added when missing. */
  env: Record<string, string>;
  /** Per-session additions (e.g. AGENT_USER_TOKEN). */
  envFor?: (req: { userId: number; sessionId: string }) => Record<string, string>;
  log: Logger;
  /** Defaults to <dist>/agent/main.js next to this build. */
  agentMain?: string;
  readyTimeoutMs?: number;
  /** How long a cancelled turn may take to end before the child is killed. */
  cancelGraceMs?: number;
}

interface TurnHandlers {
  onEvent(e: AgentEvent): void;
  onEnd(m: Extract<ChildOutbound, { type: 'turn_end' }>): void;
}

interface LocalSession {
  userId: number;
  proc: ChildProcess;
  ready: Promise<void>;
  busy: boolean;
  exited: boolean;
  turns: Map<string, TurnHandlers>;
  onExit: Set<() => void>;
}

const DEFAULT_READY_TIMEOUT_MS = 60_000;
const DEFAULT_CANCEL_GRACE_MS = 5_000;
const KILL_AFTER_MS = 2_000;

export class LocalTurnRunner implements TurnRunner {
  private readonly sessions = new Map<string, LocalSession>();
  private readonly agentMain: string;
  /** Processes spawned so far (tests check warm reuse). */
  spawned = 0;

  constructor(private readonly opts: LocalRunnerOptions) {
    this.agentMain = opts.agentMain ?? join(dirname(dirname(fileURLToPath(import.meta.url))), 'agent', 'main.js');
  }

  /** pid of the session's warm child, if one is running. */
  pidOf(sessionId: string): number | undefined {
    const s = this.sessions.get(sessionId);
    return s && !s.exited ? s.proc.pid : undefined;
  }

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    let s = this.sessions.get(req.sessionId);
    if (s?.busy) throw new ConflictError('ERR_SESSION_BUSY', 'a turn is already running in this session');
    if (!s || s.exited) {
      s = this.spawnSession(req);
      this.sessions.set(req.sessionId, s);
    }
    // Marked before the first await so a concurrent prompt sees it.
    s.busy = true;
    const session = s;
    try {
      try {
        await session.ready;
      } catch (err) {
        return { stop_reason: 'error', error: { code: 'ERR_SANDBOX_START', message: (err as Error).message } };
      }
      if (req.signal.aborted) return { stop_reason: 'cancelled' };
      return await this.playTurn(session, req);
    } finally {
      session.busy = false;
    }
  }

  private playTurn(s: LocalSession, req: TurnRequest): Promise<TurnResult> {
    return new Promise<TurnResult>((resolve) => {
      let graceTimer: NodeJS.Timeout | undefined;
      const finish = (r: TurnResult) => {
        clearTimeout(graceTimer);
        s.turns.delete(req.turnId);
        s.onExit.delete(onExit);
        req.signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onExit = () => finish({ stop_reason: 'error', error: { code: 'ERR_SANDBOX_EXITED', message: 'the agent process exited during the turn' } });
      const onAbort = () => {
        this.write(s, { type: 'cancel', turn_id: req.turnId });
        graceTimer = setTimeout(() => {
          this.opts.log.warn({ sessionId: req.sessionId, turnId: req.turnId }, 'agent did not end a cancelled turn; killing it');
          this.kill(s);
          finish({ stop_reason: 'cancelled' });
        }, this.opts.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS);
        graceTimer.unref();
      };
      s.turns.set(req.turnId, {
        onEvent: (e) => req.onEvent(e),
        onEnd: (m) => finish({ stop_reason: m.stop_reason, ...(m.error ? { error: m.error } : {}) }),
      });
      s.onExit.add(onExit);
      req.signal.addEventListener('abort', onAbort, { once: true });
      this.write(s, { type: 'prompt', turn_id: req.turnId, prompt: req.prompt });
    });
  }

  private spawnSession(req: { userId: number; sessionId: string }): LocalSession {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...this.opts.env, ...(this.opts.envFor?.(req) ?? {}) };
    const proc = spawn(process.execPath, [this.agentMain], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.spawned++;
    const log = this.opts.log.child({ sessionId: req.sessionId, pid: proc.pid });
    const s: LocalSession = { userId: req.userId, proc, ready: Promise.resolve(), busy: false, exited: false, turns: new Map(), onExit: new Set() };
    proc.stdin!.on('error', () => {
      // EPIPE after the child died; the exit handler ends the turn.
    });
    s.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the agent did not become ready in time')), this.opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
      timer.unref();
      const out = createInterface({ input: proc.stdout! });
      out.on('line', (line) => {
        let m: ChildOutbound;
        try {
          m = JSON.parse(line) as ChildOutbound;
        } catch {
          log.warn('agent wrote a non-JSON line to stdout');
          return;
        }
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (m.type === 'event') s.turns.get(m.turn_id)?.onEvent(m.event);
        else if (m.type === 'turn_end') s.turns.get(m.turn_id)?.onEnd(m);
      });
      let stdoutDone = false;
      out.on('close', () => {
        stdoutDone = true;
      });
      proc.on('exit', (code, signal) => {
        clearTimeout(timer);
        s.exited = true;
        if (this.sessions.get(req.sessionId) === s) this.sessions.delete(req.sessionId);
        log.info({ code, signal }, 'agent process exited');
        reject(new Error('the agent process exited before it was ready'));
        // Let the lines it wrote before dying be read first (its MCP servers may hold
        // stderr open, so do not wait for 'close' on the whole process).
        const endTurns = () => {
          for (const fn of [...s.onExit]) fn();
        };
        if (stdoutDone) endTurns();
        else {
          const t = setTimeout(endTurns, 200);
          out.once('close', () => {
            clearTimeout(t);
            endTurns();
          });
        }
      });
      proc.on('error', (err) => log.error({ err: err.message }, 'agent process error'));
    });
    s.ready.catch(() => undefined);
    // The child's stderr is its pino log: forward lines (capped) at debug.
    createInterface({ input: proc.stderr! }).on('line', (line) => log.debug({ child: line.slice(0, 2000) }, 'agent log'));
    return s;
  }

  private write(s: LocalSession, m: ChildInbound): void {
    if (!s.exited) s.proc.stdin!.write(JSON.stringify(m) + '\n');
  }

  private kill(s: LocalSession): void {
    if (s.exited) return;
    s.proc.stdin!.end();
    try {
      s.proc.kill('SIGTERM');
    } catch {
      // ESRCH: already gone.
    }
    const t = setTimeout(() => {
      if (!s.exited) s.proc.kill('SIGKILL');
    }, KILL_AFTER_MS);
    t.unref();
  }

  /** Stop every child: end stdin, SIGTERM, SIGKILL after 2 s. Idempotent. */
  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(
      all.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.exited) return resolve();
            s.proc.once('exit', () => resolve());
            this.kill(s);
          }),
      ),
    );
  }
}
