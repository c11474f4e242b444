import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo, Socket } from 'node:net';
import type { SessionProfile } from '../core/sandbox-protocol.js';
import { admit, compileRoutes, MAX_HEADER_BYTES, tokenEnvOf } from './admit.js';
import { errorResponse, ProxyRefusal } from './errors.js';
import { forward, ms, type ForwardContext } from './forward.js';
import { HEADERS_TIMEOUT_MS, MAX_UPSTREAM_CONCURRENT, SessionLimits, type LimitOptions } from './limits.js';
import { openTunnel } from './tunnel.js';

export { MAX_HEADER_BYTES, MAX_HEADER_COUNT, tokenEnvOf } from './admit.js';
export { MAX_BODY_BYTES } from './limits.js';
export const UPSTREAM_TIMEOUT_MS = 120_000;

export interface ProxyOptions {
  profile: SessionProfile;
  /** Resolve a token reference's env name (e.g. 'MAIL_ACCESS_TOKEN') to its current value; read per request so rotation applies. */
  getToken(envName: string): string | undefined;
  /** Resolve a placeholder env name (e.g. 'MAIL_API_KEY') to this session's placeholder value. */
  getPlaceholder(envName: string): string | undefined;
  /** Unix socket of the daemon's egress gateway (HTTP CONNECT). */
  egressSocket: string;
  host?: string;
  port?: number;
  /** Extra CA certificates (PEM) trusted for https upstreams (tests, private upstreams). */
  tlsCa?: string | Buffer;
  /** Upstream timeout (connect + whole response); default 120 s. */
  upstreamTimeoutMs?: number;
  /** Per-session limits (concurrent upstream requests, body deadline, memory); defaults in proxy/limits.ts. */
  limits?: LimitOptions;
  /** Request headers forwarded on every route beyond the built-in allow-lists (tests, private upstreams). */
  extraRequestHeaders?: readonly string[];
  /** Structured log sink (no tokens, bodies or query values are ever passed). */
  log?: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
  /** Every request's outcome, for the daemon's metrics (the supervisor relays it). */
  onDecision?: (d: ProxyDecision) => void;
}

/** One request's outcome: forwarded (any upstream status), refused by the proxy, or the upstream failed. */
export interface ProxyDecision {
  /** The route's name; null when no route matched (or the request never got that far). */
  route: string | null;
  outcome: 'forwarded' | 'refused' | 'upstream_error';
  status: number;
  code?: string;
  /** Request headers dropped because they are not on the route's allow-list (present when > 0). */
  dropped_headers?: number;
}

export interface RunningProxy {
  port: number;
  /** Requests forwarded and refused, and request headers dropped, since start (for health, metrics and tests). */
  stats(): { forwarded: number; refused: number; droppedHeaders: number };
  close(): Promise<void>;
}

/**
 * Start the credential-injection reverse proxy. Fails (ERR_PROXY_TOKEN_MISSING) when a
 * route names a token that is not set. See docs/proxy.md for the security model.
 *
 * Each request goes through two steps: `admit` (proxy/admit.ts) decides from the headers
 * alone whether it may go upstream at all; then the body is read in full under the session's
 * limits (proxy/limits.ts), an upstream slot is taken, and `forward` (proxy/forward.ts) makes
 * the upstream exchange. Nothing reaches the egress socket before admission and the body are done.
 */
