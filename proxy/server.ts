import { Agent, createServer, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type RequestOptions, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo, Socket } from 'node:net';
import { safeEqual } from '../core/secret.js';
import { AppError } from '../core/errors.js';
import type { ProfileRoute, SessionProfile } from '../core/sandbox-protocol.js';
import { contentCodings, DECODABLE_CODINGS, decodeBody, DecodeError } from './decode.js';
import { errorResponse, PROXY_ERRORS, ProxyRefusal, type ProxyErrorCode } from './errors.js';
import { matchTemplate, parseTarget } from './normalise.js';
import { Scrubber, scrubString } from './scrub.js';
import { openTunnel } from './tunnel.js';

/** Largest header block accepted (bytes); larger → 400 before routing. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Most header lines accepted. */
export const MAX_HEADER_COUNT = 64;
/** Largest request body forwarded (a mail with a chart attachment fits easily). */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;
export const UPSTREAM_TIMEOUT_MS = 120_000;

/** Hop-by-hop headers (RFC 9110 §7.6.1) plus what the proxy always sets itself. */
const DROP_REQUEST = new Set([
  'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host',
  'authorization', 'x-api-key', 'accept-encoding', 'expect', 'content-length',
  'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'via',
]);
const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'proxy-authenticate', 'proxy-connection']);
/** Also dropped when the proxy decoded the body: the child gets it plain. */
const DROP_DECODED = new Set(['content-encoding', 'content-md5']);
/** Headers that would let the child change the method the upstream executes (Google honours them). */
const DENY_REQUEST = new Set(['x-http-method-override', 'x-http-method', 'x-method-override']);
/** Headers that must appear at most once. */
const SINGLETON = new Set(['host', 'content-length', 'transfer-encoding', 'authorization', 'x-api-key', 'content-type']);

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
}

export interface RunningProxy {
  port: number;
  /** Requests forwarded and refused since start (for health and tests). */
  stats(): { forwarded: number; refused: number };
  close(): Promise<void>;
}

interface CompiledRoute {
  route: ProfileRoute;
  tokenEnv: string | null;
  upstream: URL;
  upstreamPath: string;
}

/** `"${MAIL_ACCESS_TOKEN}"` → `MAIL_ACCESS_TOKEN`. */
export function tokenEnvOf(ref: string | null): string | null {
  if (ref === null) return null;
  const m = /^\$\{([A-Z][A-Z0-9_]*)\}$/.exec(ref);
  if (!m) throw new AppError('ERR_PROXY_PROFILE', `token_ref must look like \${NAME}`);
  return m[1];
}

function compile(profile: SessionProfile, getToken: ProxyOptions['getToken']): CompiledRoute[] {
  const out: CompiledRoute[] = [];
  for (const route of profile.routes) {
    if (!route.prefix.startsWith('/') || route.prefix.endsWith('/')) {
      throw new AppError('ERR_PROXY_PROFILE', `route ${route.name}: prefix must start and not end with /`);
    }
    const tokenEnv = tokenEnvOf(route.token_ref);
    // SPEC: a route naming an unset token makes the proxy fail at start.
    if (tokenEnv && !getToken(tokenEnv)) {
      throw new AppError('ERR_PROXY_TOKEN_MISSING', `route ${route.name}: ${tokenEnv} is not set`);
    }
    for (const a of route.allow) {
      for (const name of a.opaque ?? []) {
        // An opaque name that is no parameter of its template would silently match nothing.
        if (!a.path.split('/').includes(`{${name}}`)) {
          throw new AppError('ERR_PROXY_PROFILE', `route ${route.name}: opaque ${name} is not a parameter of ${a.path}`);
        }
      }
    }
    const upstream = new URL(route.upstream);
    if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') {
      throw new AppError('ERR_PROXY_PROFILE', `route ${route.name}: upstream must be http(s)`);
    }
    out.push({ route, tokenEnv, upstream, upstreamPath: upstream.pathname.replace(/\/+$/, '') });
  }
  // Longest prefix first, so '/model' never shadows a longer, more specific prefix.
  return out.sort((a, b) => b.route.prefix.length - a.route.prefix.length);
}

