/**
 * Session start, its one owner: prepare (reads accounts and policy, may refresh the user's
 * token, touches no container: a refusal such as a forbidden model costs none), then inside the start gate claim a pool member or cold-start one, perform the plan
 * (profile.json, claim.json, the egress socket, `start`), and only when the supervisor took
 * `start` put the session in the table (which reports it live). Also reopens an adopted
 * session's egress gateway after a daemon restart.
 */
import { AppError, type Clock, type Logger, type Metrics } from '../../core/index.js';
import {
  SANDBOX_PROXY_PORT,
  type EgressGateway,
  type EgressHandle,
  type EgressSession,
  type MailPolicy,
  type PreparedSession,
  type SessionPreparer,
} from '../../core/sandbox-protocol.js';
import type { ContainerFactory } from './containers.js';
import type { WarmPool } from './pool.js';
import type { SandboxAudit } from './sandbox-audit.js';
import type { Sandbox } from './sandbox.js';
import { planSession, type SessionPlan } from './session-plan.js';
import type { SessionTable } from './sessions.js';
import { writeProfile, type Claim, type SlotFolders } from './slots.js';
import type { StartGate } from './start-gate.js';

/** Pool members a session start tries before it cold-starts a sandbox of its own. */
const CLAIM_TRIES = 2;

export const unavailable = () =>
  new AppError('ERR_SESSION_UNAVAILABLE', 'the daemon is shutting down', { retryable: true });

/** The session manager's parts a start uses, and what it does on the manager's behalf. */
export interface SessionStarterDeps {
  log: Logger;
  clock: Clock;
  metrics?: Metrics;
  preparer: SessionPreparer;
  egress?: EgressGateway;
  slots: SlotFolders;
  containers: ContainerFactory;
  pool: WarmPool;
  /** Sandbox starts in progress are limited (AIRLOCK_MAX_STARTING); the rest queue. */
  startGate: StartGate;
  table: SessionTable;
  audit: SandboxAudit;
  isClosed(): boolean;
  /** Follow a new sandbox's control connection (proxy decisions, its loss). */
  watch(sb: Sandbox): void;
  remove(sb: Sandbox, why: string): Promise<void>;
  fillPool(): Promise<void>;
  /** Live-session and pool gauges, after a change. */
  gauges(): void;
}

export class SessionStarter {
  constructor(private readonly d: SessionStarterDeps) {}

  /** Start a session's sandbox (see the file's comment); `prepared` when the caller prepared already. */
  async acquire(sessionId: string, userId: number, prepared?: PreparedSession): Promise<Sandbox> {
    const { d } = this;
    const t0 = process.hrtime.bigint();
    prepared ??= await d.preparer.prepare({ userId, sessionId, proxyPort: SANDBOX_PROXY_PORT });
    const plan = planSession({ sessionId, userId, prepared, now: d.clock.now() });
    const ws = d.slots.ensureWorkspace(userId);
    const release = await d.startGate.enter();
    let sb: Sandbox | undefined;
    const pool = { claimed: false };
    try {
      if (d.isClosed()) throw unavailable();
      sb = await this.claimMember(sessionId, plan, ws, pool);
      if (sb) {
        // Labels cannot change after create, but names can: a claimed pool container is named
        // after its session like a cold-started one, so `docker ps` shows whose it is. Cosmetic,
        // so not waited for.
        void d.containers.nameAfterSession(sb, sessionId);
      } else {
        const cold = await d.containers.create({ sessionId, userId, workspace: ws });
        d.watch(cold);
        try {
          await this.startIn(cold, sessionId, plan);
        } catch (err) {
          await d.remove(cold, 'start failed');
          throw err;
        }
        sb = cold;
      }
    } finally {
      release();
      // Refilled once the claim is done, so the new member's start does not slow the claim down.
      if (pool.claimed) void d.fillPool();
    }
    Object.assign(sb, {
      sessionId,
      userId,
      claimedAt: plan.claim.claimed_at,
      lastUsedAt: d.clock.now(),
      state: 'ready',
      agentEnvDigest: plan.agentEnvDigest,
      modelRevision: plan.modelRevision,
    });
    d.log.info(
      { sessionId, userId, containerId: sb.containerId.slice(0, 12), fromPool: sb.fromPool },
      'session sandbox started',
    );
    d.table.add(sb, { sessionId, userId, tokenEnvs: plan.tokenEnvs, egress: sb.egress, adopted: false });
    const kind = sb.fromPool ? 'pool' : 'cold';
    d.metrics?.sessionsStarted.inc({ kind });
    d.metrics?.sessionStartSeconds.observe({ kind }, Number(process.hrtime.bigint() - t0) / 1e9);
    d.gauges();
    return sb;
  }

