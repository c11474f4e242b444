import type { IncomingMessage } from 'node:http';
import { AppError } from '../core/errors.js';
import { safeEqual } from '../core/secret.js';
import type { ProfileRoute, SessionProfile } from '../core/sandbox-protocol.js';
import {
  allowedEntry,
  compileRouteTable,
  findRoute,
  RouteTableError,
  tokenEnvOf,
  type CompiledRoute,
} from '../core/egress/routes.js';
import { ProxyRefusal } from '../core/egress/errors.js';
import { checkHeaders, hasBody, MAX_HEADER_BYTES, MAX_HEADER_COUNT } from '../core/egress/framing.js';
import { parseTarget, type Target } from '../core/egress/normalise.js';

export { MAX_HEADER_BYTES, MAX_HEADER_COUNT, checkHeaders, hasBody };

export type { CompiledRoute };

/** What admission decided for an allowed request: everything forwarding needs. */
export interface Admission {
  compiled: CompiledRoute;
  target: Target;
  /** The matched allow-list template (for logs). */
  template: string;
  /** The placeholder the child presented (never forwarded). */
  placeholder: string;
  /** The declared body length, or null when the body is chunked or absent. */
  declaredLength: number | null;
}

export { tokenEnvOf };

/** Check the profile's routes once at start (ERR_PROXY_PROFILE). The proxy holds no token: nothing to look up. */
export function compileRoutes(profile: SessionProfile, extraHeaders: readonly string[] = []): CompiledRoute[] {
  try {
    return compileRouteTable(profile.routes, extraHeaders);
  } catch (err) {
    if (err instanceof RouteTableError || err instanceof TypeError)
      throw new AppError('ERR_PROXY_PROFILE', err.message);
    throw err;
  }
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
 * Decide whether a request may go on to the egress gateway: headers, target, route, method+path
 * and placeholder, in that order (the gateway admits it again on the host and injects the token). Throws ProxyRefusal for every refusal; fills `log`
 * with what it learnt (route, template, query keys) as it goes, so a refusal is logged with it.
 */
export function admit(
  req: IncomingMessage,
  routes: CompiledRoute[],
  opts: { getPlaceholder(env: string): string | undefined },
  log: Record<string, unknown>,
): Admission {
  const declaredLength = checkHeaders(req);
  const target = parseTarget(req.url ?? '');
  log.query_keys = target.queryKeys;
  const compiled = findRoute(routes, target.path);
  if (!compiled) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'no route for this path');
  const { route } = compiled;
  log.route = route.name;
  const allowed = allowedEntry(compiled, req.method, target.path);
  if (!allowed) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'method and path not allowed on this route');
  log.template = allowed.path;
  if (target.query && req.method !== 'GET')
    throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'query string allowed on GET only');
  if (req.method === 'GET' && hasBody(req)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'GET with a body');
  const expected = opts.getPlaceholder(route.placeholder_env);
  const got = presented(req, route);
  // Constant-time compare; an unset placeholder never matches.
  if (!expected || got === undefined || !safeEqual(expected, got)) {
    throw new ProxyRefusal('ERR_PROXY_PLACEHOLDER', `missing or wrong ${route.placeholder_env}`);
  }
  return { compiled, target, template: allowed.path, placeholder: got, declaredLength };
}
