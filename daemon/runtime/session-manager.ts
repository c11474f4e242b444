/**
 * Session manager: one hardened, warm container per chat session, and the turn path through it.
 *
 * - First prompt of a session: the SessionPreparer says what the session gets (no container yet), a pool
 *   container is claimed (or one cold-started), the plan is written (profile.json, claim.json),
 *   the egress socket opened with the session's route table and real tokens (they stay on the
 *   host: the gateway injects them), and the supervisor sent `start` (placeholders). Then the
 *   lifecycle hook `onSessionLive` registers the session (token rotation): the one place it does.
 * - Later prompts reuse it (warm). One turn at a time per session (ERR_SESSION_BUSY 409). Live
 *   sessions are capped per host (ERR_SESSION_CAPACITY 503) and per user (the oldest idle one
 *   makes room, else ERR_SESSION_USER_LIMIT 429).
 * - A container that died is replaced on the next prompt, which brings the stored conversation;
 *   a turn in flight when it dies ends with ERR_SANDBOX_LOST. Every turn resolves.
 *
 *
 * It is composed, not derived: it holds the session table (sessions.ts: which sandbox serves
 * which session, busy guard, per-user counts, lifecycle hooks), the session start
 * (session-start.ts), the operator's actions (session-ops.ts: reaping, staleness, lookup,
 * kill/restart), which reach the sandboxes only through the SandboxLifecycle it hands them, and
 * the audit of proxy decisions and held mail (sandbox-audit.ts). One clock (core/clock.ts)
 * decides every age. The other parts: sandbox-driver.ts (the engine, docker-driver.ts),
 * containers.ts (make/unmake one), slots.ts (host folders, workspace mounts), pool.ts,
 * adoption.ts, session-plan.ts, operator.ts (the control socket's requests).
 */
import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import {
  AppError,
  isAppError,
  systemClock,
  type Clock,
  type Config,
  type Logger,
  type Metrics,
} from '../../core/index.js';
import {
  SANDBOX_PROXY_PORT,
  type EgressGateway,
  type SandboxAuditor,
  type PreparedSession,
  type SessionPreparer,
  type TurnRequest,
  type TurnResult,
  type TurnRunner,
} from '../../core/sandbox-protocol.js';
import { adoptOwned } from './adoption.js';
import { ContainerFactory } from './containers.js';
import { runWithContext } from './context-sync.js';
import { DockerDriver } from './docker-driver.js';
import { handleOperatorRequest, type InspectResult, type OperatorTarget } from './operator.js';
import { WarmPool } from './pool.js';
import { SandboxAudit } from './sandbox-audit.js';
import { connected, type Sandbox, type SandboxInfo } from './sandbox.js';
import type { SandboxDriver } from './sandbox-driver.js';
import { SessionOperations } from './session-ops.js';
import { agentEnvDigest, defaultPreparer } from './session-plan.js';
import { SessionStarter, unavailable } from './session-start.js';
import { SessionTable, type SessionHooks } from './sessions.js';
import { ownerIdFor, SlotFolders } from './slots.js';
import { StartGate } from './start-gate.js';
import { startFailed, turnIn } from './turn.js';
import { sandboxUsage, type SandboxUsage } from './cgroup-stats.js';

export { defaultPreparer } from './session-plan.js';
export { LABEL_OWNER, LABEL_POOL, LABEL_SESSION, LABEL_SLOT, LABEL_USER } from './sandbox-driver.js';
export { sandboxHostConfig } from './docker-driver.js';
export { sessionContainerName } from './containers.js';
export type { SandboxInfo, SandboxState } from './sandbox.js';
export type { SessionHeld, SessionHooks, SessionLiveInfo } from './sessions.js';
export type { SandboxLifecycle } from './session-ops.js';

