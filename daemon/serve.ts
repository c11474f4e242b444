import { SqliteSessionStore, startWebServer, type WebServer, type WebServices } from '../web/index.js';
import { openBase, type DaemonBase } from './context.js';
import { AccountStore, Encryptor, loadOrCreateEncryptionKey, tokenRequest, type Config, type Logger, type SessionPreparer } from '../core/index.js';
import { EgressGatewayService } from './egress.js';
import { OverlayPreparer } from './overlay.js';
import { TokenService } from './tokens.js';

export interface RunningDaemon extends DaemonBase {
  web: WebServer;
  /** Proxy/token area: for the session manager (setRotate, untrack), the runtime (egress) and tests. */
  tokenService: TokenService;
  egressGateway: EgressGatewayService;
  sessionPreparer: SessionPreparer;
  /** Shutdown in order: stop accepting, drain streams, stop sessions, close servers, close the db. */
  close(): Promise<void>;
}

export interface ServeOptions {
  log?: Logger;
  /** Extra services (tests, demo) merged over the ones serve builds. */
  services?: WebServices;
}

/** Start the daemon: database, services, web app. */
export async function serve(config: Readonly<Config>, opts: ServeOptions = {}): Promise<RunningDaemon> {
  const base = await openBase(config, opts.log);
  const sessions = new SqliteSessionStore(base.db);
  // Connected accounts, token service (refresh + rotation), egress gateway, session overlay.
  const accounts = new AccountStore(base.db, new Encryptor(loadOrCreateEncryptionKey(config.dataDir, config.encryptionKey)));
  const g = config.google;
  const tokenService = new TokenService({
    store: accounts,
    refresh: (refreshToken) => tokenRequest({ tokenUrl: g.tokenUrl, clientId: g.clientId, clientSecret: g.clientSecret }, { grant_type: 'refresh_token', refresh_token: refreshToken }),
    log: base.log.child({ area: 'tokens' }),
  });
  tokenService.start();
  const egressGateway = new EgressGatewayService({ log: base.log });
  const services: WebServices = { accounts, tokenService, egressGateway, ...(opts.services ?? {}) };
  const web = await startWebServer({ ...base, sessions, services });
  // The host route's upstream: this daemon's own listener, as the egress gateway reaches it.
  const hostOrigin = `http://${['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host}:${web.port}`;
  services.sessionPreparer ??= new OverlayPreparer({ config, tokens: tokenService, log: base.log.child({ area: 'overlay' }), hostOrigin });
  const sessionPreparer = services.sessionPreparer as SessionPreparer;
  base.log.info({ url: web.url, publicOrigin: config.publicOrigin }, 'airlock listening');
  const pruneTimer = setInterval(() => sessions.prune(), 3600_000);
  pruneTimer.unref();
  let closing: Promise<void> | undefined;
  return {
    ...base,
    web,
    tokenService,
    egressGateway,
    sessionPreparer,
    close() {
      closing ??= (async () => {
        clearInterval(pruneTimer);
        await web.close();
        await tokenService.close();
        await egressGateway.close();
        base.db.close();
      })();
      return closing;
    },
  };
}
