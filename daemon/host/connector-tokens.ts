import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AppError, isAppError, type Config, type Encryptor, type Logger, type Metrics } from '../../core/index.js';
import type { ConnectorTokens, OAuthConnectorLookup } from '../../core/connector-oauth.js';
import { acquireLease, releaseLease } from '../../domain/fleet.js';
import type { Sql } from '../../domain/index.js';
import { refreshGrant, type ConnectorClient } from '../../domain/connector-oauth/client.js';
import { ConnectorTokenStore, type ConnectorGrant } from '../../domain/connector-oauth/store.js';
import { TOKEN_REFRESH_WINDOW_S } from './tokens.js';

/** The fleet lease of one (connector, user) refresh; longer than a refresh takes. */
const LEASE_MS = 30_000;
/** How long a node waits for another node's refresh of the same grant before it sends its own. */
const WAIT_FOR_OTHER_NODE_MS = 10_000;
const LEASE_POLL_MS = 200;

export interface ConnectorTokenServiceOptions {
  store: ConnectorTokenStore;
  /** The registry: a pre-registered client's secret is read from it at each refresh, never copied. */
  connectors: OAuthConnectorLookup;
  /** The database holding the fleet's leases, and this node's id (the lease holder). */
  db: Sql;
  nodeId: string;
  log: Logger;
  metrics?: Metrics;
  /** ms since epoch; injectable for tests. */
  clock?: () => number;
  /** Refresh when this many seconds or fewer remain (the workspace account's rule: 60). */
  windowS?: number;
  /** The OAuth requests' fetch (domain/connector-oauth/client.ts guardedFetch by default). */
  fetchFn?: FetchLike;
}

/**
 * The user's access token per OAuth connector, for the egress gateway (core/connector-oauth.ts
 * ConnectorTokens). The rules are the workspace account's (daemon/host/tokens.ts): the cached token
 * is used while more than 60 s remain, else refreshed; one refresh in flight per grant in this
 * process, and one per fleet through a database lease (either engine): a node that finds the
 * lease taken waits for the token the holder saves instead of sending a second grant.
 */
export class ConnectorTokenService implements ConnectorTokens {
  readonly #o: ConnectorTokenServiceOptions;
  readonly #now: () => number;
  readonly #running = new Map<string, Promise<string | null>>();
  /** refresh_token grants this node sent (tests, health). */
  refreshCount = 0;

  constructor(o: ConnectorTokenServiceOptions) {
    this.#o = o;
    this.#now = o.clock ?? Date.now;
  }

  async accessToken(connectorId: string, userId: number): Promise<string | null> {
    const grant = await this.#o.store.grant(connectorId, userId);
    if (!grant) return null;
    if (this.#fresh(grant)) return grant.accessToken;
    // Expired and nothing to refresh with: the user connects again.
    if (!grant.refreshToken) return null;
    const key = `${connectorId}\n${userId}`;
    let p = this.#running.get(key);
    if (!p) {
      p = this.#refreshUnderLease(connectorId, userId, grant.accessToken).finally(() => this.#running.delete(key));
      this.#running.set(key, p);
    }
    return p;
  }

  #fresh(g: ConnectorGrant): boolean {
    return g.accessExpiresAt - this.#now() > (this.#o.windowS ?? TOKEN_REFRESH_WINDOW_S) * 1000;
  }

  /**
   * Take the grant's lease (waiting a bounded time for another node's refresh), then, holding it:
   * a token other than the one judged due, saved fresh by another node meanwhile, is used; else
   * one refresh_token grant is sent.
   */
  async #refreshUnderLease(connectorId: string, userId: number, dueToken: string): Promise<string | null> {
    const name = `connector-refresh:${connectorId}:${userId}`;
    const { db, nodeId } = this.#o;
    const giveUpAt = this.#now() + WAIT_FOR_OTHER_NODE_MS;
    let held = await acquireLease(db, name, nodeId, LEASE_MS);
    while (!held && this.#now() < giveUpAt) {
      await new Promise((r) => setTimeout(r, LEASE_POLL_MS));
      held = await acquireLease(db, name, nodeId, LEASE_MS);
    }
    try {
      const current = await this.#o.store.grant(connectorId, userId);
      if (!current?.refreshToken) return current && this.#fresh(current) ? current.accessToken : null;
      if (current.accessToken !== dueToken && this.#fresh(current)) return current.accessToken;
      return await this.#grant(current);
    } finally {
      if (held) await releaseLease(db, name, nodeId).catch(() => undefined);
    }
  }

  /** One refresh_token grant, saved; a grant the server no longer knows (invalid_grant) is deleted. */
  async #grant(g: ConnectorGrant): Promise<string | null> {
    const settings = await this.#o.connectors.get(g.connectorId);
    // The pre-registered client's secret only when the grant was made with that client.
    const secret = settings?.clientId === g.clientId ? settings.clientSecret?.reveal() : undefined;
    const client: ConnectorClient = { client_id: g.clientId, ...(secret ? { client_secret: secret } : {}) };
    const log = { connector: g.connectorId, userId: g.userId };
    this.refreshCount++;
    try {
      const t = await refreshGrant(g, client, g.refreshToken!, this.#o.fetchFn, this.#now());
      await this.#o.store.saveRefreshed(g.connectorId, g.userId, t.accessToken, t.expiresAt, t.refreshToken);
      this.#o.log.info(
        { ...log, expiresInS: Math.round((t.expiresAt - this.#now()) / 1000) },
        'connector access token refreshed',
      );
      this.#o.metrics?.tokenRefreshes.inc({ outcome: 'ok' });
      return t.accessToken;
    } catch (err) {
      const code = isAppError(err) ? err.code : 'error';
      const oauthError = isAppError(err)
        ? (err.details as { oauth_error?: string } | undefined)?.oauth_error
        : undefined;
      this.#o.metrics?.tokenRefreshes.inc({ outcome: 'failed' });
      if (oauthError === 'invalid_grant') {
        // Revoked or expired at the authorization server: the user has to connect again.
        await this.#o.store.remove(g.connectorId, g.userId, {
          event: 'connector.grant_lost',
          severity: 'warning',
          subjectId: g.userId,
          data: { connector: g.connectorId, reason: 'invalid_grant' },
        });
        this.#o.log.warn({ ...log, code, oauthError }, 'connector grant gone at the authorization server: deleted');
        return null;
      }
      this.#o.log.warn({ ...log, code, oauthError }, 'connector access token refresh failed');
      throw new AppError('ERR_CONNECTOR_OAUTH_REFRESH', 'could not refresh the connector access token', {
        retryable: true,
        cause: err,
      });
    }
  }
}

/**
 * The daemon's instance: the at-rest store on the daemon's database, this node as lease holder,
 * and the connector registry. daemon/serve.ts hands it to the egress gateway (the ConnectorTokens
 * the gateway asks) and to the web app.
 */
export function connectorTokenService(
  base: { config: Readonly<Config>; database: { sql: Sql }; log: Logger },
  encryptor: Encryptor,
  registry: OAuthConnectorLookup,
  metrics?: Metrics,
): ConnectorTokenService {
  return new ConnectorTokenService({
    store: new ConnectorTokenStore(base.database.sql, encryptor),
    connectors: {
      get: async (id) => registry.get(id),
      forUser: async (userId) => registry.forUser(userId),
    },
    db: base.database.sql,
    nodeId: base.config.node.id,
    log: base.log.child({ area: 'connector-tokens' }),
    metrics,
  });
}