export interface SessionManagerOptions {
  config: Readonly<Config>;
  /** The engine (a DockerDriver is built on it); or `driver` for another engine. */
  docker?: Docker;
  driver?: SandboxDriver;
  log: Logger;
  preparer?: SessionPreparer;
  egress?: EgressGateway;
  /** airlock.owner label value; defaults to an id stored in <data dir>/runtime-owner. */
  owner?: string;
  /** Image tag; defaults to config AIRLOCK_IMAGE. */
  image?: string;
  /** TEST ONLY: run the agent child under this uid (the negative token-isolation check). */
  childUid?: number;
  /** Reaper period; defaults to a quarter of the idle time, between 0.5 s and 30 s. */
  reapIntervalMs?: number;
  /**
   * The clock every age is read on (idle reap, staleness, a sandbox's last use); defaults to the
   * real one. Tests inject one (test/helpers/clock.ts) and advance it instead of sleeping.
   */
  clock?: Clock;
  /** Prometheus metrics (sessions live/started/reaped, start seconds, pool ready). */
  metrics?: Metrics;
  /** Session lifecycle hooks (token rotation). */
  hooks?: SessionHooks;
  /**
   * The audit trail of proxied requests and the decision on held mail sends (domain/mail/gate.ts).
   * Absent: nothing is recorded, a send the policy lets through goes, one that needs approval is refused.
   */
  auditor?: SandboxAuditor;
}

export class SessionManager implements TurnRunner, OperatorTarget {
  readonly owner: string;
  private readonly config: Readonly<Config>;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics?: Metrics;
  private readonly hooks?: SessionHooks;
  private readonly preparer: SessionPreparer;
  private readonly driver: SandboxDriver;
  private readonly slots: SlotFolders;
  private readonly containers: ContainerFactory;
  private readonly pool: WarmPool;
  private readonly table: SessionTable;
  private readonly ops: SessionOperations;
  private readonly starter: SessionStarter;
  private readonly audit: SandboxAudit;
  private readonly reapEvery?: number;
  private closed = false;
  private acquiring = 0;
  private reaper?: NodeJS.Timeout;

  constructor(o: SessionManagerOptions) {
    if (!o.driver && !o.docker) throw new TypeError('SessionManager needs docker or driver');
    const log = o.log.child({ area: 'runtime' });
    const clock = o.clock ?? systemClock;
    [this.config, this.log, this.clock, this.metrics, this.hooks, this.reapEvery] = [
      o.config,
      log,
      clock,
      o.metrics,
      o.hooks,
      o.reapIntervalMs,
    ];
    this.driver = o.driver ?? new DockerDriver(o.docker!, o.config.sandbox);
    this.preparer = o.preparer ?? defaultPreparer(o.config);
    this.owner = o.owner ?? ownerIdFor(o.config.dataDir);
    this.slots = new SlotFolders(o.config.dataDir, log, o.config.sandbox.workspaceQuotaMb);
    this.containers = new ContainerFactory({
      driver: this.driver,
      slots: this.slots,
      owner: this.owner,
      image: o.image ?? o.config.docker.image,
      childUid: o.childUid,
      log,
      clock,
    });
    const startGate = new StartGate(o.config.sandbox.maxStarting, (g) =>
      o.metrics?.sessionStartsWaiting.set(g.waiting),
    );
    this.pool = new WarmPool(
      {
        size: o.config.sandbox.poolSize,
        gate: startGate,
        create: () => this.createPoolMember(),
        remove: (sb, why) => this.remove(sb, why),
        onChange: () => this.gauges(),
        isClosed: () => this.closed,
        log,
      },
      o.config.sandbox.poolSize > 0,
    );
    this.table = new SessionTable({ config: o.config, log, hooks: o.hooks, auditor: o.auditor });
    this.audit = new SandboxAudit({ log, metrics: o.metrics, auditor: o.auditor });
    this.starter = new SessionStarter({
      ...{ log, clock, metrics: o.metrics, preparer: this.preparer, egress: o.egress, startGate, audit: this.audit },
      ...{ slots: this.slots, containers: this.containers, pool: this.pool, table: this.table },
      isClosed: () => this.closed,
      watch: (sb) => this.watch(sb),
      remove: (sb, why) => this.remove(sb, why),
      fillPool: () => this.fillPool(),
      gauges: () => this.gauges(),
    });
    this.ops = new SessionOperations(
      this.table,
      {
        acquire: (sessionId, userId) => this.starter.acquire(sessionId, userId),
        remove: (sb, why) => this.remove(sb, why),
        poolMembers: () => this.pool.list(),
        refillPool: () => void this.fillPool(),
        details: (sb) => this.driver.inspect(sb.containerId),
      },
      { config: o.config, log, clock },
    );
  }