export async function startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy> {
  const routes = compileRoutes(opts.profile, opts.getToken, opts.extraRequestHeaders);
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS;
  const limits = new SessionLimits(opts.limits);
  let forwarded = 0;
  let refused = 0;
  let droppedHeaders = 0;
  const decide: ForwardContext['decide'] = (route, outcome, status, code, dropped) => {
    if (outcome === 'forwarded') forwarded++;
    else refused++;
    if (dropped) droppedHeaders += dropped;
    try {
      opts.onDecision?.({ route: typeof route === 'string' ? route : null, outcome, status, ...(code ? { code } : {}), ...(dropped ? { dropped_headers: dropped } : {}) });
    } catch {
      // A metrics sink never breaks a request.
    }
  };
  // The tunnel pool is larger than the session's slot count, so a slot never waits for a socket.
  const agent = tunnelAgent(opts.egressSocket, Math.min(timeoutMs, 15_000), Math.max(limits.maxConcurrent, MAX_UPSTREAM_CONCURRENT) * 2, opts.tlsCa);
  const fctx: ForwardContext = { agent, timeoutMs, log, decide };

  // Connections that got a refusal: nothing more is read from them, even requests the
  // parser already took off a pipeline (they would otherwise still be dispatched).
  const tainted = new WeakSet<object>();
  const refuse = (res: ServerResponse | Socket, err: ProxyRefusal, data: Record<string, unknown>) => {
    decide(typeof data.route === 'string' ? data.route : null, 'refused', err.status, err.code);
    const sock = 'writeHead' in res ? (res as ServerResponse).socket : res;
    if (sock) {
      tainted.add(sock);
      if ('writeHead' in res) (res as ServerResponse).once('finish', () => sock.destroy());
    }
    log(err.status >= 500 ? 'error' : 'warn', 'proxy refused', { ...data, status: err.status, code: err.code, reason: err.message });
    errorResponse(res, err.code, err.message);
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (tainted.has(req.socket)) {
      res.destroy();
      return;
    }
    void handle(req, res);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint();
    const startedMs = Date.now();
    const base: Record<string, unknown> = { method: req.method };
    let release: (() => void) | undefined;
    try {
      const a = admit(req, routes, opts, base);
      if (String(req.headers.expect ?? '').toLowerCase() === '100-continue') res.writeContinue();
      const body = await limits.readBody(req, a.declaredLength, startedMs);
      const gone = new AbortController();
      const onClose = () => gone.abort();
      res.once('close', onClose);
      release = await limits.acquire(gone.signal);
      res.off('close', onClose);
      if (res.destroyed) throw new ProxyRefusal('ERR_PROXY_BUSY', 'client went away while waiting');
      const free = release;
      release = undefined;
      forward(fctx, req, res, a, body, started, base, free);
    } catch (err) {
      release?.();
      if (err instanceof ProxyRefusal) return refuse(res, err, { ...base, ms: ms(started) });
      log('error', 'proxy failed', { ...base, err: (err as Error).message });
      errorResponse(res, 'ERR_PROXY_UPSTREAM', 'internal proxy error');
    }
  }

  const server: Server = createServer(
    { maxHeaderSize: MAX_HEADER_BYTES, insecureHTTPParser: false, requireHostHeader: false /* checked in admit, so the refusal is coded */, joinDuplicateHeaders: false },
    handler,
  );
  // Expect: 100-continue goes through the same checks; "continue" is sent only once the
  // request is allowed (Node would otherwise say 100 before any check ran).
  server.on('checkContinue', handler);
  server.maxHeadersCount = 0; // count enforced in admit (the default would truncate silently)
  // Header time: the whole header block within HEADERS_TIMEOUT_MS (node answers 408 itself).
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = timeoutMs;
  server.keepAliveTimeout = 5_000;

  // Parser-level refusals: CL+TE conflicts, bad chunking, oversize headers, bad syntax.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    decide(null, 'refused', 400, 'ERR_PROXY_BAD_REQUEST');
    log('warn', 'proxy refused', { status: 400, code: 'ERR_PROXY_BAD_REQUEST', reason: err.code ?? 'parse error' });
    errorResponse(socket, 'ERR_PROXY_BAD_REQUEST', err.code === 'HPE_HEADER_OVERFLOW' ? 'headers too large' : 'malformed request');
  });
  // CONNECT and Upgrade never reach a route.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    refuse(socket, new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'CONNECT is not allowed'), { method: req.method });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    refuse(socket, new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'protocol upgrade is not allowed'), { method: req.method });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  log('info', 'proxy listening', { port: (server.address() as AddressInfo).port, routes: routes.map((r) => r.route.name) });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    stats: () => ({ forwarded, refused, droppedHeaders }),
    close: () =>
      (closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      })),
  };
}

/** Idle upstream tunnels are kept this long for reuse (below common upstream keep-alive limits). */
export const TUNNEL_IDLE_MS = 4_000;

/**
 * An http.Agent whose connections are CONNECT tunnels through the egress socket (TLS on top
 * for https upstreams), kept alive and reused per upstream host:port.
 */
function tunnelAgent(egressSocket: string, connectTimeoutMs: number, maxSockets: number, ca?: string | Buffer): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: 8, timeout: TUNNEL_IDLE_MS });
  (agent as unknown as { createConnection: unknown }).createConnection = (
    o: { host: string; port: number | string; tls?: boolean },
    cb: (err: Error | null, s?: Duplex) => void,
  ) => {
    openTunnel({ egressSocket, host: o.host, port: Number(o.port), tls: !!o.tls, timeoutMs: connectTimeoutMs, ca }).then(
      (s) => cb(null, s),
      (err: Error) => cb(err),
    );
    return undefined;
  };
  // TLS and plain tunnels to the same host:port must never share a pool entry.
  const getName = agent.getName.bind(agent);
  agent.getName = (o) => `${getName(o)}:${(o as { tls?: boolean }).tls ? 'tls' : 'plain'}`;
  return agent;
}
