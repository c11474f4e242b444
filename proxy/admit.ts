import type { IncomingMessage } from 'node:http';
import { AppError } from '../core/errors.js';
import { safeEqual } from '../core/secret.js';
import type { ProfileRoute, SessionProfile } from '../core/sandbox-protocol.js';
import { ProxyRefusal } from './errors.js';
import { allowedHeaders } from './headers.js';
import { MAX_BODY_BYTES } from './limits.js';
import { matchTemplate, parseTarget, type Target } from './normalise.js';

/** Largest header block accepted (bytes); larger → 400 before routing. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Most header lines accepted. */
export const MAX_HEADER_COUNT = 64;

/** Headers that would let the child change the method the upstream executes (Google honours them). */
const DENY_REQUEST = new Set(['x-http-method-override', 'x-http-method', 'x-method-override']);
/** Headers that must appear at most once. */
const SINGLETON = new Set(['host', 'content-length', 'transfer-encoding', 'authorization', 'x-api-key', 'content-type']);
/** A Content-Length the proxy believes: digits only, no sign, no leading zero (RFC 9110 §8.6 plus strictness). */
const CONTENT_LENGTH = /^(?:0|[1-9][0-9]{0,14})$/;

export interface CompiledRoute {
  route: ProfileRoute;
  tokenEnv: string | null;
  upstream: URL;
  upstreamPath: string;
  /** Request headers forwarded on this route (proxy/headers.ts). */
  headers: ReadonlySet<string>;
}

/** What admission decided for an allowed request: everything forwarding needs. */
export interface Admission {
  compiled: CompiledRoute;
  target: Target;
  /** The matched allow-list template (for logs). */
  template: string;
  /** The real credential to inject, or undefined on a route without one. */
  real: string | undefined;
  /** The placeholder the child presented (never forwarded). */
  placeholder: string;
  /** The declared body length, or null when the body is chunked or absent. */
  declaredLength: number | null;
}

/** `"${MAIL_ACCESS_TOKEN}"` → `MAIL_ACCESS_TOKEN`. */
export function tokenEnvOf(ref: string | null): string | null {
  if (ref === null) return null;
  const m = /^\$\{([A-Z][A-Z0-9_]*)\}$/.exec(ref);
  if (!m) throw new AppError('ERR_PROXY_PROFILE', `token_ref must look like \${NAME}`);
  return m[1];
}

/** Check the profile's routes once at start (a route naming an unset token fails the start). */
export function compileRoutes(profile: SessionProfile, getToken: (env: string) => string | undefined, extraHeaders: readonly string[] = []): CompiledRoute[] {
  const out: CompiledRoute[] = [];
  for (const route of profile.routes) {
    if (!route.prefix.startsWith('/') || route.prefix.endsWith('/')) {
      throw new AppError('ERR_PROXY_PROFILE', `route ${route.name}: prefix must start and not end with /`);
    }
    const tokenEnv = tokenEnvOf(route.token_ref);
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
    out.push({ route, tokenEnv, upstream, upstreamPath: upstream.pathname.replace(/\/+$/, ''), headers: allowedHeaders(route, extraHeaders) });
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

/**
 * Header-level checks the HTTP parser does not make (it already refuses CL+TE and bad syntax).
 * Returns the declared Content-Length (null when absent).
 */
export function checkHeaders(req: IncomingMessage): number | null {
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
  const enc = req.headers['content-encoding'];
  if (enc !== undefined && enc.trim().toLowerCase() !== 'identity') {
    // A compressed request body would pass the body limit compressed and is not ours to inflate.
    throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'compressed request bodies are not accepted');
  }
  if (!req.headers.host) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'missing host header');
  if (req.httpVersion !== '1.1' && req.httpVersion !== '1.0') throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'unsupported HTTP version');
  const cl = req.headers['content-length'];
  if (cl === undefined) return null;
  // Leading zeros or a sign: parsers disagree on these (one reads 086 as 86, another refuses it).
  if (!CONTENT_LENGTH.test(cl)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'invalid content-length');
  const n = Number(cl);
  // Refused before any upstream request is made, whatever the body really holds.
  if (n > MAX_BODY_BYTES) throw new ProxyRefusal('ERR_PROXY_BODY_TOO_LARGE', 'declared content-length over the limit');
  return n;
}

export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * Decide whether a request may go upstream: headers, target, route, method+path, placeholder
 * and the real credential, in that order. Throws ProxyRefusal for every refusal; fills `log`
 * with what it learnt (route, template, query keys) as it goes, so a refusal is logged with it.
 */
export function admit(
  req: IncomingMessage,
  routes: CompiledRoute[],
  opts: { getToken(env: string): string | undefined; getPlaceholder(env: string): string | undefined },
  log: Record<string, unknown>,
): Admission {
  const declaredLength = checkHeaders(req);
  const target = parseTarget(req.url ?? '');
  log.query_keys = target.queryKeys;
  const compiled = findRoute(routes, target.path);
  if (!compiled) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'no route for this path');
  const { route } = compiled;
  log.route = route.name;
  const allowed = route.allow.find((a) => a.method === req.method && matchTemplate(a.path, target.path, a.opaque));
  if (!allowed) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'method and path not allowed on this route');
  log.template = allowed.path;
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
  return { compiled, target, template: allowed.path, real, placeholder: got, declaredLength };
}
