/**
 * Sandbox containers made and unmade: a slot folder, a hardened container through the driver,
 * the control connection to its supervisor; and the reverse, in an order that never deletes a
 * user's workspace. Knows nothing of sessions, the pool or hooks (the session manager does).
 */
import { AppError, type Clock, type Logger } from '../../core/index.js';
import {
  LABEL_OWNER,
  LABEL_POOL,
  LABEL_SESSION,
  LABEL_SLOT,
  LABEL_USER,
  type SandboxDriver,
} from './sandbox-driver.js';
import { SandboxClient } from './sandbox-client.js';
import type { Sandbox } from './sandbox.js';
import type { SlotFolders } from './slots.js';

/**
 * `airlock-session-<session id>-<slot>` (the slot keeps a restarted session's new container from
 * clashing with the old one still being removed). Characters an engine does not take in a name
 * become `_`.
 */
export function sessionContainerName(sessionId: string, slot: string): string {
  return `airlock-session-${sessionId.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 100)}-${slot}`;
}

export interface ContainerFactoryDeps {
  driver: SandboxDriver;
  slots: SlotFolders;
  owner: string;
  image: string;
  /** TEST ONLY: run the agent child under this uid (the negative token-isolation check). */
  childUid?: number;
  log: Logger;
  /** The runtime's clock (core/clock.ts): a new sandbox's createdAt and lastUsedAt. */
  clock: Clock;
}

export class ContainerFactory {
  constructor(private readonly d: ContainerFactoryDeps) {}

  /**
   * Create, start and connect to a sandbox: for a session (cold start, its workspace mounted) or,
   * without a target, for the pool (labels without session and user, an empty /workspace slot).
   */
  async create(target?: { sessionId: string; userId: number; workspace: string }): Promise<Sandbox> {
    const { slot, dir, runDir } = this.d.slots.create(!target);
    const name = target ? sessionContainerName(target.sessionId, slot) : `airlock-pool-${slot}`;
    const labels: Record<string, string> = {
      [LABEL_OWNER]: this.d.owner,
      [LABEL_SLOT]: slot,
      [LABEL_SESSION]: target?.sessionId ?? '',
      [LABEL_USER]: target ? String(target.userId) : '',
    };
    if (!target) labels[LABEL_POOL] = '1';
    const t0 = Date.now();
    let id: string | undefined;
    try {
      id = await this.d.driver.create({
        name,
        image: this.d.image,
        labels,
        // Nothing secret here: container env is visible to `docker inspect` and to docker-init.
        env: this.d.childUid !== undefined ? [`AIRLOCK_SANDBOX_CHILD_UID=${this.d.childUid}`] : [],
        workspace: target ? target.workspace : `${dir}/workspace`,
        ...(target ? {} : { workspacePropagation: 'rslave' as const }),
        runDir,
      });
      await this.d.driver.start(id);
      const client = await SandboxClient.connect(`${runDir}/control.sock`);
      this.d.log.debug({ containerId: id.slice(0, 12), ms: Date.now() - t0, pool: !target }, 'container started');
      const now = this.d.clock.now();
      return {
        slot,
        dir,
        runDir,
        containerId: id,
        containerName: name,
        state: target ? 'starting' : 'pool',
        createdAt: now,
        lastUsedAt: now,
        turns: 0,
        adopted: false,
        fromPool: false,
        client,
      };
    } catch (err) {
      // A failed start is cleaned up: the engine does not remove such a container by itself.
      if (id) await this.d.driver.remove(id).catch(() => undefined);
      this.d.slots.remove(dir);
      throw new AppError('ERR_SANDBOX_START', 'the sandbox container could not be started', { cause: err });
    }
  }

  /** A claimed pool container takes its session's name (labels cannot change after create). */
  async nameAfterSession(sb: Sandbox, sessionId: string): Promise<void> {
    const name = sessionContainerName(sessionId, sb.slot);
    try {
      await this.d.driver.rename(sb.containerId, name);
      sb.containerName = name;
    } catch (err) {
      // Cosmetic: the session still runs; `sessions ls` and claim.json know the mapping.
      this.d.log.warn(
        { containerId: sb.containerId.slice(0, 12), err: (err as Error).message },
        'could not rename the claimed pool container',
      );
    }
  }

  /** Stop the supervisor cleanly when it answers, then remove the container and its slot folder. */
  async destroy(sb: Sandbox): Promise<void> {
    try {
      if (sb.client && !sb.client.closed) await sb.client.request({ type: 'shutdown' }, 1000).catch(() => undefined);
      sb.client?.close();
      await sb.egress?.close().catch(() => undefined);
      await this.d.driver.remove(sb.containerId);
    } catch (err) {
      this.d.log.warn(
        { containerId: sb.containerId.slice(0, 12), err: (err as Error).message },
        'container remove failed',
      );
    } finally {
      this.d.slots.remove(sb.dir);
    }
  }
}