function findRoute(routes: CompiledRoute[], path: string): CompiledRoute | undefined {
  return routes.find((r) => path === r.route.prefix || path.startsWith(r.route.prefix + '/'));
}

/** The credential the child presented: `Authorization: Bearer <p>` or, for x-api-key routes, `x-api-key: <p>`. */
function presented(req: IncomingMessage, route: ProfileRoute): string | undefined {
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer ([\x21-\x7e]+)$/.exec(auth);
    return m ? m[1] : undefined;
  }
  if (route.inject === 'x-api-key') {
    const k = req.headers['x-api-key'];
    return typeof k === 'string' ? k : undefined;
  }
  return undefined;
}

/** Header-level checks the HTTP parser does not make (it already refuses CL+TE and bad syntax). */
function checkHeaders(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  if (raw.length / 2 > MAX_HEADER_COUNT) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'too many header lines');
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (DENY_REQUEST.has(name)) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', `${name} is not allowed`);
    if (SINGLETON.has(name)) {
      if (seen.has(name)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', `duplicate ${name} header`);
      seen.add(name);
    }
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    if (te.toLowerCase() !== 'chunked') throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'unsupported transfer-encoding');
    if (req.headers['content-length'] !== undefined) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'content-length with transfer-encoding');
  }
  const cl = req.headers['content-length'];
  if (cl !== undefined && !/^\d{1,12}$/.test(cl)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'invalid content-length');
  if (!req.headers.host) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'missing host header');
  if (req.httpVersion !== '1.1' && req.httpVersion !== '1.0') throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'unsupported HTTP version');
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * Start the credential-injection reverse proxy. Fails (ERR_PROXY_TOKEN_MISSING) when a
 * route names a token that is not set. See docs/proxy.md for the security model.
 */
