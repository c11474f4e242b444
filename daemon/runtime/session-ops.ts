/**
 * What acts on the session table outside a turn: idle and dead reaping, staleness, lookup, and the
 * operator's kill/restart/rotate (the control socket, the CLI, the admin API). It holds the table
 * and reaches the sandboxes only through the SandboxLifecycle the session manager hands it.
 */
import { AppError, type Clock, type Config, type Logger } from '../../core/index.js';
import type { InspectResult, OperatorTarget } from './operator.js';
import type { SandboxDetails } from './sandbox-driver.js';
import { connected, sandboxInfo, type Sandbox, type SandboxInfo } from './sandbox.js';
import type { SessionTable } from './sessions.js';

/** What the operator's actions need of the runtime that owns the sandboxes (the session manager). */
export interface SandboxLifecycle {
  /** Start a session's sandbox (the next prompt's path: prepare, claim or cold-start). */
  acquire(sessionId: string, userId: number): Promise<Sandbox>;
  /** Stop and remove a sandbox, taking it out of the table and the pool. */
  remove(sb: Sandbox, why: string): Promise<void>;
  /** The ready pool members. */
  poolMembers(): Sandbox[];
  /** Top the pool up again (not waited for). */
  refillPool(): void;
  details(sb: Sandbox): Promise<SandboxDetails>;
}

export interface SessionOperationsOptions {
  config: Readonly<Config>;
  log: Logger;
  /** Decides idle (AIRLOCK_SESSION_IDLE_S) and stale (AIRLOCK_SESSION_STALE_S). */
  clock: Clock;
}

export class SessionOperations implements OperatorTarget {
  constructor(
    private readonly table: SessionTable,
    private readonly sandboxes: SandboxLifecycle,
    private readonly o: SessionOperationsOptions,
  ) {}

  isStale(sb: Sandbox): boolean {
    return !!sb.sessionId && this.o.clock.now() - (sb.claimedAt ?? sb.createdAt) > this.o.config.sandbox.staleS * 1000;
  }

  /**
   * Remove sandboxes idle longer than AIRLOCK_SESSION_IDLE_S and dead ones (container killed from
   * outside, crashed, OOM: its exited container and slot folder would otherwise stay until the
   * session's next prompt). The next prompt of a session reaped dead runs in a new one with the
   * stored conversation.
   */
  async reap(): Promise<string[]> {
    const idleMs = this.o.config.sandbox.idleS * 1000;
    const reaped: string[] = [];
    for (const sb of this.table.all()) {
      if (this.table.isBusy(sb.sessionId!)) continue;
      const why =
        sb.state === 'dead'
          ? 'dead'
          : sb.state === 'ready' && this.o.clock.now() - sb.lastUsedAt > idleMs
            ? 'idle'
            : undefined;
      if (!why) continue;
      reaped.push(sb.sessionId!);
      await this.sandboxes.remove(sb, why);
    }
    return reaped;
  }

  /**
   * Whether this session has a live sandbox of this user (the agent API accepts an
   * AGENT_USER_TOKEN only then: a token of an ended session is refused).
   */
  isLive(sessionId: string, userId: number): boolean {
    const sb = this.table.get(sessionId);
    return !!sb && sb.userId === userId && (sb.state === 'ready' || sb.state === 'busy') && connected(sb);
  }

  private info(sb: Sandbox): SandboxInfo {
    return sandboxInfo(sb, this.isStale(sb));
  }

  list(): SandboxInfo[] {
    return [...this.table.all(), ...this.sandboxes.poolMembers()]
      .map((s) => this.info(s))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** By session id, container id prefix (≥ 6 characters) or container name. */
  private find(id: string): Sandbox {
    const bySession = this.table.get(id);
    if (bySession) return bySession;
    if (id.length >= 6) {
      const hit = [...this.table.all(), ...this.sandboxes.poolMembers()].filter(
        (s) => s.containerId.startsWith(id) || s.containerName === id,
      );
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
    const container = await this.sandboxes.details(sb);
    const supervisor = connected(sb) ? await sb.client!.request({ type: 'ping' }, 3000).catch(() => null) : null;
    return { ...this.info(sb), container, supervisor };
  }

  /** Stop and remove one session's sandbox (next prompt starts a fresh one). */
  async kill(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    const info = this.info(sb);
    await this.sandboxes.remove(sb, 'killed by operator');
    if (!sb.sessionId) this.sandboxes.refillPool();
    return info;
  }

  /** Replace a session's sandbox with a fresh one (fresh tokens from the preparer). */
  async restart(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    if (!sb.sessionId || sb.userId === undefined) {
      await this.sandboxes.remove(sb, 'restart of a pool container');
      this.sandboxes.refillPool();
      return this.info(sb);
    }
    const { sessionId, userId } = sb;
    if (this.table.isBusy(sessionId)) throw new AppError('ERR_SESSION_BUSY', 'a turn is running in this session');
    this.table.hold(sessionId);
    try {
      await this.sandboxes.remove(sb, 'restart');
      return this.info(await this.sandboxes.acquire(sessionId, userId));
    } finally {
      this.table.release(sessionId);
    }
  }

  /** Restart every stale, idle session. */
  async restartStale(): Promise<{ restarted: string[]; skipped: string[] }> {
    const restarted: string[] = [];
    const skipped: string[] = [];
    for (const sb of this.table.all()) {
      if (!this.isStale(sb)) continue;
      if (this.table.isBusy(sb.sessionId!)) {
        skipped.push(sb.sessionId!);
        continue;
      }
      await this.restart(sb.sessionId!);
      restarted.push(sb.sessionId!);
    }
    return { restarted, skipped };
  }

  /** Remove every sandbox of a user (deactivated users, a disconnected account). */
  async killForUser(userId: number, why = 'user deactivated'): Promise<number> {
    const mine = this.table.all().filter((s) => s.userId === userId);
    await Promise.all(mine.map((s) => this.sandboxes.remove(s, why)));
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
    for (const sb of this.table.all()) {
      if (sb.userId === undefined || !ids.has(sb.userId)) continue;
      sb.policyChanged = true;
      marked++;
    }
    if (marked)
      this.o.log.info(
        { users: ids.size, sessions: marked },
        'agent policy changed; live sessions re-checked before their next turn',
      );
  }
}
