import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo, Socket } from 'node:net';
import { CALL_ID_HEADER, type MailPolicy, type MailSummary, type ProxyDecisionRecord, type SessionProfile } from '../core/sandbox-protocol.js';
import { admit, compileRoutes, MAX_HEADER_BYTES, tokenEnvOf } from './admit.js';
import { errorResponse, ProxyRefusal } from './errors.js';
import { forward, ms, type DecisionInfo, type ForwardContext } from './forward.js';
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
  /** Every request's outcome, for the daemon's metrics and audit trail (the supervisor relays it). */
  onDecision?: (d: ProxyDecision) => void;
  /**
   * The send policy applied to every request on the `mail` route (core/mail-policy.ts). Unset:
   * sends are not parsed (a proxy without a daemon behind it, older daemons).
   */
  mailPolicy?: MailPolicy;
  /**
   * Hold a send the policy did not refuse until the daemon decides (the per-hour limit; for
   * `ask`, the user in the chat). Unset: `allow` goes through and `ask` is refused.
   */
  holdMail?: (h: MailHoldRequest) => Promise<MailRelease>;
  /** The turn now running (the supervisor's), recorded with every request. */
  currentTurn?: () => string | null;
}

/** A send the proxy holds: its reading of the message and the tool call that sent it. */
export interface MailHoldRequest {
  verdict: 'allow' | 'ask';
  /** The recipients an `ask` is about (outside the allowed domains). */
  ask: string[];
  summary: MailSummary;
  call_id: string | null;
  turn_id: string | null;
}
export type MailRelease = { allow: true } | { allow: false; code: MailRefusalCode; message: string };
export type MailRefusalCode = 'ERR_MAIL_DENIED' | 'ERR_MAIL_APPROVAL_TIMEOUT' | 'ERR_MAIL_APPROVAL_UNAVAILABLE' | 'ERR_MAIL_RATE_LIMITED' | 'ERR_MAIL_BLOCKED';

/** The request header a tool sets to name its call (`<call id>`); read for the audit trail, never forwarded. */
export const TRACE_HEADER = CALL_ID_HEADER;
const CALL_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The mail reader (libmime, iconv-lite's tables, nodemailer's address parser) loads on the first
 * mail send, not with the supervisor: it is half of the supervisor's bundle, and a session start
 * should not pay for it (docs/runtime.md, "Cold start, step by step").
 */
let mailPolicyModule: Promise<typeof import('../core/mail-policy.js')> | undefined;
const loadMailPolicy = (): Promise<typeof import('../core/mail-policy.js')> => (mailPolicyModule ??= import('../core/mail-policy.js'));

/** One request's outcome: forwarded (any upstream status), refused by the proxy, or the upstream failed. */
export type ProxyDecision = ProxyDecisionRecord;

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
  // `base` holds the audit fields of a request (method, template, call, recipients) as admission learns them.
  const decideFor = (base: Record<string, unknown> | undefined): ForwardContext['decide'] => (route, outcome, status, code, dropped, info?: DecisionInfo) => {
    if (outcome === 'forwarded') forwarded++;
    else refused++;
    if (dropped) droppedHeaders += dropped;
    try {
      const b = base ?? {};
      opts.onDecision?.({
        route: typeof route === 'string' ? route : null,
        outcome,
        status,
        ...(code ? { code } : {}),
        ...(typeof b.method === 'string' ? { method: b.method.slice(0, 16) } : {}),
        ...(typeof b.template === 'string' ? { template: b.template } : {}),
        turn_id: opts.currentTurn?.() ?? null,
        call_id: typeof b.call_id === 'string' ? b.call_id : null,
        ...(typeof b.recipients === 'number' ? { recipients: b.recipients } : {}),
        ...(info ?? {}),
        ...(dropped ? { dropped_headers: dropped } : {}),
      });
    } catch {
      // A metrics sink never breaks a request.
    }
  };
  const decide = decideFor(undefined);
  // The tunnel pool is larger than the session's slot count, so a slot never waits for a socket.
  const agent = tunnelAgent(opts.egressSocket, Math.min(timeoutMs, 15_000), Math.max(limits.maxConcurrent, MAX_UPSTREAM_CONCURRENT) * 2, opts.tlsCa);
  const fctx = (base: Record<string, unknown>): ForwardContext => ({ agent, timeoutMs, log, decide: decideFor(base) });

  // Connections that got a refusal: nothing more is read from them, even requests the
  // parser already took off a pipeline (they would otherwise still be dispatched).
  const tainted = new WeakSet<object>();
  const refuse = (res: ServerResponse | Socket, err: ProxyRefusal, data: Record<string, unknown>) => {
    decideFor(data)(typeof data.route === 'string' ? data.route : null, 'refused', err.status, err.code, undefined, typeof data.ms === 'number' ? { ms: data.ms } : undefined);
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
    const call = req.headers[TRACE_HEADER];
    if (typeof call === 'string' && CALL_ID.test(call)) base.call_id = call;
    let release: (() => void) | undefined;
    try {
      const a = admit(req, routes, opts, base);
      if (String(req.headers.expect ?? '').toLowerCase() === '100-continue') res.writeContinue();
      const body = await limits.readBody(req, a.declaredLength, startedMs);
      if (a.compiled.route.name === 'mail' && opts.mailPolicy) await checkMail(body, base);
      const gone = new AbortController();
      const onClose = () => gone.abort();
      res.once('close', onClose);
      release = await limits.acquire(gone.signal);
      res.off('close', onClose);
      if (res.destroyed) throw new ProxyRefusal('ERR_PROXY_BUSY', 'client went away while waiting');
      const free = release;
      release = undefined;
      forward(fctx(base), req, res, a, body, started, base, free);
    } catch (err) {
      release?.();
      if (err instanceof ProxyRefusal) return refuse(res, err, { ...base, ms: ms(started) });
      log('error', 'proxy failed', { ...base, err: (err as Error).message });
      errorResponse(res, 'ERR_PROXY_UPSTREAM', 'internal proxy error');
    }
  }

  /**
   * The send policy on a mail send's message (docs/proxy.md#send-policy): a message it cannot
   * read or refuses never goes upstream; one it lets through may still be held for the daemon.
   */
  async function checkMail(body: Buffer, base: Record<string, unknown>): Promise<void> {
    const { judge, MailParseError, rawMessage, summarise } = await loadMailPolicy();
    let summary: MailSummary;
    try {
      summary = summarise(rawMessage(body));
    } catch (err) {
      if (err instanceof MailParseError) throw new ProxyRefusal(err.code, err.message);
      throw err;
    }
    base.recipients = summary.to + summary.cc + summary.bcc;
    const v = judge(opts.mailPolicy!, summary);
    if (v.verdict === 'block') throw new ProxyRefusal('ERR_MAIL_BLOCKED', v.reason);
    if (!opts.holdMail) {
      if (v.verdict === 'ask') throw new ProxyRefusal('ERR_MAIL_APPROVAL_UNAVAILABLE', 'this send needs the user\'s approval and nobody can be asked');
      return;
    }
    const release = await opts.holdMail({ verdict: v.verdict, ask: v.ask, summary, call_id: typeof base.call_id === 'string' ? base.call_id : null, turn_id: opts.currentTurn?.() ?? null });
    if (!release.allow) throw new ProxyRefusal(release.code, release.message);
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