  // ------------------------------------------------------------------ lifecycle

  /** Adopt or remove existing containers, then fill the pool and start the reaper. */
  async start(): Promise<void> {
    this.slots.init();
    // The sandboxes folder becomes a shared tmpfs (pool propagation; no host path in the sandbox).
    if (!this.slots.prepareRoot() && this.pool.enabled) this.pool.disable();
    if (this.pool.enabled && this.config.sandbox.runtime === 'runsc') {
      // gVisor's gofer serves the mounts a sandbox was created with; a mount made on the host
      // later (the workspace bound into a pool member at claim) does not show inside. So under
      // runsc every session cold-starts with its workspace mounted from creation.
      this.log.info(
        'pool off under runsc: a workspace bound at claim would not appear inside a running gVisor sandbox; sessions cold-start',
      );
      this.pool.disable();
    }
    const adopted = await adoptOwned({
      driver: this.driver,
      slots: this.slots,
      owner: this.owner,
      poolEnabled: this.pool.enabled,
      log: this.log,
      clock: this.clock,
      mayAdopt: this.hooks?.mayAdopt?.bind(this.hooks),
    });
    for (let i = 0; i < adopted.userDeactivated; i++) this.metrics?.sessionsReaped.inc({ reason: 'user_deactivated' });
    for (const sb of adopted.pool) {
      this.pool.add(sb);
      this.watch(sb);
    }
    for (const { sb, claim } of adopted.sessions) {
      const egress = await this.starter.openAdopted(sb, claim);
      if (egress) sb.egress = egress;
      // Token rotation is in memory only: the restarted daemon registers the session again.
      this.table.add(sb, {
        sessionId: claim.session_id,
        userId: claim.user_id,
        tokenEnvs: claim.token_envs,
        egress: sb.egress,
        adopted: true,
      });
      this.watch(sb);
    }
    this.gauges();
    const idleMs = this.config.sandbox.idleS * 1000;
    this.reaper = setInterval(
      () => void this.reap(),
      this.reapEvery ?? Math.min(30_000, Math.max(500, Math.floor(idleMs / 4))),
    );
    this.reaper.unref();
    void this.fillPool();
  }

  /**
   * Stop the manager. By default session containers keep running (a restarted daemon adopts them:
   * no live session is lost); `removeContainers` removes them and the pool (tests, uninstall).
   */
  async close(opts: { removeContainers?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reaper) clearInterval(this.reaper);
    await this.pool.settle();
    const sessions = this.table.all();
    // Pool containers hold no session: remove them (a restarted daemon refills the pool).
    await Promise.all(this.pool.list().map((s) => this.remove(s, 'shutdown')));
    if (opts.removeContainers) {
      await Promise.all(sessions.map((s) => this.remove(s, 'shutdown')));
    } else {
      for (const s of sessions) {
        s.client?.close();
        await s.egress?.close().catch(() => undefined);
      }
    }
    this.table.clear();
    // Our own mount of the sandboxes folder and the workspace mounts go when nothing of ours runs
    // on them any more (unmounting under live pool-claimed sessions would propagate into their
    // /workspace); otherwise they stay for the next daemon, which adopts the sessions.
    if (opts.removeContainers || sessions.length === 0) this.slots.releaseMounts();
  }

