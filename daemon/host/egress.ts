/**
 * The daemon's egress gateway: the second wall, on the host (docs/proxy.md#egress-gateway).
 *
 * One unix socket per session (mode 0600, root only in the container). The in-sandbox proxy sends
 * what it admitted as plain HTTP naming the proxy path (`POST /gmail/mail/v1/users/me/messages/send`);
 * the gateway admits it again on its own, against the route table the daemon made for the session
 * (framing, canonical target, route, method + path allow-list, query on GET only), reads the body
 * in full, decides mail sends on the exact bytes it forwards (send policy, per-hour limit,
 * approval), injects the real credential it holds, opens the upstream connection (verified TLS for
 * https) and scrubs the token out of the answer. CONNECT, Upgrade, absolute-form targets and
 * anything off the table are refused. No real token ever crosses into the sandbox.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { EgressGateway, EgressHandle, EgressSession, Logger, Metrics } from '../../core/index.js';
import { CALL_ID_HEADER } from '../../core/sandbox-protocol.js';
import {
  allowedEntry,
  compileRouteTable,
  findRoute,
  upstreamPathOf,
  type CompiledRoute,
} from '../../core/egress/routes.js';
import { checkHeaders, hasBody, MAX_BODY_BYTES, MAX_HEADER_BYTES } from '../../core/egress/framing.js';
import { errorResponse, ProxyRefusal, type ProxyErrorCode } from '../../core/egress/errors.js';
import { upstreamHeaders } from '../../core/egress/headers.js';
import { parseTarget } from '../../core/egress/normalise.js';
import { judgeMail } from '../../core/egress/mail.js';
import { exchange, UpstreamAgents } from './egress-upstream.js';
import { mailPreview } from '../../domain/mail/index.js';
import type { ConnectorGateway } from './connector-gateway.js';
import { CONNECTORS_PLACEHOLDER_ENV } from '../../core/sandbox-env.js';
import { safeEqual } from '../../core/secret.js';

/** Route names of connectors start with this (core/sandbox-env.ts connectorRouteName). */
const CONNECTOR_ROUTE = 'connector:';
import { ConnectionGate, DEFAULT_EGRESS_CAPS, type EgressConnectionCaps } from './egress-conns.js';

const BODY_TIMEOUT_MS = 30_000;
/** Upstream timeout (connect + whole answer), as the proxy's. */
export const UPSTREAM_TIMEOUT_MS = 120_000;
const CALL_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
/**
 * The gateway's own bounds, beside the proxy's (a compromised supervisor skips the proxy's): the
 * requests one session may have in the gateway at once, the request bytes one session may hold,
 * and the request bytes all sessions together may hold. Past any of them: 503 ERR_PROXY_BUSY at
 * once (the proxy already queues a session's requests; the gateway does not wait).
 */
export const GATEWAY_MAX_IN_FLIGHT = 16;
export const GATEWAY_MAX_SESSION_BYTES = 64 * 1024 * 1024;
export const GATEWAY_MAX_TOTAL_BYTES = 512 * 1024 * 1024;
const RELEASE_CODES: readonly ProxyErrorCode[] = [
  'ERR_MAIL_DENIED',
  'ERR_MAIL_APPROVAL_TIMEOUT',
  'ERR_MAIL_APPROVAL_UNAVAILABLE',
  'ERR_MAIL_RATE_LIMITED',
  'ERR_MAIL_BLOCKED',
  'ERR_MAIL_CALL_UNBOUND',
  'ERR_MAIL_CALL_REUSED',
  'ERR_MAIL_PREVIEW_INCOMPLETE',
];

