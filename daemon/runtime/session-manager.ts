/**
 * Session manager: one hardened, warm container per chat session, and the turn path through it.
 *
 * - First prompt of a session: the SessionPreparer says what the session gets (pure), a pool
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
 * The parts: sandbox-driver.ts (the engine, docker-driver.ts), containers.ts (make/unmake one),
 * slots.ts (host folders, workspace mounts), pool.ts, adoption.ts, session-plan.ts,
 * operator.ts (the control socket's requests), sessions.ts (reaping, lookup, restart).
 */
import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { AppError, isAppError, type Config, type Logger, type Metrics } from '../../core/index.js';
import { SANDBOX_PROXY_PORT, type EgressGateway, type EgressHandle, type EgressSession, type MailPolicy, type SandboxAuditor, type PreparedSession, type SessionPreparer, type TurnRequest, type TurnResult, type TurnRunner } from '../../core/sandbox-protocol.js';
import { adoptOwned } from './adoption.js';
import { ContainerFactory } from './containers.js';
import { DockerDriver } from './docker-driver.js';
import { handleOperatorRequest } from './operator.js';
import { WarmPool } from './pool.js';
import { connected, type Sandbox } from './sandbox.js';
import type { SandboxDriver } from './sandbox-driver.js';
import { agentEnvDigest, defaultPreparer, planSession, type SessionPlan } from './session-plan.js';

export { defaultPreparer } from './session-plan.js';
import { SessionTable, type SessionHooks } from './sessions.js';
import { ownerIdFor, SlotFolders, writeProfile, type Claim } from './slots.js';
import { StartGate } from './start-gate.js';
import { turnIn } from './turn.js';
import { runWithContext } from './context-sync.js';

export { LABEL_OWNER, LABEL_POOL, LABEL_SESSION, LABEL_SLOT, LABEL_USER } from './sandbox-driver.js';
export { sandboxHostConfig } from './docker-driver.js';
export { sessionContainerName } from './containers.js';
export type { SandboxInfo, SandboxState } from './sandbox.js';
export type { SessionHooks, SessionLiveInfo } from './sessions.js';


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
  /** Clock for session age (staleness); tests inject one instead of sleeping. */
  now?: () => number;
  /** Prometheus metrics (sessions live/started/reaped, start seconds, pool ready). */
  metrics?: Metrics;
  /** Session lifecycle hooks (token rotation). */
  hooks?: SessionHooks;
  /**
   * The audit trail of proxied requests and the decision on held mail sends (daemon/mail-gate.ts).
   * Absent: nothing is recorded, a send the policy lets through goes, one that needs approval is refused.
   */
  auditor?: SandboxAuditor;
}

/** Pool members a session start tries before it cold-starts a sandbox of its own. */
const CLAIM_TRIES = 2;

const unavailable = () => new AppError('ERR_SESSION_UNAVAILABLE', 'the daemon is shutting down', { retryable: true });

export class SessionManager extends SessionTable implements TurnRunner {
  readonly owner: string;
  private readonly preparer: SessionPreparer;
  private readonly driver: SandboxDriver;
  private readonly slots: SlotFolders;
  private readonly containers: ContainerFactory;
  private readonly pool: WarmPool;
  /** Sandbox starts in progress are limited (AIRLOCK_MAX_STARTING); the rest queue. */
  private readonly startGate: StartGate;
  private readonly egress?: EgressGateway;
  private readonly reapEvery?: number;
  private acquiring = 0;
  private reaper?: NodeJS.Timeout;

