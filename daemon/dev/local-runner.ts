/**
 * DEVELOPMENT RUNNER — NO ISOLATION. Never used by `serve`.
 *
 * A TurnRunner that spawns the real agent child (`node dist/agent/main.js`) directly on the
 * host, one warm process per chat session, speaking the same child protocol
 * (ChildInbound/ChildOutbound NDJSON on stdin/stdout) through the same agent host
 * (core/agent-host.ts) the in-container supervisor uses.
 * There is no container, no uid switch, no proxy and no egress control: the child runs as
 * the daemon's own user. It exists so the agent loop and the chat stream can be tested end
 * to end on a machine without Docker; the Docker session manager is the real TurnRunner.
 *
 * The child gets exactly the env given here (never the daemon's own environment).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AgentProcess,
  type Config,
  type Encryptor,
  type Logger,
  type TurnRequest,
  type TurnResult,
  type TurnRunner,
  AppError,
} from '../../core/index.js';
import { sessionModel } from '../../domain/chat/models.js';
import type { Sql } from '../../domain/db/index.js';
import { runWithContext } from '../runtime/context-sync.js';

/**
 * `modelEnv` from the chat models store: the chat's model as the child's AGENT_MODEL_* settings.
 * With no proxy here, the child holds the model's real key (a development runner: no isolation).
 */
export function chatModelEnv(
  db: Sql,
  enc: Encryptor,
  config: Readonly<Pick<Config, 'model'>>,
): NonNullable<LocalRunnerOptions['modelEnv']> {
  return async ({ sessionId }) => {
    const m = await sessionModel(db, enc, config.model, sessionId);
    const env: Record<string, string> = {
      AGENT_MODEL_PROVIDER: m.provider,
      AGENT_MODEL: m.model,
      AGENT_CONTEXT_TOKENS: String(m.contextTokens),
    };
    if (m.baseUrl) env.AGENT_MODEL_BASE_URL = m.baseUrl;
    if (m.apiKey) env.AGENT_MODEL_API_KEY = m.apiKey;
    if (m.images) env.AGENT_MODEL_IMAGES = '1';
    return { revision: m.revision, env };
  };
}

export interface LocalRunnerOptions {
  /** The child's whole environment (AGENT_*, MAIL_* …). PATH is added when missing. */
  env: Record<string, string>;
  /** Per-session additions (e.g. AGENT_USER_TOKEN). */
  envFor?: (req: { userId: number; sessionId: string }) => Record<string, string>;
  /**
   * The chat's model as child env (AGENT_MODEL_*; with no proxy here, its real key) and its
   * revision (docs/chat.md "A model per chat"). Given: a prompt whose `modelRevision` differs from
   * the one the session's child was started with replaces the child, and the new one gets the
   * stored conversation. Absent: the child runs with `env`'s model whatever the chat's.
   */
  modelEnv?: (req: { userId: number; sessionId: string }) => Promise<{ revision: string; env: Record<string, string> }>;
  log: Logger;
  /** Defaults to <dist>/agent/main.js next to this build. */
  agentMain?: string;
  readyTimeoutMs?: number;
  /** How long a cancelled turn may take to end before the child is killed. */
  cancelGraceMs?: number;
}

interface LocalSession {
  userId: number;
  /** The turn its agent's conversation ends with, as far as this runner knows (context-sync.ts). */
  contextHead?: string | null;
  child: AgentProcess;
  busy: boolean;
  /** The revision of the chat's model its child was started with (modelEnv). */
  modelRevision?: string;
}

const DEFAULT_READY_TIMEOUT_MS = 60_000;
const DEFAULT_CANCEL_GRACE_MS = 5_000;

export class LocalTurnRunner implements TurnRunner {
  private readonly sessions = new Map<string, LocalSession>();
  /** Sessions whose child is being (re)started: a prompt meanwhile is busy. */
  private readonly starting = new Set<string>();
  private readonly agentMain: string;
  /** Processes spawned so far (tests check warm reuse). */
  spawned = 0;

