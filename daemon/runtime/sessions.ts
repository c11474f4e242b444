/**
 * The table of live session sandboxes and what acts on it outside a turn: lifecycle hooks,
 * reaping, staleness, lookup, and the operator's kill/restart/rotate. The session manager
 * (session-manager.ts) extends it with the turn path and session start.
 */
import { AppError, isAppError, type Config, type Logger, type Metrics } from '../../core/index.js';
import type { InspectResult, OperatorTarget } from './operator.js';
import type { MailHold, MailHoldRelease, SandboxAuditor, TurnRequest, TurnResult } from '../../core/sandbox-protocol.js';
import type { SandboxDetails } from './sandbox-driver.js';
import type { ProxyDecisionMessage } from './sandbox-client.js';
import { connected, sandboxInfo, type Sandbox, type SandboxInfo } from './sandbox.js';


/** A session's sandbox became live: started on a first prompt, or adopted after a daemon restart. */
export interface SessionLiveInfo {
  sessionId: string;
  userId: number;
  /** Env names of the real tokens its egress gateway holds on the host (names only). */
  tokenEnvs: string[];
  adopted: boolean;
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
  onSessionEnded?(sessionId: string, why: string): void;
  /**
   * Asked on a restart before a session container is adopted: false (the user was deactivated
   * or removed while no daemon ran, or another node of the fleet took the session over) removes
   * the container instead. Absent: every one is adopted.
   */
  mayAdopt?(s: { sessionId: string; userId: number }): boolean | Promise<boolean>;
}

export abstract class SessionTable implements OperatorTarget {
  /** Session sandboxes by session id. */
  protected readonly sessions = new Map<string, Sandbox>();
  /** Sessions whose sandbox is being acquired or which run a turn (synchronous busy guard). */
  protected readonly busy = new Set<string>();
  /** Sandboxes being started, per user (they count against AIRLOCK_MAX_SANDBOXES_PER_USER). */
  protected readonly startingFor = new Map<number, number>();
  protected closed = false;
  /** The audit trail and held mail sends (daemon/mail-gate.ts); set by the session manager. */
  protected auditor?: SandboxAuditor;

  constructor(
    protected readonly config: Readonly<Config>,
    protected readonly log: Logger,
    protected readonly now: () => number,
    protected readonly metrics?: Metrics,
    protected readonly hooks?: SessionHooks,
  ) {}

  protected abstract acquire(sessionId: string, userId: number): Promise<Sandbox>;
  protected abstract remove(sb: Sandbox, why: string): Promise<void>;
  protected abstract poolMembers(): Sandbox[];
  protected abstract refillPool(): void;
  protected abstract details(sb: Sandbox): Promise<SandboxDetails>;