  /**
   * A ready pool member: its agent and MCP servers run already; the claim binds the workspace and
   * hands over the user's parts. One that fails half-way is removed (never returned to the pool)
   * and the next member, or a cold start, takes over. `pool.claimed`: a member was taken (the
   * pool needs a refill), also when this throws.
   */
  private async claimMember(
    sessionId: string,
    plan: SessionPlan,
    ws: string,
    pool: { claimed: boolean },
  ): Promise<Sandbox | undefined> {
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const member = this.d.pool.claim();
      if (!member) break;
      pool.claimed = true;
      try {
        member.boundWorkspace = this.d.slots.bindWorkspace(member.dir, ws);
        await this.startIn(member, sessionId, plan);
        return member;
      } catch (err) {
        const code = (err as AppError).code;
        this.d.log.warn(
          { sessionId, containerId: member.containerId.slice(0, 12), code, err: (err as Error).message },
          'pool claim failed; the member is removed and the session starts elsewhere',
        );
        await this.d.remove(member, 'claim failed');
        if (code === 'ERR_AGENT_CONFIG') throw err; // the session's own settings: another sandbox would refuse them too
      }
    }
    return undefined;
  }

  /** The user's parts into a running sandbox: profile.json, claim.json, its egress socket, `start`. */
  private async startIn(sb: Sandbox, sessionId: string, plan: SessionPlan): Promise<void> {
    // World-readable by design: routes and token *references* only, never values.
    writeProfile(sb.runDir, plan.profile);
    this.d.slots.writeClaim(sb.dir, plan.claim);
    if (this.d.egress)
      sb.egress = await this.d.egress.open(sessionId, `${sb.runDir}/egress.sock`, {
        userId: plan.claim.user_id,
        ...plan.egress,
        ...this.gatewayHooks(sb),
      });
    await sb.client!.request({ type: 'start', spec: plan.start });
  }

  /** What the gateway asks the session about: a held mail send, the running turn. */
  private gatewayHooks(sb: Sandbox): Pick<EgressSession, 'hold' | 'currentTurn' | 'turn'> {
    return {
      hold: (h) => this.d.audit.mailHold(sb, h),
      currentTurn: () => sb.turn?.turnId ?? null,
      turn: () => sb.turn,
    };
  }

  /**
   * An adopted session's gateway: its route table from claim.json (host only), its real tokens
   * and send policy obtained again by the preparer (they lived in the old daemon's memory only).
   * Undefined when this daemon has no egress gateway.
   */
  async openAdopted(sb: Sandbox, claim: Claim): Promise<EgressHandle | undefined> {
    if (!this.d.egress) return undefined;
    let creds: { tokens: Record<string, string>; mailPolicy?: MailPolicy } = { tokens: {} };
    try {
      creds =
        (await this.d.preparer.credentials?.({
          userId: claim.user_id,
          sessionId: claim.session_id,
          tokenEnvs: claim.token_envs,
          ...(claim.model_revision ? { modelRevision: claim.model_revision } : {}),
        })) ?? creds;
    } catch (err) {
      this.d.log.warn(
        { sessionId: claim.session_id, code: (err as AppError).code },
        'adopted session: its tokens could not be obtained; its requests fail until rotation',
      );
    }
    return this.d.egress.open(claim.session_id, `${sb.runDir}/egress.sock`, {
      userId: claim.user_id,
      routes: claim.routes ?? [],
      ...creds,
      ...this.gatewayHooks(sb),
    });
  }
}
