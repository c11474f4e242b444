import type { ProfileRoute } from '../sandbox-protocol.js';
import { allowedHeaders } from './headers.js';
import { matchTemplate, type Target } from './normalise.js';

/**
 * A session's route, checked once: what the in-sandbox proxy (first wall) and the daemon's egress
 * gateway (second wall) both admit a request against. Both walls read the same route table (the
 * gateway its own copy, made by the daemon; the proxy profile.json's) with this code.
 */
export interface CompiledRoute {
  route: ProfileRoute;
  /** The env name of the real token the route injects (`MAIL_ACCESS_TOKEN`), or null. */
  tokenEnv: string | null;
  upstream: URL;
  upstreamPath: string;
  /** Request headers forwarded on this route (core/egress/headers.ts). */
  headers: ReadonlySet<string>;
}

/**
 * A route table that cannot be used (bad prefix, opaque name, upstream, token_ref). A plain Error,
 * not an AppError: its one reader (proxy/admit.ts) turns it into ERR_PROXY_PROFILE.
 */
export class RouteTableError extends Error {}

/** `"${MAIL_ACCESS_TOKEN}"` → `MAIL_ACCESS_TOKEN`; a reference name only, never a value. */
export function tokenEnvOf(ref: string | null): string | null {
  if (ref === null) return null;
  const m = /^\$\{([A-Z][A-Z0-9_]*)\}$/.exec(ref);
  if (!m) throw new RouteTableError('token_ref must look like ${NAME}');
  return m[1];
}

/** Check a route table (prefixes, opaque names, upstream URLs); longest prefix first. */
export function compileRouteTable(
  routes: readonly ProfileRoute[],
  extraHeaders: readonly string[] = [],
): CompiledRoute[] {
  const out: CompiledRoute[] = [];
  for (const route of routes) {
    if (!route.prefix.startsWith('/') || route.prefix.endsWith('/'))
      throw new RouteTableError(`route ${route.name}: prefix must start and not end with /`);
    const tokenEnv = tokenEnvOf(route.token_ref);
    for (const a of route.allow) {
      for (const name of a.opaque ?? []) {
        // An opaque name that is no parameter of its template would silently match nothing.
        if (!a.path.split('/').includes(`{${name}}`))
          throw new RouteTableError(`route ${route.name}: opaque ${name} is not a parameter of ${a.path}`);
      }
    }
    const upstream = new URL(route.upstream);
    if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:')
      throw new RouteTableError(`route ${route.name}: upstream must be http(s)`);
    out.push({
      route,
      tokenEnv,
      upstream,
      upstreamPath: upstream.pathname.replace(/\/+$/, ''),
      headers: allowedHeaders(route, extraHeaders),
    });
  }
  // Longest prefix first, so '/model' never shadows a longer, more specific prefix.
  return out.sort((a, b) => b.route.prefix.length - a.route.prefix.length);
}

export function findRoute(routes: readonly CompiledRoute[], path: string): CompiledRoute | undefined {
  return routes.find((r) => path === r.route.prefix || path.startsWith(r.route.prefix + '/'));
}

/** The allow-list entry a method and path match on a route (case-sensitive; `{param}` = one segment). */
export function allowedEntry(
  c: CompiledRoute,
  method: string | undefined,
  path: string,
): ProfileRoute['allow'][number] | undefined {
  return c.route.allow.find((a) => a.method === method && matchTemplate(a.path, path, a.opaque));
}

/** The upstream path (with query) of an admitted proxy path: the route's rewrite, under the upstream URL's own path. */
export function upstreamPathOf(c: CompiledRoute, target: Target): string {
  let p = target.path;
  const rw = c.route.rewrite;
  if (rw && p.startsWith(rw.from)) p = rw.to + p.slice(rw.from.length);
  return c.upstreamPath + p + (target.query ? `?${target.query}` : '');
}