  // ------------------------------------------------------------------ turns

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    if (this.closed) throw unavailable();
    const { table } = this;
    if (table.isBusy(req.sessionId))
      throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session');
    let sb = table.get(req.sessionId);
    if (sb && sb.userId !== req.userId) throw new AppError('ERR_SESSION_NOT_FOUND', 'no such session');
    const needsNew = !sb || sb.state === 'dead' || !connected(sb);
    // A new sandbox: the user's cap first (its oldest idle sandbox may make room), then the host's.
    const isNew = needsNew && !sb;
    const victim = isNew ? table.makeRoomFor(req.userId) : undefined;
    if (isNew && table.liveCount() + this.acquiring - (victim ? 1 : 0) >= this.config.sandbox.maxSessions) {
      if (victim) table.release(victim.sessionId!);
      throw new AppError('ERR_SESSION_CAPACITY', 'this host runs as many sessions as it may; try again later', {
        retryable: true,
      });
    }
    table.hold(req.sessionId);
    let counted = isNew && (table.starting(req.userId, 1), true);
    try {
      if (victim) await this.endToMakeRoom(victim, req.sessionId);
      let prepared: PreparedSession | undefined;
      if (!needsNew) {
        const checked = await this.recheck(sb!, req);
        if ('stop_reason' in checked) return checked;
        ({ sb, prepared } = checked);
      }
      if (needsNew || !sb) {
        // A sandbox lost behind our back (killed from outside, crashed, OOM) is replaced without a
        // notice: the new one gets the stored conversation, so the model simply continues.
        if (sb) {
          this.log.warn({ sessionId: req.sessionId, containerId: sb.containerId }, 'sandbox lost; replacing');
          await this.remove(sb, 'lost');
        }
        this.acquiring++;
        try {
          sb = await this.starter.acquire(req.sessionId, req.userId, prepared);
        } catch (err) {
          return startFailed(this.log, req, err);
        } finally {
          this.acquiring--;
          if (counted) table.starting(req.userId, -1); // live now (or failed): the table counts it
          counted = false;
        }
      }
      const live = sb;
      return await runWithContext(live, req, (ctx) => turnIn(live, req, this.config, this.log, this.clock, ctx));
    } finally {
      table.release(req.sessionId);
      if (counted) table.starting(req.userId, -1);
    }
  }

  /**
   * The user's agent policy or the chat's model changed since this sandbox started: prepare
   * again, and replace the sandbox only when what the agent runs under (model, its upstream and
   * key, tools) is different. Returns the sandbox to run in (undefined: start a new one with
   * `prepared`), or the turn's result when the new preparation refuses.
   */
  private async recheck(
    sb: Sandbox,
    req: TurnRequest,
  ): Promise<{ sb?: Sandbox; prepared?: PreparedSession } | TurnResult> {
    // The chat's model was switched (or its entry changed) since this sandbox was prepared.
    const modelChanged = req.modelRevision !== undefined && sb.modelRevision !== req.modelRevision;
    if (!sb.policyChanged && !modelChanged) return { sb };
    const why = modelChanged ? 'model changed' : 'policy changed';
    let prepared: PreparedSession;
    try {
      prepared = await this.preparer.prepare({
        userId: req.userId,
        sessionId: req.sessionId,
        proxyPort: SANDBOX_PROXY_PORT,
      });
    } catch (err) {
      // Refused under the new policy (a forbidden model): the sandbox goes. Any other failure
      // fails this turn closed but keeps the sandbox marked, to be checked again next turn.
      if (isAppError(err) && err.status >= 400 && err.status < 500) await this.remove(sb, why);
      return startFailed(this.log, req, err);
    }
    sb.policyChanged = false;
    const sameModel = (prepared.modelRevision ?? req.modelRevision) === (sb.modelRevision ?? req.modelRevision);
    if (agentEnvDigest(prepared.agentEnv) === sb.agentEnvDigest && sameModel) {
      // A preparer that knows no chat models: remember the revision, so this is checked once.
      sb.modelRevision = prepared.modelRevision ?? req.modelRevision;
      return { sb };
    }
    // No notice: the new sandbox gets the stored conversation (context-sync.ts).
    await this.remove(sb, why);
    return { prepared };
  }

  /** End the sandbox the table chose to make room for `forSession` (per-user cap); then release it. */
  private async endToMakeRoom(victim: Sandbox, forSession: string): Promise<void> {
    this.log.info(
      { userId: victim.userId, sessionId: victim.sessionId, for: forSession },
      "per-user sandbox cap: the user's oldest idle sandbox ends to make room",
    );
    try {
      await this.remove(victim, 'per-user cap');
    } finally {
      this.table.release(victim.sessionId!);
    }
  }

  // ------------------------------------------------------------------ sandboxes

  /** A pool member is ready when its agent child and both MCP servers are up (`warm`); one that does not get there is not kept running. */
  private async createPoolMember(): Promise<Sandbox> {
    const sb = await this.containers.create();
    this.watch(sb);
    await sb.client!.request({ type: 'warm' }).catch(async (err) => {
      await this.remove(sb, 'pool member did not answer');
      throw err;
    });
    return sb;
  }

  private watch(sb: Sandbox): void {
    const client = sb.client!;
    client.onProxyDecision((d) => this.audit.proxyDecision(sb, d));
    client.onClosed(() => {
      if (sb.client !== client || sb.state === 'stopping') return;
      sb.state = 'dead';
      this.log.warn(
        { containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId },
        'sandbox control connection lost',
      );
      if (!sb.sessionId) {
        this.pool.forget(sb);
        void this.remove(sb, 'pool member lost').then(() => this.fillPool());
      }
    });
  }

  private async remove(sb: Sandbox, why: string): Promise<void> {
    if (sb.state === 'stopping') return;
    sb.state = 'stopping';
    this.table.forget(sb, why);
    this.pool.forget(sb);
    await this.containers.destroy(sb);
    this.log.info({ containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId, why }, 'sandbox removed');
    if (sb.sessionId) this.metrics?.sessionsReaped.inc({ reason: why.replace(/[^a-z]+/gi, '_') });
    this.gauges();
  }

  /** Live-session and pool gauges, after every change. */
  private gauges(): void {
    this.metrics?.sessionsLive.set(this.table.liveCount());
    this.metrics?.poolReady.set(this.pool.list().length);
  }

  // ------------------------------------------------------------------ pool, operator API

  /** The user's workspace on this host, made and mounted with its quota (the web app's uploads write there). */
  ensureWorkspace(userId: number): string {
    return this.slots.ensureWorkspace(userId);
  }

  /** Top the pool up to AIRLOCK_POOL_SIZE hello containers (one fill at a time). */
  fillPool(): Promise<void> {
    return this.pool.fill();
  }

  /** Resolves when the pool is full (tests, bench). */
  poolReady(timeoutMs = 30_000): Promise<void> {
    return this.pool.ready(timeoutMs);
  }

  get poolActive(): boolean {
    return this.pool.enabled;
  }

  // The operator's actions and lookups (session-ops.ts).
  reap = (): Promise<string[]> => this.ops.reap();
  /** A sandbox's memory and CPU time from its cgroup (Live sessions). */
  usage = (containerId: string): SandboxUsage | undefined => sandboxUsage(containerId);
  isLive = (sessionId: string, userId: number): boolean => this.ops.isLive(sessionId, userId);
  list = (): SandboxInfo[] => this.ops.list();
  containerOf = (id: string): string => this.ops.containerOf(id);
  inspect = (id: string): Promise<InspectResult> => this.ops.inspect(id);
  kill = (id: string): Promise<SandboxInfo> => this.ops.kill(id);
  restart = (id: string): Promise<SandboxInfo> => this.ops.restart(id);
  restartStale = (): Promise<{ restarted: string[]; skipped: string[] }> => this.ops.restartStale();
  killForUser = (userId: number, why?: string): Promise<number> => this.ops.killForUser(userId, why);
  policyChanged = (userIds: number[]): void => this.ops.policyChanged(userIds);

  /** The operator control API handler (`<data dir>/control.sock`); the request is checked first. */
  handleControl(req: unknown): Promise<unknown> {
    return handleOperatorRequest(this.ops, req, this.driver);
  }

  /** A fresh turn id (for callers that have none). */
  static turnId(): string {
    return randomUUID();
  }
}