export async function startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy> {
  const routes = compile(opts.profile, opts.getToken);
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS;
  let forwarded = 0;
  let refused = 0;
  const decide = (route: unknown, outcome: ProxyDecision['outcome'], status: number, code?: string) => {
    if (outcome === 'forwarded') forwarded++;
    else refused++;
    try {
      opts.onDecision?.({ route: typeof route === 'string' ? route : null, outcome, status, ...(code ? { code } : {}) });
    } catch {
      // A metrics sink never breaks a request.
    }
  };
  const agent = tunnelAgent(opts.egressSocket, Math.min(timeoutMs, 15_000), opts.tlsCa);

  // Connections that got a refusal: nothing more is read from them, even requests the
  // parser already took off a pipeline (they would otherwise still be dispatched).
  const tainted = new WeakSet<object>();
  const refuse = (res: ServerResponse | Socket, err: ProxyRefusal, data: Record<string, unknown>) => {
    decide(data.route, 'refused', err.status, err.code);
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
    const started = process.hrtime.bigint();
    const base: Record<string, unknown> = { method: req.method };
    try {
      checkHeaders(req);
      const target = parseTarget(req.url ?? '');
      base.query_keys = target.queryKeys;
      const compiled = findRoute(routes, target.path);
      if (!compiled) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'no route for this path');
      const { route } = compiled;
      base.route = route.name;
      const allowed = route.allow.find((a) => a.method === req.method && matchTemplate(a.path, target.path, a.opaque));
      if (!allowed) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'method and path not allowed on this route');
      base.template = allowed.path;
      if (target.query && req.method !== 'GET') throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'query string allowed on GET only');
      if (req.method === 'GET' && hasBody(req)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'GET with a body');
      const expected = opts.getPlaceholder(route.placeholder_env);
      const got = presented(req, route);
      // Constant-time compare; an unset placeholder never matches.
      if (!expected || got === undefined || !safeEqual(expected, got)) {
        throw new ProxyRefusal('ERR_PROXY_PLACEHOLDER', `missing or wrong ${route.placeholder_env}`);
      }
      let real: string | undefined;
      if (compiled.tokenEnv) {
        real = opts.getToken(compiled.tokenEnv);
        if (!real) throw new ProxyRefusal('ERR_PROXY_TOKEN_MISSING', `${compiled.tokenEnv} is not set`);
      }
      if (String(req.headers.expect ?? '').toLowerCase() === '100-continue') res.writeContinue();
      forward(req, res, compiled, target.path, target.query, real, got, started, base);
    } catch (err) {
      if (err instanceof ProxyRefusal) return refuse(res, err, { ...base, ms: ms(started) });
      log('error', 'proxy failed', { ...base, err: (err as Error).message });
      errorResponse(res, 'ERR_PROXY_UPSTREAM', 'internal proxy error');
    }
  };
  const server: Server = createServer(
    { maxHeaderSize: MAX_HEADER_BYTES, insecureHTTPParser: false, requireHostHeader: false /* checked in checkHeaders, so the refusal is coded */, joinDuplicateHeaders: false },
    handler,
  );
  // Expect: 100-continue goes through the same checks; "continue" is sent only once the
  // request is allowed (Node would otherwise say 100 before any check ran).
  server.on('checkContinue', handler);
  server.maxHeadersCount = 0; // count enforced in checkHeaders (the default would truncate silently)
  server.headersTimeout = 15_000;
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

  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    c: CompiledRoute,
    path: string,
    query: string,
    real: string | undefined,
    placeholder: string,
    started: bigint,
    base: Record<string, unknown>,
  ): void {
    const { route, upstream } = c;
    let upPath = path;
    if (route.rewrite && upPath.startsWith(route.rewrite.from)) upPath = route.rewrite.to + upPath.slice(route.rewrite.from.length);
    upPath = c.upstreamPath + upPath + (query ? `?${query}` : '');

    const headers: OutgoingHttpHeaders = {};
    const connectionListed = new Set(
      String(req.headers.connection ?? '').toLowerCase().split(',').map((s) => s.trim()).filter(Boolean),
    );
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i].toLowerCase();
      if (DROP_REQUEST.has(name) || name.startsWith('proxy-') || connectionListed.has(name)) continue;
      const value = req.rawHeaders[i + 1];
      // The placeholder never leaves the sandbox, whatever header the child put it in.
      if (value.includes(placeholder)) continue;
      const prev = headers[name];
      headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
    }
    headers.host = upstream.host;
    headers['accept-encoding'] = 'identity'; // so the token scrubber sees plain bytes
    if (req.headers['content-length'] !== undefined) headers['content-length'] = req.headers['content-length'];
    else if (hasBody(req)) headers['transfer-encoding'] = 'chunked';
    if (real !== undefined) {
      if (route.inject === 'x-api-key') headers['x-api-key'] = real;
      else headers.authorization = `Bearer ${real}`;
    } else if (req.headers.authorization && route.inject !== 'none') {
      // No injection (host route): the child's own bearer (already checked) goes on.
      headers.authorization = req.headers.authorization;
    }

    const port = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
    const host = upstream.hostname.replace(/^\[|\]$/g, '');
    let reqBytes = 0;
    let resBytes = 0;
    let done = false;
    const finish = (status: number, extra: Record<string, unknown> = {}) => {
      if (done) return;
      done = true;
      log('info', 'proxy request', { ...base, status, req_bytes: reqBytes, res_bytes: resBytes, ms: ms(started), ...extra });
    };
    const fail = (code: ProxyErrorCode, message: string, extra: Record<string, unknown> = {}) => {
      if (done) return;
      const status = res.headersSent ? res.statusCode : PROXY_ERRORS[code];
      decide(route.name, code === 'ERR_PROXY_BODY_TOO_LARGE' ? 'refused' : 'upstream_error', status, code);
      finish(status, { code, ...extra });
      errorResponse(res, code, message);
    };

    const up = httpRequest({ agent, host, port, method: req.method, path: upPath, headers, timeout: timeoutMs, tls: upstream.protocol === 'https:' } as RequestOptions);
    up.on('timeout', () => {
      up.destroy();
      fail('ERR_PROXY_TIMEOUT', 'upstream timed out');
    });
    up.on('error', (err) => {
      if (err instanceof ProxyRefusal) fail('ERR_PROXY_UPSTREAM', err.message);
      else fail('ERR_PROXY_UPSTREAM', `upstream failed: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    });
    up.on('response', (upRes) => {
      // Scrub the value this request carried (rotation may change the env meanwhile).
      const secret = real ?? '';
      // The scrubber only sees plain bytes: a compressed body is decoded first. We asked for
      // identity, but an upstream may answer compressed anyway; a coding we cannot undo is
      // refused, since its bytes could carry the token past the scrubber.
      const codings = contentCodings(upRes.headers['content-encoding']);
      const unknown = codings.find((c) => !DECODABLE_CODINGS.includes(c));
      if (unknown !== undefined) {
        upRes.on('error', () => {}); // its body is thrown away; an abort error changes nothing
        upRes.destroy();
        up.destroy();
        fail('ERR_PROXY_UPSTREAM_ENCODING', 'upstream answered with a content-encoding the proxy cannot decode', { encoding: scrubString(unknown, secret).slice(0, 40) });
        return;
      }
      const out: OutgoingHttpHeaders = {};
      for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
        const name = upRes.rawHeaders[i].toLowerCase();
        if (DROP_RESPONSE.has(name) || (codings.length && DROP_DECODED.has(name))) continue;
        const value = scrubString(upRes.rawHeaders[i + 1], secret);
        const prev = out[name];
        out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
      }
      res.writeHead(upRes.statusCode ?? 502, out);
      const body = decodeBody(upRes, codings);
      const scrub = new Scrubber(secret);
      body.on('data', (d: Buffer) => {
        const clean = scrub.push(d);
        resBytes += clean.length;
        if (clean.length && !res.write(clean)) {
          body.pause();
          res.once('drain', () => body.resume());
        }
      });
      body.on('end', () => {
        const tail = scrub.end();
        resBytes += tail.length;
        res.end(tail);
        if (!done) decide(route.name, 'forwarded', upRes.statusCode ?? 0);
        finish(upRes.statusCode ?? 0, { ...(scrub.hits ? { scrubbed: scrub.hits } : {}), ...(codings.length ? { decoded: codings } : {}) });
      });
      body.on('error', (err) => {
        // Headers are out: the child sees a cut-off response, never undecoded bytes.
        const code = err instanceof DecodeError ? 'ERR_PROXY_UPSTREAM_ENCODING' : 'ERR_PROXY_UPSTREAM';
        if (!done) decide(route.name, 'upstream_error', upRes.statusCode ?? 502, code);
        finish(upRes.statusCode ?? 0, { code });
        up.destroy();
        res.destroy();
      });
    });
    req.on('data', (d: Buffer) => {
      reqBytes += d.length;
      if (reqBytes > MAX_BODY_BYTES) {
        up.destroy();
        fail('ERR_PROXY_BODY_TOO_LARGE', 'request body too large');
        return;
      }
      if (!up.write(d)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    });
    req.on('end', () => up.end());
    res.on('close', () => {
      if (done) return;
      // The child went away mid-request: stop the upstream exchange too.
      finish(499, { code: 'client_closed' });
      up.destroy();
    });
  }

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
    stats: () => ({ forwarded, refused }),
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
function tunnelAgent(egressSocket: string, connectTimeoutMs: number, ca?: string | Buffer): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 32, maxFreeSockets: 8, timeout: TUNNEL_IDLE_MS });
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

function ms(started: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
}
