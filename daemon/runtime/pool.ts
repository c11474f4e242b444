/**
 * The warm pool: up to AIRLOCK_POOL_SIZE sandboxes started before any session needs one.
 *
 * A member is whatever `create` returns once it is ready to be claimed; today that is a
 * container whose supervisor answered `ping` with `hello`. `claim` hands one healthy member
 * over; the caller binds it to its user (workspace, then the user's parts over the control
 * socket). The pool never looks inside a member, so a readier member (the agent and its MCP
 * servers already running before the claim) changes `create` and the claim's binding step, not
 * this module.
 */
import { AppError, type Logger } from '../../core/index.js';
import { connected, type Sandbox } from './sandbox.js';
import type { StartGate } from './start-gate.js';

export interface PoolDeps {
  size: number;
  /** Every start (pool fills too) goes through the start gate. */
  gate: StartGate;
  /** Start one member and wait until it is ready to be claimed. */
  create(): Promise<Sandbox>;
  remove(sb: Sandbox, why: string): Promise<void>;
  /** The member count changed (gauges). */
  onChange(): void;
  isClosed(): boolean;
  log: Logger;
}

export class WarmPool {
  private members: Sandbox[] = [];
  private starting = 0;
  private filling?: Promise<void>;

  constructor(
    private readonly d: PoolDeps,
    private enabledFlag: boolean,
  ) {}

  get enabled(): boolean {
    return this.enabledFlag;
  }

  disable(): void {
    this.enabledFlag = false;
  }

  get size(): number {
    return this.members.length;
  }

  list(): Sandbox[] {
    return [...this.members];
  }

  /** Take back a member (adopted at daemon start). */
  add(sb: Sandbox): void {
    this.members.push(sb);
  }

  /** Forget a member (it is being removed or was lost). */
  forget(sb: Sandbox): void {
    this.members = this.members.filter((p) => p !== sb);
  }

  /** Hand over one healthy member (lost ones met on the way are removed); undefined when empty. */
  claim(): Sandbox | undefined {
    while (this.enabledFlag && this.members.length) {
      const cand = this.members.shift()!;
      if (connected(cand)) {
        cand.fromPool = true;
        return cand;
      }
      void this.d.remove(cand, 'pool member lost');
    }
    return undefined;
  }

  /** Top the pool up (one fill at a time; concurrent callers share it). */
  fill(): Promise<void> {
    if (!this.enabledFlag || this.d.isClosed()) return Promise.resolve();
    this.filling ??= (async () => {
      try {
        while (!this.d.isClosed() && this.members.length + this.starting < this.d.size) {
          this.starting++;
          const release = await this.d.gate.enter();
          try {
            const sb = await this.d.create();
            if (this.d.isClosed()) {
              await this.d.remove(sb, 'shutdown');
              break;
            }
            this.members.push(sb);
            this.d.onChange();
          } catch (err) {
            this.d.log.error({ err: (err as Error).message }, 'pool container start failed');
            break;
          } finally {
            release();
            this.starting--;
          }
        }
      } finally {
        this.filling = undefined;
      }
    })();
    return this.filling;
  }

  /** Resolves when the pool is full (tests, bench). */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.enabledFlag && this.members.length < this.d.size) {
      if (Date.now() > deadline) throw new AppError('ERR_SANDBOX_POOL', 'the pool did not fill in time');
      await (this.filling ?? this.fill());
      if (this.members.length < this.d.size) await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Wait for a fill in progress (shutdown). */
  async settle(): Promise<void> {
    await this.filling?.catch(() => undefined);
  }
}