/** `https://sheets.googleapis.com/x` → `sheets.googleapis.com:443` (where a route's upstream is). */
export function egressTarget(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.hostname.toLowerCase()}:${port}`;
}

export interface EgressGatewayOptions {
  log: Logger;
  metrics?: Metrics;
  /** Extra CA certificates (PEM) trusted for https upstreams (tests, private upstreams). */
  tlsCa?: string | Buffer;
  /** Request headers forwarded on every route beyond the built-in allow-lists (tests: the fake upstream's `x-test-echo`). */
  extraRequestHeaders?: readonly string[];
  upstreamTimeoutMs?: number;
  /** Connector routes (`connector:<id>`): the gateway is the MCP server the agent talks to (daemon/host/connector-gateway.ts). Absent: refused. */
  connectors?: ConnectorGateway;
  /** Connection bounds of the egress sockets (daemon/host/egress-conns.ts); defaults DEFAULT_EGRESS_CAPS. */
  caps?: Partial<EgressConnectionCaps>;
}

/** The walls' own refusals keep their codes; the proxy's codes for the same checks become the gateway's. */
function gatewayRefusal(err: ProxyRefusal): ProxyRefusal {
  if (err.code === 'ERR_PROXY_ROUTE_DENIED') return new ProxyRefusal('ERR_EGRESS_DENIED', err.message);
  if (err.code === 'ERR_PROXY_BAD_REQUEST') return new ProxyRefusal('ERR_EGRESS_BAD_REQUEST', err.message);
  return err;
}

/** One session's state in the gateway: its route table, its real tokens, its upstream connections. */
interface SessionState {
  id: string;
  spec: EgressSession;
  routes: CompiledRoute[];
  tokens: Map<string, string>;
  agents: UpstreamAgents;
  log: Logger;
  /** Requests of this session in the gateway now, and the request bytes they hold. */
  inFlight: number;
  buffered: number;
}

/** Request bytes held by every session's requests (GATEWAY_MAX_TOTAL_BYTES). */
interface Budget {
  total: number;
}

/** What the gateway admitted: the route, the upstream path, the credential. */
interface Admitted {
  c: CompiledRoute;
  path: string;
  template: string;
  real: string | undefined;
}

export class EgressGatewayService implements EgressGateway {
  readonly #o: EgressGatewayOptions;
  readonly #handles = new Set<EgressHandle>();
  readonly #budget: Budget = { total: 0 };
  readonly #gate: ConnectionGate;

  constructor(opts: EgressGatewayOptions) {
    this.#o = opts;
    this.#gate = new ConnectionGate({ ...DEFAULT_EGRESS_CAPS, ...opts.caps }, opts.metrics);
  }

  /** Connections open on every session's egress socket now (bounded by the caps). */
  get openConnections(): number {
    return this.#gate.open;
  }

  async open(sessionId: string, socketPath: string, session: EgressSession): Promise<EgressHandle> {
    const log = this.#o.log.child({ sessionId, area: 'egress' });
    const st: SessionState = {
      id: sessionId,
      spec: session,
      routes: compileRouteTable(session.routes, this.#o.extraRequestHeaders),
      tokens: new Map(Object.entries(session.tokens)),
      agents: new UpstreamAgents(this.#o.tlsCa),
      log,
      inFlight: 0,
      buffered: 0,
    };
    const server = this.#server(st);
    mkdirSync(dirname(socketPath), { recursive: true });
    rmSync(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Root-only: the agent child (uid 1001) must not reach the outside even through here.
    chmodSync(socketPath, 0o600);
    log.info(
      {
        routes: st.routes.map((r) => r.route.name),
        upstreams: [...new Set(st.routes.map((r) => egressTarget(r.route.upstream)))],
      },
      'egress socket open',
    );
    let closing: Promise<void> | undefined;
    const h: EgressHandle = {
      setTokens: (tokens) => {
        for (const [k, v] of Object.entries(tokens)) if (v) st.tokens.set(k, v);
        log.info({ names: Object.keys(tokens) }, 'egress tokens replaced');
      },
      close: () =>
        (closing ??= new Promise<void>((resolve) => {
          this.#handles.delete(h);
          server.close(() => {
            rmSync(socketPath, { force: true });
            resolve();
          });
          server.closeAllConnections();
          st.agents.destroy();
          this.#o.connectors?.closeSession(sessionId);
        })),
    };
    this.#handles.add(h);
    return h;
  }

  /** Close every open session socket. */
  async close(): Promise<void> {
    await Promise.all([...this.#handles].map((h) => h.close()));
  }

  #server(st: SessionState): Server {
    const tainted = new WeakSet<object>();
    const refuse = (res: ServerResponse | Socket, err: ProxyRefusal, data: Record<string, unknown>) => {
      st.log.warn({ ...data, status: err.status, code: err.code, reason: err.message }, 'egress refused');
      this.#o.metrics?.proxyDecisions.inc({
        route: 'egress',
        outcome: err.status >= 500 ? 'upstream_error' : 'refused',
      });
      const sock = 'writeHead' in res ? res.socket : res;
      if (sock) tainted.add(sock);
      errorResponse(res, err.code, err.message);
    };
    // The idle bound is checked every second (Node's default, 30 s, would let an idle socket live
    // 40 s): a connection that sends no complete head in time gets 408 and is closed.
    const server = createServer(
      {
        maxHeaderSize: MAX_HEADER_BYTES,
        insecureHTTPParser: false,
        requireHostHeader: false,
        joinDuplicateHeaders: false,
        connectionsCheckingInterval: 1_000,
      },
      (req, res) => {
        if (tainted.has(req.socket)) return void res.destroy();
        void this.#handle(st, req, res, refuse);
      },
    );
    server.maxHeadersCount = 0;
    this.#gate.guard(server, st.log);
    server.headersTimeout = this.#gate.caps.headersTimeoutMs;
    server.requestTimeout = this.#o.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS;
    server.keepAliveTimeout = 5_000;
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      // An idle connection at the headers timeout: Node's own 408, and no log line each (a
      // sandbox hoarding idle sockets would otherwise write one per socket).
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
        return void socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
      refuse(socket, new ProxyRefusal('ERR_EGRESS_BAD_REQUEST', 'malformed request'), { parser: err.code });
    });
    // A tunnel would carry bytes the gateway cannot read: CONNECT and Upgrade are refused.
    server.on('connect', (req: IncomingMessage, socket: Socket) => {
      socket.on('error', () => socket.destroy());
      refuse(socket, new ProxyRefusal('ERR_EGRESS_DENIED', 'CONNECT is not allowed'), {
        method: 'CONNECT',
        target: String(req.url).slice(0, 200),
      });
    });
    server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      socket.on('error', () => socket.destroy());
      refuse(socket, new ProxyRefusal('ERR_EGRESS_DENIED', 'protocol upgrade is not allowed'), { method: req.method });
    });
    return server;
  }

  async #handle(
    st: SessionState,
    req: IncomingMessage,
    res: ServerResponse,
    refuse: (res: ServerResponse, err: ProxyRefusal, data: Record<string, unknown>) => void,
  ): Promise<void> {
    const started = process.hrtime.bigint();
    const data: Record<string, unknown> = { method: String(req.method).slice(0, 16) };
    const call = req.headers[CALL_ID_HEADER];
    const callId = typeof call === 'string' && CALL_ID.test(call) ? call : null;
    const held = { bytes: 0 };
    st.inFlight++;
    try {
      if (st.inFlight > GATEWAY_MAX_IN_FLIGHT)
        throw new ProxyRefusal('ERR_PROXY_BUSY', `at most ${GATEWAY_MAX_IN_FLIGHT} requests of one session at once`);
      const a = admitHere(st, req, data);
      const body = await readBody(req, (n) => this.#hold(st, held, n));
      if (a.c.route.name.startsWith(CONNECTOR_ROUTE)) return await this.#connector(st, req, res, a, body, callId, data);
      if (a.c.route.name === 'mail' && st.spec.mailPolicy) await this.#decideMail(st, body, callId, data);
      const { headers } = upstreamHeaders(req, a.c.route, a.c.headers, {
        host: a.c.upstream.host,
        bodyLength: body.length,
        real: a.real,
      });
      const r = await exchange(
        { agents: st.agents, timeoutMs: this.#o.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS },
        a.c,
        { method: req.method!, path: a.path, headers, body },
        a.real ?? '',
        res,
      );
      this.#o.metrics?.proxyDecisions.inc({ route: 'egress', outcome: r.code ? 'upstream_error' : 'allowed' });
      const line = {
        ...data,
        template: a.template,
        status: r.status,
        req_bytes: body.length,
        res_bytes: r.resBytes,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        ...(r.code ? { code: r.code } : {}),
        ...(r.scrubbed ? { scrubbed: r.scrubbed } : {}),
        ...(r.decoded ? { decoded: r.decoded } : {}),
      };
      if (r.code) st.log.warn(line, 'egress upstream error');
      else st.log.debug(line, 'egress forwarded');
    } catch (err) {
      if (err instanceof ProxyRefusal) return refuse(res, gatewayRefusal(err), data);
      st.log.error({ ...data, err: (err as Error).message }, 'egress failed');
      errorResponse(res, 'ERR_EGRESS_UPSTREAM', 'internal gateway error');
    } finally {
      st.inFlight--;
      st.buffered -= held.bytes;
      this.#budget.total -= held.bytes;
    }
  }

  /**
   * A connector route: the session's connector placeholder checked again here (the proxy checked
   * it too), then the connector gateway answers (docs/connectors.md). Nothing of the request goes
   * upstream as it is: the gateway makes its own MCP call with the credential it holds.
   */
  async #connector(
    st: SessionState,
    req: IncomingMessage,
    res: ServerResponse,
    a: Admitted,
    body: Buffer,
    callId: string | null,
    data: Record<string, unknown>,
  ): Promise<void> {
    const expected = st.tokens.get(CONNECTORS_PLACEHOLDER_ENV);
    const m = /^Bearer ([\x21-\x7e]+)$/.exec(req.headers.authorization ?? '');
    if (!expected || !m || !safeEqual(expected, m[1]))
      throw new ProxyRefusal('ERR_PROXY_PLACEHOLDER', `missing or wrong ${CONNECTORS_PLACEHOLDER_ENV}`);
    const gw = this.#o.connectors;
    if (!gw) throw new ProxyRefusal('ERR_EGRESS_DENIED', 'connectors are not served by this gateway');
    const connectorId = a.c.route.name.slice(CONNECTOR_ROUTE.length);
    const r = await gw.handle({
      sessionId: st.id,
      userId: st.spec.userId,
      connectorId,
      method: req.method ?? '',
      body,
      turnId: st.spec.currentTurn?.() ?? null,
      callId,
      turn: st.spec.turn?.(),
    });
    res.writeHead(
      r.status,
      r.body
        ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(r.body) }
        : { 'content-length': 0 },
    );
    res.end(r.body);
    st.log.debug({ ...data, connector: connectorId, status: r.status }, 'egress connector answered');
  }

  /** Count `n` more request bytes against the session's and the gateway's budgets, or refuse. */
  #hold(st: SessionState, held: { bytes: number }, n: number): void {
    if (st.buffered + n > GATEWAY_MAX_SESSION_BYTES)
      throw new ProxyRefusal('ERR_PROXY_BUSY', "this session's requests hold too many bytes at once");
    if (this.#budget.total + n > GATEWAY_MAX_TOTAL_BYTES)
      throw new ProxyRefusal('ERR_PROXY_BUSY', 'the gateway holds too many bytes at once; try again');
    st.buffered += n;
    this.#budget.total += n;
    held.bytes += n;
  }

  /**
   * The send policy, decided on the host on the exact bytes about to be forwarded: the message is
   * read again (whatever the proxy concluded), a blocked one is refused, any other is held until
   * the daemon decides (per-hour limit, the user's approval for `ask`).
   */
  async #decideMail(
    st: SessionState,
    body: Buffer,
    callId: string | null,
    data: Record<string, unknown>,
  ): Promise<void> {
    const mp = await import('../../core/mail-policy.js');
    const { summary, verdict: v } = judgeMail(mp, body, st.spec.mailPolicy!, data);
    if (!st.spec.hold) {
      if (v.verdict === 'ask')
        throw new ProxyRefusal(
          'ERR_MAIL_APPROVAL_UNAVAILABLE',
          "this send needs the user's approval and nobody can be asked",
        );
      return;
    }
    const r = await st.spec.hold({
      hold_id: randomUUID(),
      turn_id: st.spec.currentTurn?.() ?? null,
      call_id: callId,
      verdict: v.verdict,
      ask: v.ask,
      summary,
      preview: () => mailPreview(mp.rawMessage(body)),
    });
    if (!r.allow)
      throw new ProxyRefusal(RELEASE_CODES.find((c) => c === r.code) ?? 'ERR_MAIL_DENIED', r.message.slice(0, 300));
  }
}

/** The second wall's admission, from the head alone: framing, canonical target, route, method + path, credential. */
function admitHere(st: SessionState, req: IncomingMessage, data: Record<string, unknown>): Admitted {
  checkHeaders(req);
  const raw = req.url ?? '';
  // Origin-form only: an absolute-form (`http://other/…`) or asterisk-form target names no route.
  if (!raw.startsWith('/')) throw new ProxyRefusal('ERR_EGRESS_DENIED', 'origin-form targets only');
  const target = parseTarget(raw);
  const c = findRoute(st.routes, target.path);
  if (!c) throw new ProxyRefusal('ERR_EGRESS_DENIED', 'no route of this session for this path');
  data.route = c.route.name;
  const allowed = allowedEntry(c, req.method, target.path);
  if (!allowed) throw new ProxyRefusal('ERR_EGRESS_DENIED', 'method and path not allowed on this route');
  if (target.query && req.method !== 'GET')
    throw new ProxyRefusal('ERR_EGRESS_DENIED', 'query string allowed on GET only');
  if (req.method === 'GET' && hasBody(req)) throw new ProxyRefusal('ERR_EGRESS_BAD_REQUEST', 'GET with a body');
  let real: string | undefined;
  if (c.tokenEnv) {
    real = st.tokens.get(c.tokenEnv);
    if (!real) throw new ProxyRefusal('ERR_PROXY_TOKEN_MISSING', `no ${c.tokenEnv} for this session`);
  }
  return { c, path: upstreamPathOf(c, target), template: allowed.path, real };
}

/** The whole request body, under the size limit and a deadline (the proxy already bounded it; this wall does not rely on that). */
function readBody(req: IncomingMessage, account: (n: number) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    const timer = setTimeout(
      () => fail(new ProxyRefusal('ERR_EGRESS_BAD_REQUEST', 'body not complete in time')),
      BODY_TIMEOUT_MS,
    );
    const fail = (e: Error) => {
      clearTimeout(timer);
      req.removeAllListeners('data');
      reject(e);
    };
    req.on('data', (d: Buffer) => {
      n += d.length;
      if (n > MAX_BODY_BYTES) return fail(new ProxyRefusal('ERR_PROXY_BODY_TOO_LARGE', 'body over the limit'));
      try {
        account(d.length);
      } catch (e) {
        return fail(e as Error);
      }
      chunks.push(d);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, n));
    });
    req.on('error', (e) => fail(e));
  });
}
