import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  CALL_ID_HEADER,
  type MailPolicy,
  type ProxyDecisionRecord,
  type SessionProfile,
} from '../core/sandbox-protocol.js';
import { admit, compileRoutes, MAX_HEADER_BYTES } from './admit.js';
import { errorResponse, ProxyRefusal } from '../core/egress/errors.js';
import { judgeMail } from '../core/egress/mail.js';
import { forward, ms, type DecisionInfo, type ForwardContext } from './forward.js';
import { HEADERS_TIMEOUT_MS, MAX_UPSTREAM_CONCURRENT, SessionLimits, type LimitOptions } from './limits.js';

export { MAX_HEADER_BYTES, MAX_HEADER_COUNT, tokenEnvOf } from './admit.js';
export { MAX_BODY_BYTES } from './limits.js';
export const UPSTREAM_TIMEOUT_MS = 120_000;

export interface ProxyOptions {
  profile: SessionProfile;
  /** Resolve a placeholder env name (e.g. 'MAIL_API_KEY') to this session's placeholder value. */
  getPlaceholder(envName: string): string | undefined;
  /**
   * Unix socket of the daemon's egress gateway: admitted requests go there as plain HTTP naming
   * the proxy path; the gateway admits them again, injects the real token and does TLS.
   */
  egressSocket: string;
  host?: string;
  port?: number;
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
   * The send policy the proxy reads every `mail` send against (core/mail-policy.ts), its first
   * wall: a message it cannot read or one the policy blocks never leaves the sandbox. Everything
   * else goes on to the egress gateway, which reads the same bytes again and decides on the host
   * (the per-hour limit, approval). Unset: sends are not parsed here.
   */
  mailPolicy?: MailPolicy;
  /** The turn now running (the supervisor's), recorded with every request. */
  currentTurn?: () => string | null;
}

/** The request header a tool sets to name its call (`<call id>`); read for the audit trail, never forwarded. */
export const TRACE_HEADER = CALL_ID_HEADER;
const CALL_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The mail reader (libmime, iconv-lite's tables, nodemailer's address parser) loads on the first
 * mail send, not with the supervisor: it is half of the supervisor's bundle, and a session start
 * should not pay for it (docs/runtime.md, "Cold start, step by step").
 */
let mailPolicyModule: Promise<typeof import('../core/mail-policy.js')> | undefined;
const loadMailPolicy = (): Promise<typeof import('../core/mail-policy.js')> =>
  (mailPolicyModule ??= import('../core/mail-policy.js'));

/** One request's outcome: forwarded (any upstream status), refused by the proxy, or the upstream failed. */
export type ProxyDecision = ProxyDecisionRecord;

export interface RunningProxy {
  port: number;
  /** Requests forwarded and refused, and request headers dropped, since start (for health, metrics and tests). */
  stats(): { forwarded: number; refused: number; droppedHeaders: number };
  close(): Promise<void>;
}

/**
 * The send policy on a mail send's message (docs/proxy.md#send-policy), first wall: a message
 * whose header block it cannot read or the policy blocks never leaves the sandbox; the rest is
 * decided on the host, which reads the whole message (its parts, its attachments) again.
 */
async function checkMail(policy: MailPolicy, body: Buffer, base: Record<string, unknown>): Promise<void> {
  judgeMail(await loadMailPolicy(), body, policy, base, { headOnly: true });
}

/**
 * Start the in-sandbox proxy (the first wall). It holds no token: the daemon's egress gateway
 * injects them. Fails (ERR_PROXY_PROFILE) on a route table it cannot use. See docs/proxy.md.
 *
 * Each request goes through two steps: `admit` (proxy/admit.ts) decides from the headers
 * alone whether it may go upstream at all; then the body is read in full under the session's
 * limits (proxy/limits.ts), an upstream slot is taken, and `forward` (proxy/forward.ts) makes
 * the upstream exchange. Nothing reaches the egress socket before admission and the body are done.
 */