  constructor(o: SessionManagerOptions) {
    const log = o.log.child({ area: 'runtime' });
    super(o.config, log, o.now ?? Date.now, o.metrics, o.hooks);
    if (!o.driver && !o.docker) throw new TypeError('SessionManager needs docker or driver');
    this.driver = o.driver ?? new DockerDriver(o.docker!, o.config.sandbox);
    this.preparer = o.preparer ?? defaultPreparer(o.config);
    this.owner = o.owner ?? ownerIdFor(o.config.dataDir);
    this.slots = new SlotFolders(o.config.dataDir, log, o.config.sandbox.workspaceQuotaMb);
    this.containers = new ContainerFactory({ driver: this.driver, slots: this.slots, owner: this.owner, image: o.image ?? o.config.docker.image, childUid: o.childUid, log });
    this.startGate = new StartGate(o.config.sandbox.maxStarting, (g) => o.metrics?.sessionStartsWaiting.set(g.waiting));
    this.pool = new WarmPool(
      {
        size: o.config.sandbox.poolSize,
        gate: this.startGate,
        create: async () => {
          const sb = await this.containers.create();
          this.watch(sb);
          // A member is ready when its agent child and both MCP servers are up (`warm`); one that
          // does not get there is not kept running.
          await sb.client!.request({ type: 'warm' }).catch(async (err) => {
            await this.remove(sb, 'pool member did not answer');
            throw err;
          });
          return sb;
        },
        remove: (sb, why) => this.remove(sb, why),
        onChange: () => this.gauges(),
        isClosed: () => this.closed,
        log,
      },
      o.config.sandbox.poolSize > 0,
    );
    this.reapEvery = o.reapIntervalMs;
    this.egress = o.egress;
    this.auditor = o.auditor;
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
      this.log.info('pool off under runsc: a workspace bound at claim would not appear inside a running gVisor sandbox; sessions cold-start');
      this.pool.disable();
    }
    const adopted = await adoptOwned({ driver: this.driver, slots: this.slots, owner: this.owner, poolEnabled: this.pool.enabled, log: this.log, mayAdopt: this.hooks?.mayAdopt?.bind(this.hooks) });
    for (let i = 0; i < adopted.userDeactivated; i++) this.metrics?.sessionsReaped.inc({ reason: 'user_deactivated' });
    for (const sb of adopted.pool) {
      this.pool.add(sb);
      this.watch(sb);
    }
    for (const { sb, claim } of adopted.sessions) {
      if (this.egress) sb.egress = await this.openAdopted(sb, claim);
      this.sessions.set(claim.session_id, sb);
      this.watch(sb);
      // Token rotation is in memory only: the restarted daemon registers the session again.
      this.live({ sessionId: claim.session_id, userId: claim.user_id, tokenEnvs: claim.token_envs, adopted: true });
    }
    this.gauges();
    const idleMs = this.config.sandbox.idleS * 1000;
    this.reaper = setInterval(() => void this.reap(), this.reapEvery ?? Math.min(30_000, Math.max(500, Math.floor(idleMs / 4))));
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
    const sessions = [...this.sessions.values()];
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
    this.sessions.clear();
    // Our own mount of the sandboxes folder and the workspace mounts go when nothing of ours runs
    // on them any more (unmounting under live pool-claimed sessions would propagate into their
    // /workspace); otherwise they stay for the next daemon, which adopts the sessions.
    if (opts.removeContainers || sessions.length === 0) this.slots.releaseMounts();
  }

  // ------------------------------------------------------------------ turns

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    if (this.closed) throw unavailable();
    if (this.busy.has(req.sessionId)) throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session');
    let sb = this.sessions.get(req.sessionId);
    if (sb && sb.userId !== req.userId) throw new AppError('ERR_SESSION_NOT_FOUND', 'no such session');
    const needsNew = !sb || sb.state === 'dead' || !connected(sb);
    // A new sandbox: the user's cap first (its oldest idle sandbox may make room), then the host's.
    const isNew = needsNew && !sb;
    const victim = isNew ? this.makeRoomFor(req.userId) : undefined;
    if (isNew && this.liveSessionCount() + this.acquiring - (victim ? 1 : 0) >= this.config.sandbox.maxSessions) {
      if (victim) this.busy.delete(victim.sessionId!);
      throw new AppError('ERR_SESSION_CAPACITY', 'this host runs as many sessions as it may; try again later', { retryable: true });
    }
    this.busy.add(req.sessionId);
    let counted = isNew && (this.starting(req.userId, 1), true);
    try {
      if (victim) await this.endToMakeRoom(victim, req.sessionId);
      let prepared: PreparedSession | undefined;
      // The chat's model was switched (or its entry changed) since this sandbox was prepared.
      const modelChanged = !needsNew && req.modelRevision !== undefined && sb!.modelRevision !== req.modelRevision;
      if (!needsNew && (sb!.policyChanged || modelChanged)) {
        // The user's agent policy or the chat's model changed since this sandbox started: prepare
        // again, and replace the sandbox only when what the agent runs under (model, its upstream
        // and key, tools) is different.
        const why = modelChanged ? 'model changed' : 'policy changed';
        try {
          prepared = await this.preparer.prepare({ userId: req.userId, sessionId: req.sessionId, proxyPort: SANDBOX_PROXY_PORT });
        } catch (err) {
          // Refused under the new policy (a forbidden model): the sandbox goes. Any other failure
          // fails this turn closed but keeps the sandbox marked, to be checked again next turn.
          if (isAppError(err) && err.status >= 400 && err.status < 500) await this.remove(sb!, why);
          return this.startFailed(req, err);
        }
        sb!.policyChanged = false;
        const sameModel = (prepared.modelRevision ?? req.modelRevision) === (sb!.modelRevision ?? req.modelRevision);
        if (agentEnvDigest(prepared.agentEnv) === sb!.agentEnvDigest && sameModel) {
          // A preparer that knows no chat models: remember the revision, so this is checked once.
          sb!.modelRevision = prepared.modelRevision ?? req.modelRevision;
          prepared = undefined;
        } else {
          // No notice: the new sandbox gets the stored conversation (context-sync.ts).
          await this.remove(sb!, why);
          sb = undefined;
        }
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
          sb = await this.acquire(req.sessionId, req.userId, prepared);
        } catch (err) {
          return this.startFailed(req, err);
        } finally {
          this.acquiring--;
          if (counted) this.starting(req.userId, -1); // live now (or failed): the table counts it
          counted = false;
        }
      }
      const live = sb;
      return await runWithContext(live, req, (ctx) => turnIn(live, req, this.config, this.log, ctx));
    } finally {
      this.busy.delete(req.sessionId);
      if (counted) this.starting(req.userId, -1);
    }
  }

  // ------------------------------------------------------------------ session start (its one owner)

  /**
   * Start a session's sandbox: prepare (pure; a refusal such as a forbidden model costs no
   * container), then inside the start gate claim a pool member or cold-start one, perform the
   * plan, and only when the supervisor took `start` report the session live.
   */
  protected async acquire(sessionId: string, userId: number, prepared?: PreparedSession): Promise<Sandbox> {
    const t0 = process.hrtime.bigint();
    prepared ??= await this.preparer.prepare({ userId, sessionId, proxyPort: SANDBOX_PROXY_PORT });
    const plan = planSession({ sessionId, userId, prepared, now: this.now() });
    const ws = this.slots.ensureWorkspace(userId);
    const release = await this.startGate.enter();
    let sb: Sandbox | undefined;
    let claimed = false;
    try {
      if (this.closed) throw unavailable();
      // A ready pool member: its agent and MCP servers run already; the claim binds the
      // workspace and hands over the user's parts. One that fails half-way is removed (never
      // returned to the pool) and the next member, or a cold start, takes over.
      for (let tries = 0; !sb && tries < CLAIM_TRIES; tries++) {
        const member = this.pool.claim();
        if (!member) break;
        claimed = true;
        try {
          member.boundWorkspace = this.slots.bindWorkspace(member.dir, ws);
          await this.startIn(member, sessionId, plan);
          sb = member;
        } catch (err) {
          const code = (err as AppError).code;
          this.log.warn({ sessionId, containerId: member.containerId.slice(0, 12), code, err: (err as Error).message }, 'pool claim failed; the member is removed and the session starts elsewhere');
          await this.remove(member, 'claim failed');
          if (code === 'ERR_AGENT_CONFIG') throw err; // the session's own settings: another sandbox would refuse them too
        }
      }
      if (sb) {
        // Labels cannot change after create, but names can: a claimed pool container is named
        // after its session like a cold-started one, so `docker ps` shows whose it is. Cosmetic,
        // so not waited for.
        void this.containers.nameAfterSession(sb, sessionId);
      } else {
        const cold = await this.containers.create({ sessionId, userId, workspace: ws });
        this.watch(cold);
        try {
          await this.startIn(cold, sessionId, plan);
        } catch (err) {
          await this.remove(cold, 'start failed');
          throw err;
        }
        sb = cold;
      }
    } finally {
      release();
      // Refilled once the claim is done, so the new member's start does not slow the claim down.
      if (claimed) void this.fillPool();
    }
    Object.assign(sb, { sessionId, userId, claimedAt: plan.claim.claimed_at, lastUsedAt: Date.now(), state: 'ready', agentEnvDigest: plan.agentEnvDigest, modelRevision: plan.modelRevision });
    this.sessions.set(sessionId, sb);
    this.log.info({ sessionId, userId, containerId: sb.containerId.slice(0, 12), fromPool: sb.fromPool }, 'session sandbox started');
    this.live({ sessionId, userId, tokenEnvs: plan.tokenEnvs, adopted: false });
    const kind = sb.fromPool ? 'pool' : 'cold';
    this.metrics?.sessionsStarted.inc({ kind });
    this.metrics?.sessionStartSeconds.observe({ kind }, Number(process.hrtime.bigint() - t0) / 1e9);
    this.gauges();
    return sb;
  }

  /** The user's parts into a running sandbox: profile.json, claim.json, its egress socket, `start`. */
  private async startIn(sb: Sandbox, sessionId: string, plan: SessionPlan): Promise<void> {
    // World-readable by design: routes and token *references* only, never values.
    writeProfile(sb.runDir, plan.profile);
    this.slots.writeClaim(sb.dir, plan.claim);
    if (this.egress) sb.egress = await this.egress.open(sessionId, `${sb.runDir}/egress.sock`, { userId: plan.claim.user_id, ...plan.egress, ...this.gatewayHooks(sb) });
    await sb.client!.request({ type: 'start', spec: plan.start });
  }

  /** What the gateway asks the session about: a held mail send, the running turn. */
  private gatewayHooks(sb: Sandbox): Pick<EgressSession, 'hold' | 'currentTurn'> {
    return { hold: (h) => this.mailHold(sb, h), currentTurn: () => sb.turn?.turnId ?? null };
  }

  /**
   * An adopted session's gateway: its route table from claim.json (host only), its real tokens
   * and send policy obtained again by the preparer (they lived in the old daemon's memory only).
   */
  private async openAdopted(sb: Sandbox, claim: Claim): Promise<EgressHandle> {
    let creds: { tokens: Record<string, string>; mailPolicy?: MailPolicy } = { tokens: {} };
    try {
      creds = (await this.preparer.credentials?.({ userId: claim.user_id, sessionId: claim.session_id, tokenEnvs: claim.token_envs, ...(claim.model_revision ? { modelRevision: claim.model_revision } : {}) })) ?? creds;
    } catch (err) {
      this.log.warn({ sessionId: claim.session_id, code: (err as AppError).code }, 'adopted session: its tokens could not be obtained; its requests fail until rotation');
    }
    return this.egress!.open(claim.session_id, `${sb.runDir}/egress.sock`, { userId: claim.user_id, routes: claim.routes ?? [], ...creds, ...this.gatewayHooks(sb) });
  }

  private watch(sb: Sandbox): void {
    const client = sb.client!;
    client.onProxyDecision((d) => {
      this.proxyDecision(sb, d);
      if (sb.sessionId && sb.userId !== undefined) this.auditor?.proxied({ sessionId: sb.sessionId, userId: sb.userId }, d);
    });
    client.onClosed(() => {
      if (sb.client !== client || sb.state === 'stopping') return;
      sb.state = 'dead';
      this.log.warn({ containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId }, 'sandbox control connection lost');
      if (!sb.sessionId) {
        this.pool.forget(sb);
        void this.remove(sb, 'pool member lost').then(() => this.fillPool());
      }
    });
  }

  protected async remove(sb: Sandbox, why: string): Promise<void> {
    if (sb.state === 'stopping') return;
    sb.state = 'stopping';
    this.forget(sb, why);
    this.pool.forget(sb);
    await this.containers.destroy(sb);
    this.log.info({ containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId, why }, 'sandbox removed');
    if (sb.sessionId) this.metrics?.sessionsReaped.inc({ reason: why.replace(/[^a-z]+/gi, '_') });
    this.gauges();
  }

  // ------------------------------------------------------------------ pool, operator API

  /** Top the pool up to AIRLOCK_POOL_SIZE hello containers (one fill at a time). */
  /** The user's workspace on this host, made and mounted with its quota (the web app's uploads write there). */
  ensureWorkspace(userId: number): string {
    return this.slots.ensureWorkspace(userId);
  }

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

  protected poolMembers(): Sandbox[] {
    return this.pool.list();
  }

  protected refillPool(): void {
    void this.fillPool();
  }

  protected details(sb: Sandbox) {
    return this.driver.inspect(sb.containerId);
  }

  /** The operator control API handler (`<data dir>/control.sock`); the request is checked first. */
  handleControl(req: unknown): Promise<unknown> {
    return handleOperatorRequest(this, req, this.driver);
  }

  /** A fresh turn id (for callers that have none). */
  static turnId(): string {
    return randomUUID();
  }
}
