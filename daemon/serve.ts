import { assertPortFree } from './port-check.js';
import {
  DbSessionStore,
  noSandboxPorts,
  openWebListener,
  type SandboxPorts,
  type WebServer,
  type WebServices,
} from '../web/index.js';
import { openBase, type DaemonBase } from './context.js';
import {
  AppError,
  atRestEncryptor,
  createMetrics,
  mintAgentUserToken,
  tokenRequest,
  systemClock,
  type Clock,
  type Config,
  type Metrics,
  type Encryptor,
  type Logger,
  type SessionPreparer,
} from '../core/index.js';
import type { AgentSessionCheck, AttachPort, OperatorPort, SandboxControl } from '../web/index.js';
import { DirectorySyncRunner } from './directory-sync/index.js';
import type { EgressGateway } from '../core/sandbox-protocol.js';
import { startRuntime, type Runtime, type SessionHeld, type SessionHooks } from './runtime/index.js';
import { EgressGatewayService } from './host/egress.js';
import { ConnectorGateway, type ConnectorCallAudit } from './host/connector-gateway.js';
import { egressCaps } from './host/egress-conns.js';
import { OverlayPreparer } from './host/overlay.js';
import { TokenService } from './host/tokens.js';
import { FleetMember, FleetSessions, refreshLease } from './host/fleet.js';
import { MailGate } from '../domain/mail/index.js';
import { approvalDecider, ConnectorApprovals } from './host/connector-approvals.js';
import { startTelemetry } from './telemetry.js';
import { Lifecycle } from './lifecycle.js';
import { AccountStore, getUserById } from '../domain/index.js';
import { recordSandboxTime } from '../domain/usage/index.js';
import { registryLookup } from '../domain/connector-oauth/registry.js';
import type { OAuthConnectorLookup } from '../core/connector-oauth.js';
import { connectorTokenService } from './host/connector-tokens.js';

export interface RunningDaemon extends DaemonBase {
  web: WebServer;
  /** Session manager + operator control socket; undefined when the engine was unreachable. */
  runtime?: Runtime;
  /** Proxy/token area: rotation into each live session's egress gateway (track, untrack) and tests. */
  tokenService: TokenService;
  egressGateway: EgressGatewayService;
  sessionPreparer: SessionPreparer;
  /** Shutdown in order (serve's comment lists it): stop accepting, drain streams, stop sessions, close servers, close the db. */
  close(): Promise<void>;
}

export interface ServeOptions {
  log?: Logger;
  /** Sandbox runtime seams (other areas plug in here); false disables the runtime (web-only tests). */
  runtime?: { preparer?: SessionPreparer; egress?: EgressGateway; owner?: string } | false;
  /** The clock sessions and the fleet membership read ages on (core/clock.ts); tests advance one. */
  clock?: Clock;
}

/** What must hold before anything starts: the fleet settings, and the web listener's port free (nothing left behind). */
async function checkBeforeStart(config: Readonly<Config>): Promise<void> {
  checkFleetConfig(config);
  await assertPortFree(config.host, config.port);
}

/**
 * Start the daemon: database, services, web app. The parts are registered with the Lifecycle
 * (daemon/lifecycle.ts) in the order that, read backwards, is the shutdown: the login-session
 * prune, the web listener (no new requests; streams drained), directory sync (a running job gets
 * up to 5 s), the sandbox runtime, the token service, the egress gateway, the fleet membership
 * (the node leaves only once its sessions are stopped), telemetry (spans flushed), the database.
 * A start that fails stops what had started.
 */