export async function startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy> {
  const routes = compileRoutes(opts.profile, opts.extraRequestHeaders);
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS;
  const limits = new SessionLimits(opts.limits);
  const counts: ProxyCounts = { forwarded: 0, refused: 0, droppedHeaders: 0 };
  const decideFor = decisionRecorder(opts, counts);
  const decide = decideFor(undefined);
  // Keep-alive connections to the egress socket; the pool is larger than the session's slot count,
  // so a slot never waits for a socket.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: Math.max(limits.maxConcurrent, MAX_UPSTREAM_CONCURRENT) * 2,
    maxFreeSockets: 8,
    timeout: TUNNEL_IDLE_MS,
  });
  const fctx = (base: Record<string, unknown>): ForwardContext => ({
    agent,
    egressSocket: opts.egressSocket,
    timeoutMs,
    log,
    decide: decideFor(base),
  });

  // Connections that got a refusal: nothing more is read from them, even requests the
  // parser already took off a pipeline (they would otherwise still be dispatched).
  const tainted = new WeakSet<object>();
  const refuse: Refuse = (res, err, data) => {
    decideFor(data)(
      typeof data.route === 'string' ? data.route : null,
      'refused',
      err.status,
      err.code,
      undefined,
      typeof data.ms === 'number' ? { ms: data.ms } : undefined,
    );
    const sock = 'writeHead' in res ? (res as ServerResponse).socket : res;
    if (sock) {
      tainted.add(sock);
      if ('writeHead' in res) (res as ServerResponse).once('finish', () => sock.destroy());
    }
    log(err.status >= 500 ? 'error' : 'warn', 'proxy refused', {
      ...data,
      status: err.status,
      code: err.code,
      reason: err.message,
    });
    errorResponse(res, err.code, err.message);
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (tainted.has(req.socket)) {
      // Logged: a send pipelined or smuggled behind a refusal is worth seeing in the audit trail.
      log('warn', 'proxy dropped a request behind a refusal', { method: req.method });
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
      if (a.compiled.route.name === 'mail' && opts.mailPolicy) await checkMail(opts.mailPolicy, body, base);
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

  const server = proxyServer(handler, timeoutMs);
  refuseNonRequests(server, decide, refuse, log);
  await listen(server, opts);
  log('info', 'proxy listening', {
    port: (server.address() as AddressInfo).port,
    routes: routes.map((r) => r.route.name),
  });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    stats: () => ({ ...counts }),
    close: () =>
      (closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      })),
  };
}

/** Requests forwarded and refused, and request headers dropped, since start. */
interface ProxyCounts {
  forwarded: number;
  refused: number;
  droppedHeaders: number;
}

type ProxyLog = NonNullable<ProxyOptions['log']>;
type Refuse = (res: ServerResponse | Socket, err: ProxyRefusal, data: Record<string, unknown>) => void;

/**
 * The `decide` of a request: counts the outcome and hands the decision record to `onDecision`.
 * `base` holds the audit fields of a request (method, template, call, recipients) as admission learns them.
 */
function decisionRecorder(
  opts: ProxyOptions,
  counts: ProxyCounts,
): (base: Record<string, unknown> | undefined) => ForwardContext['decide'] {
  return (base) => (route, outcome, status, code, dropped, info?: DecisionInfo) => {
    if (outcome === 'forwarded') counts.forwarded++;
    else counts.refused++;
    if (dropped) counts.droppedHeaders += dropped;
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
}

/** The proxy's HTTP server: strict parser, header count and time limits, `handler` for requests and 100-continue. */
function proxyServer(handler: (req: IncomingMessage, res: ServerResponse) => void, timeoutMs: number): Server {
  const server: Server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      insecureHTTPParser: false,
      requireHostHeader: false /* checked in admit, so the refusal is coded */,
      joinDuplicateHeaders: false,
    },
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
  return server;
}

/** What never reaches a route: parser-level errors, CONNECT and protocol upgrades. */
function refuseNonRequests(server: Server, decide: ForwardContext['decide'], refuse: Refuse, log: ProxyLog): void {
  // Parser-level refusals: CL+TE conflicts, bad chunking, oversize headers, bad syntax.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    decide(null, 'refused', 400, 'ERR_PROXY_BAD_REQUEST');
    log('warn', 'proxy refused', { status: 400, code: 'ERR_PROXY_BAD_REQUEST', reason: err.code ?? 'parse error' });
    errorResponse(
      socket,
      'ERR_PROXY_BAD_REQUEST',
      err.code === 'HPE_HEADER_OVERFLOW' ? 'headers too large' : 'malformed request',
    );
  });
  // CONNECT and Upgrade never reach a route.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    refuse(socket, new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'CONNECT is not allowed'), { method: req.method });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    refuse(socket, new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'protocol upgrade is not allowed'), {
      method: req.method,
    });
  });
}

function listen(server: Server, opts: ProxyOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Idle connections to the egress socket are kept this long for reuse. */
export const TUNNEL_IDLE_MS = 4_000;
