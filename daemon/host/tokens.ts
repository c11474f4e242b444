import { ACCOUNT_TOKEN_ENVS } from '../../core/sandbox-env.js';
import { AppError, type AccountTokens, type Logger, type Metrics, type TokenResponse } from '../../core/index.js';
import type { EgressHandle } from '../../core/seams.js';

/** Refresh at session start when this many seconds or fewer remain (docs/rules.md#session-start). */
export const TOKEN_REFRESH_WINDOW_S = 60;
/** Warm sessions: refresh (and rotate into the sandbox) this long before expiry. */
export const TOKEN_ROTATE_LEAD_S = 300;
export const TOKEN_ROTATE_INTERVAL_MS = 30_000;

/** The account-token env names a session's supervisor holds; all carry the one workspace access token. */
export { ACCOUNT_TOKEN_ENVS } from '../../core/sandbox-env.js';

export interface TokenStore {
  tokens(userId: number): Promise<AccountTokens | undefined>;
  saveAccess(userId: number, accessToken: string, expiresAt: number, refreshToken?: string): Promise<void>;
}

/**
 * Where a warm session's real tokens live: its egress gateway on the host (daemon/host/egress.ts).
 * Rotation replaces them there, in this room; nothing enters the sandbox.
 */
export type TokenSink = Pick<EgressHandle, 'setTokens'>;

export interface TokenServiceOptions {
  store: TokenStore;
  /** The refresh_token grant (core/accounts.ts tokenRequest in production); the store is domain/accounts.ts. */
  refresh(refreshToken: string): Promise<TokenResponse>;
  log: Logger;
  /** ms since epoch; injectable for tests. */
  clock?: () => number;
  windowS?: number;
  rotateLeadS?: number;
  /** Counts refreshes by outcome (airlock_token_refreshes_total). */
  metrics?: Metrics;
  /**
   * Fleet-wide single flight (domain/fleet.ts leases): a refresh of an account is done by one
   * node at a time; another node that needs it meanwhile waits for the token that node saves.
   */
  lease?: RefreshLease;
}

export interface RefreshLease {
  /** Take the account's refresh lease; false while another node holds it. */
  acquire(userId: number): Promise<boolean>;
  release(userId: number): Promise<void>;
}

/** How long a node waits for another node's refresh of the same account before it tries itself. */
const FOREIGN_REFRESH_WAIT_MS = 10_000;

export interface AccessToken {
  accessToken: string;
  expiresAt: number;
}

/**
 * The token service: cached access token reused while more than `windowS` seconds remain,
 * else refreshed; one refresh in flight per account (concurrent callers share it).
 * Warm sessions registered with track() get new tokens pushed into their egress gateway shortly
 * before expiry, so a session older than the token lifetime keeps working.
 */
export class TokenService {
  readonly #o: TokenServiceOptions;
  readonly #clock: () => number;
  readonly #inflight = new Map<number, Promise<AccessToken>>();
  readonly #sessions = new Map<string, { userId: number; envs: string[]; sink: TokenSink }>();
  #timer?: NodeJS.Timeout;
  /** Refresh grants sent (tests and health). */
  refreshCount = 0;

  constructor(o: TokenServiceOptions) {
    this.#o = o;
    this.#clock = o.clock ?? Date.now;
  }

