import { connect } from 'node:net';
import { join } from 'node:path';
import { createLogger, type Logger } from '../../core/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import type { EgressHandle } from '../../core/index.js';
import { buildProfile, buildRoutes, ROUTE_ENV } from '../../daemon/host/overlay.js';
import { start as startUpstream, type FakeUpstream } from '../../emulator/fake-upstream.js';
import { startCredentialProxy, type ProxyDecision, type RunningProxy } from '../../proxy/index.js';
import { logSink, tempDir, type LogSink } from './app.js';

export interface ProxyRig {
  upstream: FakeUpstream;
  proxy: RunningProxy;
  base: string;
  socketPath: string;
  /** Real tokens by env name, as the gateway got them at open (rotate with `gateway.setTokens`). */
  tokens: Record<string, string>;
  /** The session's egress gateway (the second wall: it holds the tokens). */
  gateway: EgressHandle;
  placeholders: Record<string, string>;
  logs: LogSink;
  proxyLogs: string[];
  /** Every onDecision the proxy made, in order. */
  decisions: ProxyDecision[];
  log: Logger;
}

export const REAL_ACCESS = 'ya29.REAL-access-token-0123456789abcdefABCDEF';
export const REAL_MODEL_KEY = 'sk-REAL-model-key-0123456789abcdef';

/** Fake upstream + egress gateway (holding the real tokens) on a temp unix socket + proxy on 127.0.0.1:0, torn down with t. */
export async function startProxyRig(
  t: { teardown(fn: () => unknown): void },
  opts: { provider?: 'openai' | 'anthropic' } = {},
): Promise<ProxyRig> {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const dir = tempDir(t, 'airlock-proxy-');
  const socketPath = join(dir, 'egress.sock');
  const logs = logSink();
  const log = createLogger({ level: 'debug', destination: logs.stream });
  // The fake upstream echoes the credential it saw when asked by this header (scrubber tests).
  const gateway = new EgressGatewayService({ log, extraRequestHeaders: ['x-test-echo'] });
  const provider = opts.provider ?? 'openai';
  const routes = buildRoutes({
    google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
    model: { provider, baseUrl: provider === 'openai' ? `${upstream.url}/v1` : upstream.url },
    hasAccountToken: true,
    hasModelKey: true,
  });
  const tokens: Record<string, string> = {
    MAIL_ACCESS_TOKEN: REAL_ACCESS,
    SHEETS_ACCESS_TOKEN: REAL_ACCESS,
    SEARCH_ACCESS_TOKEN: REAL_ACCESS,
    MODEL_API_KEY_REAL: REAL_MODEL_KEY,
  };
  const handle = await gateway.open('sess-test-1', socketPath, { userId: 1, routes, tokens });
  t.teardown(() => handle.close());
  const placeholders: Record<string, string> = {};
  for (const r of routes)
    placeholders[r.placeholder_env] = `ph-${r.name}-` + Math.random().toString(36).slice(2) + Date.now().toString(36);
  const proxyLogs: string[] = [];
  const decisions: ProxyDecision[] = [];
  const proxy = await startCredentialProxy({
    profile: buildProfile('sess-test-1', 0, routes),
    getPlaceholder: (n) => placeholders[n],
    egressSocket: socketPath,
    extraRequestHeaders: ['x-test-echo'],
    log: (level, msg, data) => proxyLogs.push(JSON.stringify({ level, msg, ...data })),
    onDecision: (d) => decisions.push(d),
  });
  t.teardown(() => proxy.close());
  return {
    upstream,
    proxy,
    base: `http://127.0.0.1:${proxy.port}`,
    socketPath,
    tokens,
    gateway: handle,
    placeholders,
    logs,
    proxyLogs,
    decisions,
    log,
  };
}

export { ROUTE_ENV };

/** Write raw bytes to host:port and collect the answer until the peer closes (or timeout). */
export function rawRequest(
  port: number,
  data: string | Buffer,
  timeoutMs = 2000,
): Promise<{ status: number; text: string }> {
  return rawExchange({ port, host: '127.0.0.1' }, data, timeoutMs);
}

export function rawExchange(
  target: { port: number; host: string } | { path: string },
  data: string | Buffer,
  timeoutMs = 2000,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const sock = 'path' in target ? connect(target.path) : connect(target.port, target.host);
    const chunks: Buffer[] = [];
    const done = () => {
      clearTimeout(timer);
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, text });
    };
    const timer = setTimeout(done, timeoutMs);
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('error', done);
    sock.on('close', done);
    sock.on('connect', () => sock.write(data));
  });
}

/** The outcome part of a decision (what /metrics counts), without its audit fields (bytes, time, template…). */
export function outcomeOf(
  d: ProxyDecision,
): Pick<ProxyDecision, 'route' | 'outcome' | 'status' | 'code' | 'dropped_headers'> {
  return {
    route: d.route,
    outcome: d.outcome,
    status: d.status,
    ...(d.code ? { code: d.code } : {}),
    ...(d.dropped_headers ? { dropped_headers: d.dropped_headers } : {}),
  };
}
