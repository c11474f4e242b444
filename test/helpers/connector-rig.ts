/**
 * The connector path without a container (docs/connectors.md): the registry in the test app's
 * database, the session's routes from the overlay's own connectorRoute, the real egress gateway
 * with its connector side (daemon/host/connector-gateway.ts) on a unix socket, the real in-sandbox
 * proxy in front of it, and the agent's own connector client (agent/connectors.ts).
 */
import { join } from 'node:path';
import { createLogger, randomToken, type ConnectorTokens, type Logger } from '../../core/index.js';
import { CONNECTORS_PLACEHOLDER_ENV, connectorBaseUrlEnv } from '../../core/sandbox-env.js';
import type { TurnRequest } from '../../core/sandbox-protocol.js';
import {
  ConnectorGateway,
  type ConnectorApprover,
  type ConnectorCallAudit,
} from '../../daemon/host/connector-gateway.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildProfile, connectorRoute } from '../../daemon/host/overlay.js';
import { sessionConnectors } from '../../domain/connectors/index.js';
import { startCredentialProxy, type ProxyDecision, type RunningProxy } from '../../proxy/index.js';
import { RemoteConnectors } from '../../agent/connectors.js';
import { logSink, tempDir, type LogSink, type TestApp } from './app.js';

export interface ConnectorRig {
  proxy: RunningProxy;
  socketPath: string;
  placeholder: string;
  agent: RemoteConnectors;
  env: Record<string, string>;
  calls: ConnectorCallAudit[];
  decisions: ProxyDecision[];
  logs: LogSink;
  log: Logger;
  close(): Promise<void>;
}

/** A session of `userId` (its connectors as the overlay would pick them at start). */
export async function startConnectorRig(
  t: { teardown(fn: () => unknown): void },
  app: TestApp,
  userId: number,
  opts: {
    approve?: ConnectorApprover;
    tokens?: ConnectorTokens;
    sessionId?: string;
    turn?: () => TurnRequest | undefined;
  } = {},
): Promise<ConnectorRig> {
  const sessionId = opts.sessionId ?? `sess-conn-${randomToken(6)}`;
  const dir = tempDir(t, 'airlock-conn-');
  const socketPath = join(dir, 'egress.sock');
  const logs = logSink();
  const log = createLogger({ level: 'debug', destination: logs.stream });
  const calls: ConnectorCallAudit[] = [];
  const { atRestEncryptor } = await import('../../core/index.js');
  const enc = atRestEncryptor(app.config);
  const connectors = new ConnectorGateway({
    db: app.database.sql,
    enc,
    log,
    tokens: opts.tokens,
    approve: opts.approve,
    onCall: (a) => calls.push(a),
  });
  const gateway = new EgressGatewayService({ log, connectors });
  const conns = await sessionConnectors(app.database.sql, enc, userId);
  const routes = conns.map((c) => connectorRoute(c.id, c.url));
  const placeholder = randomToken(24);
  const handle = await gateway.open(sessionId, socketPath, {
    userId,
    routes,
    tokens: { [CONNECTORS_PLACEHOLDER_ENV]: placeholder },
    ...(opts.turn ? { turn: opts.turn, currentTurn: () => opts.turn?.()?.turnId ?? null } : {}),
  });
  const decisions: ProxyDecision[] = [];
  const proxy = await startCredentialProxy({
    profile: buildProfile(sessionId, 0, routes),
    getPlaceholder: (n) => (n === CONNECTORS_PLACEHOLDER_ENV ? placeholder : undefined),
    egressSocket: socketPath,
    log: () => undefined,
    onDecision: (d) => decisions.push(d),
  });
  const env: Record<string, string> = { [CONNECTORS_PLACEHOLDER_ENV]: placeholder };
  for (const c of conns) env[connectorBaseUrlEnv(c.id)] = `http://127.0.0.1:${proxy.port}/connectors/${c.id}`;
  const agent = RemoteConnectors.fromEnv(env, log) ?? new RemoteConnectors([], placeholder, log);
  let closed = false;
  const rig: ConnectorRig = {
    proxy,
    socketPath,
    placeholder,
    agent,
    env,
    calls,
    decisions,
    logs,
    log,
    async close() {
      if (closed) return;
      closed = true;
      await agent.close();
      await proxy.close();
      await handle.close();
    },
  };
  t.teardown(() => rig.close());
  return rig;
}