  /**
   * The user's access token for a session start: null when no account is connected.
   * Throws ERR_ACCOUNT_REFRESH when a needed refresh fails.
   */
  async getAccessToken(userId: number): Promise<AccessToken | null> {
    const t = await this.#o.store.tokens(userId);
    if (!t) return null;
    const left = t.accessExpiresAt !== undefined ? (t.accessExpiresAt - this.#clock()) / 1000 : -Infinity;
    if (t.accessToken && left > (this.#o.windowS ?? TOKEN_REFRESH_WINDOW_S)) {
      return { accessToken: t.accessToken, expiresAt: t.accessExpiresAt! };
    }
    if (!t.refreshToken) return null;
    return this.refresh(userId, { accessToken: t.accessToken });
  }

  /**
   * Refresh now (single flight per account); the new token is pushed to the account's warm
   * sessions. `due` is the token the caller read and judged due; without it, the one stored now.
   * With a fleet lease, a token other than that one, saved by another node and fresh, is used
   * instead of a second grant. (Compared with what the caller judged, not with a second read:
   * a read made after the other node saved would take its fresh token for the due one.)
   */
  refresh(userId: number, due?: { accessToken?: string }): Promise<AccessToken> {
    const running = this.#inflight.get(userId);
    if (running) return running;
    const p = (async () => {
      const lease = this.#o.lease;
      if (!lease) return this.#refreshNow(userId);
      const before = due ?? (await this.#o.store.tokens(userId));
      const until = this.#clock() + FOREIGN_REFRESH_WAIT_MS;
      for (;;) {
        if (await lease.acquire(userId)) {
          try {
            // Another node may have refreshed while this one waited: use its token.
            const now = await this.#o.store.tokens(userId);
            if (
              now?.accessToken &&
              now.accessExpiresAt !== undefined &&
              now.accessToken !== before?.accessToken &&
              now.accessExpiresAt - this.#clock() > this.windowMs
            ) {
              await this.pushToUser(userId, now.accessToken);
              return { accessToken: now.accessToken, expiresAt: now.accessExpiresAt };
            }
            return await this.#refreshNow(userId);
          } finally {
            await lease.release(userId).catch(() => undefined);
          }
        }
        if (this.#clock() > until) return this.#refreshNow(userId);
        await new Promise((r) => setTimeout(r, 200));
      }
    })().finally(() => this.#inflight.delete(userId));
    this.#inflight.set(userId, p);
    return p;
  }

  private get windowMs(): number {
    return (this.#o.windowS ?? TOKEN_REFRESH_WINDOW_S) * 1000;
  }

  /** One refresh_token grant, saved and pushed to the account's warm sessions. */
  async #refreshNow(userId: number): Promise<AccessToken> {
    const t = await this.#o.store.tokens(userId);
    if (!t?.refreshToken) throw new AppError('ERR_ACCOUNT_NOT_CONNECTED', 'no connected account');
    this.refreshCount++;
    let r: TokenResponse;
    try {
      r = await this.#o.refresh(t.refreshToken);
    } catch (err) {
      this.#o.log.warn({ userId, code: (err as AppError).code }, 'access token refresh failed');
      this.#o.metrics?.tokenRefreshes.inc({ outcome: 'failed' });
      throw new AppError('ERR_ACCOUNT_REFRESH', 'could not refresh the workspace access token', {
        retryable: true,
        cause: err,
      });
    }
    const expiresAt = this.#clock() + r.expires_in * 1000;
    await this.#o.store.saveAccess(userId, r.access_token, expiresAt, r.refresh_token);
    this.#o.log.info({ userId, expiresInS: r.expires_in }, 'access token refreshed');
    this.#o.metrics?.tokenRefreshes.inc({ outcome: 'ok' });
    // Whoever asked (a rotation pass or a session start), every warm session of this account
    // gets the new value: after a failed rotation pass, the next successful refresh, often a
    // new session's start, repairs the older sessions too.
    await this.pushToUser(userId, r.access_token);
    return { accessToken: r.access_token, expiresAt };
  }

  /**
   * Register a warm session for rotation: the env names of the real tokens its egress gateway
   * holds, and that gateway (`sink`). Only account tokens rotate (the model key does not), the
   * others are ignored. The session runtime's lifecycle (serve's onSessionLive hook) is the one
   * caller in the daemon; onSessionEnded untracks.
   */
  track(sessionId: string, userId: number, envs: readonly string[], sink: TokenSink): void {
    const account = envs.filter((e) => ACCOUNT_TOKEN_ENVS.includes(e));
    if (account.length) this.#sessions.set(sessionId, { userId, envs: account, sink });
  }

  untrack(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  tracked(): string[] {
    return [...this.#sessions.keys()];
  }

  /**
   * One rotation pass: for every account with a warm session, refresh when the cached token
   * has `rotateLeadS` seconds or fewer left; refresh() pushes the new value to each of its
   * sessions. A failed refresh is logged and retried on the next pass (every 30 s); meanwhile
   * those sessions keep the old token (upstream 401s surface as tool errors).
   */
  async rotateDue(): Promise<void> {
    const users = new Set([...this.#sessions.values()].map((s) => s.userId));
    const lead = (this.#o.rotateLeadS ?? TOKEN_ROTATE_LEAD_S) * 1000;
    await Promise.all(
      [...users].map(async (userId) => {
        const t = await this.#o.store.tokens(userId).catch((err: Error) => {
          this.#o.log.warn({ userId, err: err.message }, 'connected account unreadable for rotation');
          return undefined;
        });
        if (!t?.refreshToken) return;
        if (t.accessExpiresAt !== undefined && t.accessExpiresAt - this.#clock() > lead) return;
        await this.refresh(userId, { accessToken: t.accessToken }).catch(() => undefined); // logged in refresh()
      }),
    );
  }

  /**
   * Push a token value to every warm session of this account: after a refresh, and after the
   * user connected the same account again (web/account-routes.ts).
   */
  async pushToUser(userId: number, accessToken: string): Promise<void> {
    for (const [sid, s] of [...this.#sessions]) {
      if (s.userId !== userId) continue;
      try {
        s.sink.setTokens(Object.fromEntries(s.envs.map((e) => [e, accessToken])));
        this.#o.log.info({ sessionId: sid }, 'token rotated into session');
      } catch (err) {
        this.#o.log.warn({ sessionId: sid, code: (err as AppError).code }, 'token rotation failed');
      }
    }
  }

  start(intervalMs = TOKEN_ROTATE_INTERVAL_MS): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.rotateDue(), intervalMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled([...this.#inflight.values()]);
  }
}