  constructor(private readonly opts: LocalRunnerOptions) {
    this.agentMain =
      opts.agentMain ?? join(dirname(dirname(dirname(fileURLToPath(import.meta.url)))), 'agent', 'main.js');
  }

  /** pid of the session's warm child, if one is running. */
  pidOf(sessionId: string): number | undefined {
    const s = this.sessions.get(sessionId);
    return s && !s.child.exited ? s.child.pid : undefined;
  }

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    let s = this.sessions.get(req.sessionId);
    if (s?.busy || this.starting.has(req.sessionId))
      throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session');
    const modelChanged =
      !!s && !!this.opts.modelEnv && req.modelRevision !== undefined && s.modelRevision !== req.modelRevision;
    if (!s || !s.child.usable || modelChanged) {
      this.starting.add(req.sessionId);
      try {
        if (s) {
          // Another model: a new child (it gets the stored conversation, context-sync.ts).
          this.sessions.delete(req.sessionId);
          await s.child.stop();
        }
        const model = await this.opts.modelEnv?.(req);
        s = this.spawnSession(req, model);
        this.sessions.set(req.sessionId, s);
      } catch (err) {
        return {
          stop_reason: 'error',
          error: { code: 'ERR_SANDBOX_START', message: err instanceof Error ? err.message : 'the agent did not start' },
        };
      } finally {
        this.starting.delete(req.sessionId);
      }
    }
    // Marked before the next await so a concurrent prompt sees it.
    s.busy = true;
    const session = s;
    try {
      try {
        await session.child.ready;
      } catch (err) {
        return {
          stop_reason: 'error',
          error: { code: 'ERR_SANDBOX_START', message: err instanceof Error ? err.message : 'the agent did not start' },
        };
      }
      if (req.signal.aborted) return { stop_reason: 'cancelled' };
      return await runWithContext(session, req, (ctx) =>
        session.child.runTurn(req.turnId, req.prompt, (e) => req.onEvent(e), req.signal, ctx),
      );
    } catch (err) {
      // The child went away between ready and the prompt.
      return {
        stop_reason: 'error',
        error: {
          code: 'ERR_SANDBOX_CHILD_EXITED',
          message: err instanceof Error ? err.message : 'the agent process exited',
        },
      };
    } finally {
      session.busy = false;
    }
  }

  private spawnSession(
    req: { userId: number; sessionId: string },
    model?: { revision: string; env: Record<string, string> },
  ): LocalSession {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      ...this.opts.env,
      ...(model?.env ?? {}),
      ...(this.opts.envFor?.(req) ?? {}),
    };
    let log = this.opts.log.child({ sessionId: req.sessionId });
    let errTail = '';
    const child = new AgentProcess({
      command: process.execPath,
      args: [this.agentMain],
      env,
      // The same env again as the session's settings: here the child is started for its session.
      settings: { env },
      readyTimeoutMs: this.opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      cancelGraceMs: this.opts.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS,
      exitedError: { code: 'ERR_SANDBOX_CHILD_EXITED', message: 'the agent process exited during the turn' },
      log: (level, msg, data) => log[level](data ?? {}, msg),
      // The child's stderr is its pino log: forward lines (capped) at debug.
      onStderr: (d) => {
        const lines = (errTail + d).split('\n');
        // Keep a partial last line for the next chunk (capped, like each logged line).
        errTail = (lines.pop() ?? '').slice(0, 2000);
        for (const line of lines) if (line) log.debug({ child: line.slice(0, 2000) }, 'agent log');
      },
    });
    this.spawned++;
    log = log.child({ pid: child.pid });
    const s: LocalSession = {
      userId: req.userId,
      child,
      busy: false,
      ...(model ? { modelRevision: model.revision } : {}),
    };
    child.onExit((code, signal) => {
      if (this.sessions.get(req.sessionId) === s) this.sessions.delete(req.sessionId);
      log.info({ code, signal }, 'agent process exited');
    });
    return s;
  }

  /** Stop every child: end stdin, SIGTERM, SIGKILL after 2 s. Idempotent. */
  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => s.child.stop()));
  }
}