export async function serve(config: Readonly<Config>, opts: ServeOptions = {}): Promise<RunningDaemon> {
  await checkBeforeStart(config);
  const base = await openBase(config, opts.log);
  base.log.info(
    { database: base.database.target, schemaVersion: base.database.schemaVersion, node: config.node.id },
    'database ready',
  );
  const life = new Lifecycle(base.log);
  life.onStop('database', () => base.database.close());
  return life.run(async () => {
    const sessions = new DbSessionStore(base.database.sql);
    // The one at-rest encryptor: accounts, IdP secrets, memories.
    const encryptor = atRestEncryptor(config);
    const metrics = createMetrics({ defaultMetrics: true, node: config.node.id });
    // OpenTelemetry, when OTEL_EXPORTER_OTLP_ENDPOINT is set: turns, tool calls and proxied requests.
    const telemetry = startTelemetry(config, base.log, metrics.registry);
    life.onStop('telemetry', () => telemetry?.shutdown());
    // Membership of the fleet (a single host is a fleet of one): registration, heartbeats, lost
    // nodes. It joins once the listener is up (below); it leaves after the runtime has stopped.
    const started: { runtime?: Runtime } = {};
    const fleet = new FleetMember({
      ...base,
      clock: opts.clock,
      liveSessions: () => started.runtime?.sessions.list().filter((s) => s.sessionId).length ?? 0,
    });
    life.onStop('fleet membership', () => fleet.stop());

    // The send policy's daemon side and the proxy's audit trail (docs/audit.md).
    const mailGate = new MailGate(base.database.sql, config, base.log.child({ area: 'mail' }));
    const oauthConnectors = registryLookup(base.database.sql, encryptor);
    const connectors = connectorGateway(base, encryptor, oauthConnectors, mailGate, (a) => telemetry?.connectorCall(a));
    const egressGateway = new EgressGatewayService({
      log: base.log,
      metrics,
      caps: egressCaps(config.egress),
      connectors: connectors.gateway,
    });
    life.onStop('egress gateway', () => egressGateway.close());
    // Connected accounts, token service (refresh + rotation), session overlay.
    const accounts = new AccountStore(base.database.sql, encryptor);
    const tokenService = await life.start(
      'token service',
      () => startTokenService(base, accounts, metrics),
      (t) => t.close(),
    );
    // The port first: sessions' host route is this listener (ERR_STARTING until the app is served below).
    const listener = await openWebListener(base);
    life.onStop('web port', () => listener.close());
    const preparer = sessionPreparer(base, encryptor, tokenService, accounts, listener.port);
    const fleetSessions = new FleetSessions({ ...base, clock: opts.clock });
    const auditor = telemetry ? telemetry.auditor(mailGate) : mailGate;
    const held = sandboxTime(base, metrics, opts.clock ?? systemClock);
    const hooks = sessionHooks(base, tokenService, fleetSessions, held);
    const runtimeOpts =
      opts.runtime === false
        ? undefined
        : {
            preparer,
            egress: egressGateway as EgressGateway,
            hooks,
            auditor,
            clock: opts.clock,
            ...(opts.runtime || {}),
          };
    const runtime = runtimeOpts
      ? await life.start(
          'sandbox runtime',
          () => startRuntime({ ...base, metrics, ...runtimeOpts }),
          (r) => r?.close(),
        )
      : undefined;
    started.runtime = runtime;
    // Without an engine (or with the runtime off) the ports answer "no sandboxes" (web/services.ts).
    const sandboxPorts = runtime
      ? runtimePorts(runtime, fleetSessions, telemetry)
      : noSandboxPorts(opts.runtime === false ? 'unchecked' : 'refused');
    const directorySync = await startDirectorySync(config, base, encryptor, metrics, sandboxPorts.sandboxes);
    const services: WebServices = {
      ...sandboxPorts,
      metrics,
      accounts,
      tokenService,
      directorySync,
      ...connectors.web,
      oauthConnectors,
      agentModels: () => [],
    };
    life.onStop('directory sync', () =>
      Promise.race([directorySync.idle(), new Promise((r) => setTimeout(r, 5_000).unref())]),
    );
    const web = await life.start(
      'web listener',
      () => listener.serve({ ...base, sessions, services, encryptor }),
      (w) => w.close(),
    );
    await fleet.start();
    base.log.info({ url: web.url, publicOrigin: config.publicOrigin }, 'airlock listening');
    const pruneTimer = setInterval(
      () =>
        void sessions.prune().catch((err: Error) => base.log.warn({ err: err.message }, 'login session prune failed')),
      3600_000,
    );
    pruneTimer.unref();
    life.onStop('login-session prune', () => clearInterval(pruneTimer));
    return { ...base, web, runtime, tokenService, egressGateway, sessionPreparer: preparer, close: () => life.stop() };
  });
}