  protected liveSessionCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.state !== 'dead') n++;
    return n;
  }

  /** Live-session and pool gauges, after every change. */
  protected gauges(): void {
    this.metrics?.sessionsLive.set(this.liveSessionCount());
    this.metrics?.poolReady.set(this.poolMembers().length);
  }

  /** Call a hook; a hook failure must not break the runtime. */
  private hook(name: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.warn({ hook: name, err: (err as Error).message }, 'session hook threw');
    }
  }

  protected live(s: SessionLiveInfo): void {
    this.hook('onSessionLive', () => this.hooks?.onSessionLive?.(s));
  }

  /** Take a sandbox that is being removed out of the table, telling the lifecycle once. */
  protected forget(sb: Sandbox, why: string): void {
    if (!sb.sessionId || this.sessions.get(sb.sessionId) !== sb) return;
    this.sessions.delete(sb.sessionId);
    const sessionId = sb.sessionId;
    this.hook('onSessionEnded', () => this.hooks?.onSessionEnded?.(sessionId, why));
    this.hook('auditor.sessionEnded', () => this.auditor?.sessionEnded(sessionId));
  }

  /** The in-container proxy's decisions: counted in /metrics, refusals logged with the session. */
  protected proxyDecision(sb: Sandbox, d: ProxyDecisionMessage): void {
    const route = typeof d.route === 'string' && /^[a-z0-9_-]{1,32}$/.test(d.route) ? d.route : 'none';
    const outcome = d.outcome === 'forwarded' || d.outcome === 'refused' || d.outcome === 'upstream_error' ? d.outcome : 'refused';
    this.metrics?.proxyDecisions.inc({ route, outcome });
    if (outcome === 'forwarded') return;
    const code = typeof d.code === 'string' && /^ERR_[A-Z_]{1,40}$/.test(d.code) ? d.code : undefined;
    this.log.warn({ sessionId: sb.sessionId, containerId: sb.containerId.slice(0, 12), route, outcome, status: Number(d.status) || 0, code }, 'sandbox proxy refused a request');
  }

  /** A mail send the egress gateway holds: decided by the auditor (daemon/mail-gate.ts). */
  protected async mailHold(sb: Sandbox, h: MailHold): Promise<MailHoldRelease> {
    if (!sb.sessionId || sb.userId === undefined) return { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: 'this sandbox has no session' };
    if (!this.auditor) return h.verdict === 'allow' ? { allow: true } : { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: 'this server cannot ask for approvals' };
    try {
      return await this.auditor.hold({ sessionId: sb.sessionId, userId: sb.userId, turn: sb.turn }, h);
    } catch (err) {
      this.log.error({ sessionId: sb.sessionId, err: (err as Error).message }, 'a held mail send could not be decided');
      return { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: 'the send could not be checked; try again' };
    }
  }

  /**
   * A refusal meant for the user (4xx AppError, e.g. ERR_POLICY_MODEL_DENIED) keeps its code and
   * message; anything else is an internal failure, said without details.
   */
  protected startFailed(req: TurnRequest, err: unknown): TurnResult {
    if (isAppError(err) && err.status >= 400 && err.status < 500) {
      this.log.warn({ sessionId: req.sessionId, userId: req.userId, code: err.code }, 'session start refused');
      return { stop_reason: 'error', error: { code: err.code, message: err.message } };
    }
    this.log.error({ sessionId: req.sessionId, err: { code: (err as AppError).code, message: (err as Error).message } }, 'sandbox start failed');
    return { stop_reason: 'error', error: { code: 'ERR_SANDBOX_START', message: 'the sandbox could not be started' } };
  }

  /**
   * Room for one more sandbox of `userId` under AIRLOCK_MAX_SANDBOXES_PER_USER (docs/runtime.md,
   * Per-user cap): undefined while the user is under it; at it, the user's oldest idle sandbox
   * (ready, no turn) to end first, marked busy at once so no turn starts in it meanwhile; none idle,
   * 429 ERR_SESSION_USER_LIMIT. Synchronous, like the caller's busy guard, so two prompts at once
   * cannot both pass: sandboxes still starting count too.
   */
  protected makeRoomFor(userId: number): Sandbox | undefined {
    let held = this.startingFor.get(userId) ?? 0;
    let oldest: Sandbox | undefined;
    for (const sb of this.sessions.values()) {
      if (sb.userId !== userId || sb.state === 'dead') continue;
      held++;
      if (sb.state === 'ready' && !this.busy.has(sb.sessionId!) && (!oldest || sb.lastUsedAt < oldest.lastUsedAt)) oldest = sb;
    }
    const cap = this.config.sandbox.maxPerUser;
    if (held < cap) return undefined;
    if (!oldest) {
      this.log.warn({ userId, held, cap }, 'per-user sandbox cap reached and none idle');
      throw new AppError('ERR_SESSION_USER_LIMIT', `you already have ${held} live chats with a sandbox on this server, the most allowed, and each is working; wait for one to finish, then try again`);
    }
    this.busy.add(oldest.sessionId!);
    return oldest;
  }

  /** End the sandbox makeRoomFor chose, for a new sandbox of `forSession`; then it is no longer busy. */
  protected async endToMakeRoom(victim: Sandbox, forSession: string): Promise<void> {
    this.log.info({ userId: victim.userId, sessionId: victim.sessionId, for: forSession }, "per-user sandbox cap: the user's oldest idle sandbox ends to make room");
    try {
      await this.remove(victim, 'per-user cap');
    } finally {
      this.busy.delete(victim.sessionId!);
    }
  }

  /** Count a sandbox of `userId` as starting (+1) or no longer (-1). */
  protected starting(userId: number, d: 1 | -1): void {
    const n = (this.startingFor.get(userId) ?? 0) + d;
    if (n > 0) this.startingFor.set(userId, n);
    else this.startingFor.delete(userId);
  }

  protected isStale(sb: Sandbox): boolean {
    return !!sb.sessionId && this.now() - (sb.claimedAt ?? sb.createdAt) > this.config.sandbox.staleS * 1000;
  }

  /**
   * Remove sandboxes idle longer than AIRLOCK_SESSION_IDLE_S and dead ones (container killed from
   * outside, crashed, OOM: its exited container and slot folder would otherwise stay until the
   * session's next prompt). The next prompt of a session reaped dead runs in a new one with the
   * stored conversation.
   */
  async reap(): Promise<string[]> {
    const idleMs = this.config.sandbox.idleS * 1000;
    const reaped: string[] = [];
    for (const sb of [...this.sessions.values()]) {
      if (this.busy.has(sb.sessionId!)) continue;
      const why = sb.state === 'dead' ? 'dead' : sb.state === 'ready' && Date.now() - sb.lastUsedAt > idleMs ? 'idle' : undefined;
      if (!why) continue;
      reaped.push(sb.sessionId!);
      await this.remove(sb, why);
    }
    return reaped;
  }

  /**
   * Whether this session has a live sandbox of this user (the agent API accepts an
   * AGENT_USER_TOKEN only then: a token of an ended session is refused).
   */
  isLive(sessionId: string, userId: number): boolean {
    const sb = this.sessions.get(sessionId);
    return !!sb && sb.userId === userId && (sb.state === 'ready' || sb.state === 'busy') && connected(sb);
  }

  private info(sb: Sandbox): SandboxInfo {
    return sandboxInfo(sb, this.isStale(sb));
  }

  list(): SandboxInfo[] {
    return [...this.sessions.values(), ...this.poolMembers()].map((s) => this.info(s)).sort((a, b) => a.createdAt - b.createdAt);
  }

  /** By session id, container id prefix (≥ 6 characters) or container name. */
  private find(id: string): Sandbox {
    const bySession = this.sessions.get(id);
    if (bySession) return bySession;
    if (id.length >= 6) {
      const hit = [...this.sessions.values(), ...this.poolMembers()].filter((s) => s.containerId.startsWith(id) || s.containerName === id);
      if (hit.length === 1) return hit[0];
    }
    throw new AppError('ERR_SESSION_NOT_FOUND', `no live session or container ${id}`);
  }

  /** The container of a live session or pool member (session id, container id prefix or name). */
  containerOf(id: string): string {
    return this.find(id).containerId;
  }

  async inspect(id: string): Promise<InspectResult> {
    const sb = this.find(id);
    const container = await this.details(sb);
    const supervisor = connected(sb) ? await sb.client!.request({ type: 'ping' }, 3000).catch(() => null) : null;
    return { ...this.info(sb), container, supervisor };
  }

  /** Stop and remove one session's sandbox (next prompt starts a fresh one). */
  async kill(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    const info = this.info(sb);
    await this.remove(sb, 'killed by operator');
    if (!sb.sessionId) this.refillPool();
    return info;
  }

  /** Replace a session's sandbox with a fresh one (fresh tokens from the preparer). */
  async restart(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    if (!sb.sessionId || sb.userId === undefined) {
      await this.remove(sb, 'restart of a pool container');
      this.refillPool();
      return this.info(sb);
    }
    const { sessionId, userId } = sb;
    if (this.busy.has(sessionId)) throw new AppError('ERR_SESSION_BUSY', 'a turn is running in this session');
    this.busy.add(sessionId);
    try {
      await this.remove(sb, 'restart');
      return this.info(await this.acquire(sessionId, userId));
    } finally {
      this.busy.delete(sessionId);
    }
  }

  /** Restart every stale, idle session. */
  async restartStale(): Promise<{ restarted: string[]; skipped: string[] }> {
    const restarted: string[] = [];
    const skipped: string[] = [];
    for (const sb of [...this.sessions.values()]) {
      if (!this.isStale(sb)) continue;
      if (this.busy.has(sb.sessionId!)) {
        skipped.push(sb.sessionId!);
        continue;
      }
      await this.restart(sb.sessionId!);
      restarted.push(sb.sessionId!);
    }
    return { restarted, skipped };
  }

  /** Hand a session's egress gateway fresh real tokens (token rotation); nothing goes into the sandbox. */
  async rotateTokens(sessionId: string, tokens: Record<string, string>): Promise<void> {
    const sb = this.sessions.get(sessionId);
    if (!sb || !sb.egress) throw new AppError('ERR_SESSION_NOT_FOUND', 'no live sandbox for this session');
    sb.egress.setTokens(tokens);
  }

  /** Remove every sandbox of a user (deactivated users, a disconnected account). */
  async killForUser(userId: number, why = 'user deactivated'): Promise<number> {
    const mine = [...this.sessions.values()].filter((s) => s.userId === userId);
    await Promise.all(mine.map((s) => this.remove(s, why)));
    return mine.length;
  }

  /**
   * These users' agent policy changed (an admin edit, or directory sync's linked-teams step).
   * Their live sandboxes run under the policy they started with; each is marked, and before its
   * next turn the session is prepared again: when the agent's settings (model, tools) differ,
   * the sandbox is replaced under the new policy (the user is told); when the model is now
   * forbidden, the turn is refused with the policy's error. A turn in flight finishes first.
   */
  policyChanged(userIds: number[]): void {
    const ids = new Set(userIds);
    let marked = 0;
    for (const sb of this.sessions.values()) {
      if (sb.userId === undefined || !ids.has(sb.userId)) continue;
      sb.policyChanged = true;
      marked++;
    }
    if (marked) this.log.info({ users: ids.size, sessions: marked }, 'agent policy changed; live sessions re-checked before their next turn');
  }
}
