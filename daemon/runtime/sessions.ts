/**
 * The table of live session sandboxes: which sandbox serves which session, which sessions are
 * busy (a sandbox being acquired or a turn running), how many sandboxes each user is starting,
 * and the lifecycle hooks told when a session goes live or ends. It owns this state; the session
 * manager (session-manager.ts) holds one and acts through its methods, as do the operator's
 * actions (session-ops.ts) and the session start (session-start.ts).
 */
import { AppError, type Config, type Logger } from '../../core/index.js';
import type { SandboxAuditor } from '../../core/sandbox-protocol.js';
import type { EgressHandle } from '../../core/seams.js';
import type { Sandbox } from './sandbox.js';

/** A session's sandbox became live: started on a first prompt, or adopted after a daemon restart. */
export interface SessionLiveInfo {
  sessionId: string;
  userId: number;
  /** Env names of the real tokens its egress gateway holds on the host (names only). */
  tokenEnvs: string[];
  /** That gateway: token rotation replaces the real tokens in it (daemon/host/tokens.ts). Absent without a gateway. */
  egress?: Pick<EgressHandle, 'setTokens'>;
  adopted: boolean;
}

/** Whose sandbox ended and since when it was held (sandbox time in usage, docs/usage.md). */
export interface SessionHeld {
  userId: number;
  /** Its claim (ms since the epoch, the runtime's clock); an adopted one keeps its first claim's. */
  claimedAt: number;
  /** The chat model revision it ran (`<id>:<version>`); absent when the preparer knows no chat models. */
  modelRevision?: string;
}

/**
 * Lifecycle hooks the composition root wires (daemon/serve.ts: token rotation track/untrack).
 * Called synchronously; a hook that throws is logged and ignored.
 */
export interface SessionHooks {
  onSessionLive?(s: SessionLiveInfo): void;
  /**
   * A live session's sandbox ended: idle or dead reap, operator kill or restart, the user
   * deactivated or disconnected, lost (killed from outside), a policy change, or removal at shutdown.
   */
  onSessionEnded?(sessionId: string, why: string, held?: SessionHeld): void;
  /**
   * Asked on a restart before a session container is adopted: false (the user was deactivated
   * or removed while no daemon ran, or another node of the fleet took the session over) removes
   * the container instead. Absent: every one is adopted.
   */
  mayAdopt?(s: { sessionId: string; userId: number }): boolean | Promise<boolean>;
}

export interface SessionTableOptions {
  config: Readonly<Config>;
  log: Logger;
  hooks?: SessionHooks;
  /** Told when a session ends (domain/mail/gate.ts forgets its held sends). */
  auditor?: SandboxAuditor;
}

export class SessionTable {
  /** Session sandboxes by session id. */
  readonly #sessions = new Map<string, Sandbox>();
  /** Sessions whose sandbox is being acquired or which run a turn (synchronous busy guard). */
  readonly #busy = new Set<string>();
  /** Sandboxes being started, per user (they count against AIRLOCK_MAX_SANDBOXES_PER_USER). */
  readonly #startingFor = new Map<number, number>();

  constructor(private readonly o: SessionTableOptions) {}

  get(sessionId: string): Sandbox | undefined {
    return this.#sessions.get(sessionId);
  }

  /** A copy: callers remove sandboxes while they walk it. */
  all(): Sandbox[] {
    return [...this.#sessions.values()];
  }

  /** The session's sandbox is live (started or adopted): tell the lifecycle hook. */
  add(sb: Sandbox, live: SessionLiveInfo): void {
    this.#sessions.set(live.sessionId, sb);
    this.hook('onSessionLive', () => this.o.hooks?.onSessionLive?.(live));
  }

  /** Empty the table without telling anyone (shutdown that keeps the containers for adoption). */
  clear(): void {
    this.#sessions.clear();
  }

  isBusy(sessionId: string): boolean {
    return this.#busy.has(sessionId);
  }

  hold(sessionId: string): void {
    this.#busy.add(sessionId);
  }

  release(sessionId: string): void {
    this.#busy.delete(sessionId);
  }

  liveCount(): number {
    let n = 0;
    for (const s of this.#sessions.values()) if (s.state !== 'dead') n++;
    return n;
  }

  /** Take a sandbox that is being removed out of the table, telling the lifecycle once. */
  forget(sb: Sandbox, why: string): void {
    if (!sb.sessionId || this.#sessions.get(sb.sessionId) !== sb) return;
    this.#sessions.delete(sb.sessionId);
    const sessionId = sb.sessionId;
    const held =
      sb.userId === undefined
        ? undefined
        : { userId: sb.userId, claimedAt: sb.claimedAt ?? sb.createdAt, modelRevision: sb.modelRevision };
    this.hook('onSessionEnded', () => this.o.hooks?.onSessionEnded?.(sessionId, why, held));
    this.hook('auditor.sessionEnded', () => this.o.auditor?.sessionEnded(sessionId));
  }

  /** Call a hook; a hook failure must not break the runtime. */
  private hook(name: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.log.warn({ hook: name, err: (err as Error).message }, 'session hook threw');
    }
  }

  /**
   * Room for one more sandbox of `userId` under AIRLOCK_MAX_SANDBOXES_PER_USER (docs/runtime.md,
   * Per-user cap): undefined while the user is under it; at it, the user's oldest idle sandbox
   * (ready, no turn) to end first, marked busy at once so no turn starts in it meanwhile (the
   * caller removes it, then releases it); none idle, 429 ERR_SESSION_USER_LIMIT. Synchronous, like
   * the caller's busy guard, so two prompts at once cannot both pass: sandboxes still starting count too.
   */
  makeRoomFor(userId: number): Sandbox | undefined {
    let held = this.#startingFor.get(userId) ?? 0;
    let oldest: Sandbox | undefined;
    for (const sb of this.#sessions.values()) {
      if (sb.userId !== userId || sb.state === 'dead') continue;
      held++;
      if (sb.state === 'ready' && !this.#busy.has(sb.sessionId!) && (!oldest || sb.lastUsedAt < oldest.lastUsedAt))
        oldest = sb;
    }
    const cap = this.o.config.sandbox.maxPerUser;
    if (held < cap) return undefined;
    if (!oldest) {
      this.o.log.warn({ userId, held, cap }, 'per-user sandbox cap reached and none idle');
      throw new AppError(
        'ERR_SESSION_USER_LIMIT',
        `you already have ${held} live chats with a sandbox on this server, the most allowed, and each is working; wait for one to finish, then try again`,
      );
    }
    this.#busy.add(oldest.sessionId!);
    return oldest;
  }

  /** Count a sandbox of `userId` as starting (+1) or no longer (-1). */
  starting(userId: number, d: 1 | -1): void {
    const n = (this.#startingFor.get(userId) ?? 0) + d;
    if (n > 0) this.#startingFor.set(userId, n);
    else this.#startingFor.delete(userId);
  }
}