/** The token service: refresh on demand, rotation into live sessions every 30 s (started). */
function startTokenService(base: DaemonBase, accounts: AccountStore, metrics: Metrics): TokenService {
  const g = base.config.google;
  const tokenService = new TokenService({
    store: accounts,
    refresh: (refreshToken) =>
      tokenRequest(
        { tokenUrl: g.tokenUrl, clientId: g.clientId, clientSecret: g.clientSecret },
        { grant_type: 'refresh_token', refresh_token: refreshToken },
      ),
    log: base.log.child({ area: 'tokens' }),
    metrics,
    lease: refreshLease(base.database.sql, base.config.node.id),
  });
  tokenService.start();
  return tokenService;
}

/** The session preparer of this daemon, with the host route to its own listener on `port`. */
function sessionPreparer(
  base: DaemonBase,
  encryptor: Encryptor,
  tokens: TokenService,
  accounts: AccountStore,
  port: number,
): SessionPreparer {
  const { config } = base;
  // The host route's upstream: this daemon's own listener, as the egress gateway reaches it.
  const hostOrigin = `http://${['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const agentSecret = config.agentUserTokenSecret;
  return new OverlayPreparer({
    config,
    db: base.database.sql,
    encryptor,
    tokens,
    log: base.log.child({ area: 'overlay' }),
    hostOrigin,
    mintAgentUserToken: agentSecret
      ? (userId, sessionId) => mintAgentUserToken(agentSecret, { userId, sessionId })
      : undefined,
    // Read with the user's tokens a moment before (the overlay asks only when it got an access token).
    accountEmail: (userId) => accounts.emailSeen(userId),
  });
}

/** A fleet (AIRLOCK_DATABASE_URL) needs the node secret and a shared encryption key. */
function checkFleetConfig(config: Readonly<Config>): void {
  if (config.databaseUrl && !config.node.secret) {
    throw new AppError(
      'ERR_CONFIG_INVALID',
      'AIRLOCK_NODE_SECRET: required with AIRLOCK_DATABASE_URL (the nodes of a fleet authenticate each other with it)',
    );
  }
  if (config.databaseUrl && !config.encryptionKey) {
    // A key generated into one node's data folder would leave the others unable to read what it wrote.
    throw new AppError(
      'ERR_CONFIG_INVALID',
      'AIRLOCK_ENCRYPTION_KEY: required with AIRLOCK_DATABASE_URL (every node must read what the others encrypt)',
    );
  }
}

/**
 * Directory sync runs in the background of this process; jobs whose process is gone (a crashed
 * daemon or CLI) are failed first; a job a live `airlock sync-directory` runs is left alone.
 */
async function startDirectorySync(
  config: Readonly<Config>,
  base: DaemonBase,
  encryptor: Encryptor,
  metrics: ReturnType<typeof createMetrics>,
  sandboxes: SandboxControl,
): Promise<DirectorySyncRunner> {
  const directorySync = new DirectorySyncRunner({
    config,
    db: base.database.sql,
    log: base.log,
    encryptor,
    metrics,
    sandboxes,
  });
  const interrupted = await directorySync.recover();
  if (interrupted) base.log.warn({ jobs: interrupted }, 'directory-sync jobs whose process stopped marked failed');
  return directorySync;
}

/**
 * Sandbox time in usage (docs/usage.md): a released sandbox adds claim-to-release to its user's
 * row for its chat model on the release's UTC day, and to the metric. Not awaited by the runtime;
 * a failed write is logged (the sandbox is gone either way).
 */
function sandboxTime(base: DaemonBase, metrics: Metrics, clock: Clock): (h: SessionHeld) => void {
  return ({ userId, claimedAt, modelRevision }) => {
    if (!modelRevision) return; // no chat model known: nothing to attribute it to
    const i = modelRevision.lastIndexOf(':');
    const modelId = i > 0 ? modelRevision.slice(0, i) : modelRevision;
    const seconds = Math.max(0, (clock.now() - claimedAt) / 1000);
    metrics.usageSandboxSeconds.inc({ model: modelId }, seconds);
    recordSandboxTime(base.database.sql, { userId, modelId, seconds, at: new Date() }).catch((err: Error) =>
      base.log.warn({ err: err.message, userId }, 'sandbox time not recorded'),
    );
  };
}

/** The runtime's session hooks: token rotation and fleet ownership follow each live sandbox. */
function sessionHooks(
  base: DaemonBase,
  tokenService: TokenService,
  fleetSessions: FleetSessions,
  held: (h: SessionHeld) => void,
): SessionHooks {
  return {
    // The one place a session registers for token rotation: when its sandbox took `start`, or was
    // adopted after a daemon restart (its token env names come from its claim.json). Rotation is
    // in memory, so an adopted session keeps getting fresh tokens in its egress gateway instead of
    // failing with 401 once its access token expires. track() keeps only the account tokens (the model key stays).
    // Only the node that owns a session refreshes and rotates its tokens. The fleet records the owner.
    onSessionLive: ({ sessionId, userId, tokenEnvs, egress }) => {
      if (egress) tokenService.track(sessionId, userId, tokenEnvs, egress);
      fleetSessions.live(sessionId, userId);
    },
    // Every end of a live sandbox (reap, kill, restart, disconnect, lost, policy change) stops rotation into it.
    onSessionEnded: (sessionId, _why, h) => {
      tokenService.untrack(sessionId);
      fleetSessions.ended(sessionId);
      if (h) held(h);
    },
    // A user deactivated (CLI sync, admin) or removed while no daemon ran loses the sandbox at start,
    // and so does a session another node of the fleet took over meanwhile.
    mayAdopt: async ({ sessionId, userId }) =>
      (await getUserById(base.database.sql, userId))?.is_active === true && (await fleetSessions.mayAdopt(sessionId)),
  };
}

/** The web services the sandbox runtime provides (chat runner, operator, attach, workspaces, sandboxes). */
function runtimePorts(
  runtime: Runtime,
  fleetSessions: FleetSessions,
  telemetry: ReturnType<typeof startTelemetry>,
): SandboxPorts {
  // ChatService (domain/chat/turn-service.ts) is {runner}: the session manager, as the fleet sees it.
  const runner = fleetSessions.runnerOver(runtime.sessions);
  return {
    operator: ((request: unknown) => runtime.sessions.handleControl(request)) satisfies OperatorPort,
    attach: {
      container: async (sessionId) => (await runtime.sessions.inspect(sessionId)).containerId,
      shell: (containerId, o, tty) => runtime.driver.shell(containerId, o, tty),
    } satisfies AttachPort,
    workspaces: { ensure: (userId) => runtime.sessions.ensureWorkspace(userId) },
    chat: { runner: telemetry ? telemetry.runner(runner) : runner },
    sandboxes: runtime.sessions,
    sandboxAdmin: runtime.sessions,
    // AGENT_USER_TOKEN is bound to user and session: accepted only while that session has a live
    // sandbox of that user (docs/api.md).
    agentSessions: {
      isLive: (sessionId: string, userId: number) => runtime.sessions.isLive(sessionId, userId),
    } satisfies AgentSessionCheck,
  };
}

/**
 * Connectors (docs/connectors.md): the gateway's MCP side. A tool marked ask waits for the user
 * in the chat (`approvals`, also the chat's decider with the MailGate: approvalDecider) at most
 * half the tool timeout; the other half is the call's. OAuth connectors' tokens come from each
 * user's grant (`tokens`, docs/connectors.md "OAuth per user").
 */
function connectorGateway(
  base: DaemonBase,
  encryptor: Encryptor,
  oauthConnectors: OAuthConnectorLookup,
  mailGate: MailGate,
  onCall: (a: ConnectorCallAudit) => void,
): { gateway: ConnectorGateway; web: Pick<WebServices, 'approvals' | 'connectorTokens'> } {
  const approvals = new ConnectorApprovals({
    db: base.database.sql,
    log: base.log.child({ area: 'connectors' }),
    timeoutMs: (base.config.model.toolTimeoutS * 1000) / 2,
  });
  // Each user's OAuth tokens: refreshed by the host, one grant per fleet.
  const tokens = connectorTokenService(base, encryptor, oauthConnectors);
  const gateway = new ConnectorGateway({
    db: base.database.sql,
    enc: encryptor,
    log: base.log.child({ area: 'connectors' }),
    tokens,
    onCall,
    approve: approvals.approve,
    onSessionClosed: (id) => approvals.sessionEnded(id),
  });
  return { gateway, web: { approvals: approvalDecider(mailGate, approvals), connectorTokens: tokens } };
}
