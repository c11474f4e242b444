import { ProxyRefusal } from './errors.js';

/** Longest request target accepted (path + query). */
export const MAX_TARGET_LENGTH = 4096;

// RFC 3986 pchar minus ';' (matrix parameters are a classic path-confusion trick) plus '/'.
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]+$/;
const QUERY_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/;
const SEGMENT_PARAM = /^[A-Za-z0-9\-._~!$&'()*+,=:@%]+$/;
/** Percent-encoded `/` or `\`: allowed only inside a segment a route declares opaque. */
const ENCODED_SEPARATOR = /%(?:2f|5c)/i;

export interface Target {
  /** The path exactly as received (already proven canonical). */
  path: string;
  /** The raw query string without '?', or '' when absent. */
  query: string;
  /** Decoded query keys, for logging (never values). */
  queryKeys: string[];
}

/**
 * Strict normalisation of a request target. The rule is "refuse, never repair": a target
 * is accepted only when it is already in the one canonical form the allow-list matches,
 * so the proxy and the upstream cannot disagree about which resource is meant.
 *
 * Refused with 403 ERR_PROXY_ROUTE_DENIED: absolute-form and asterisk-form targets, `//`,
 * `.` / `..` segments, percent-encoded `.` or `%` (double encoding) in the path, encoded
 * control characters anywhere, a segment holding an encoded `/` or `\` whose decoded form has
 * a `.` or `..` part, over-long targets. Refused with 400 ERR_PROXY_BAD_REQUEST: characters
 * outside RFC 3986, malformed percent escapes, fragments.
 *
 * An encoded `/` or `\` (`%2F`, `%5C`) passes this step but is marked: `matchTemplate`
 * accepts such a segment only for a parameter the route declares opaque. The query string
 * is never used for matching, so `%25` is fine there (URLSearchParams writes it for `%`).
 */
export function parseTarget(raw: string): Target {
  if (!raw.startsWith('/'))
    throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'only origin-form request targets are allowed');
  if (raw.length > MAX_TARGET_LENGTH) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'request target too long');
  if (raw.includes('#')) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'fragment in request target');
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = q === -1 ? '' : raw.slice(q + 1);
  if (!PATH_CHARS.test(path)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'invalid character in path');
  if (!QUERY_CHARS.test(query)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'invalid character in query');
  checkEscapes(path, true);
  checkEscapes(query, false);
  try {
    decodeURIComponent(path);
  } catch {
    // Escapes that are not UTF-8: upstreams decode these in differing ways, so refuse.
    throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'percent escapes are not UTF-8');
  }
  if (path.includes('//')) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'empty path segment');
  for (const seg of path.split('/')) {
    if (seg === '.' || seg === '..') throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'dot segment in path');
    // An upstream that decodes %2F or %5C before routing must not see a traversal either:
    // decoded on its own, such a segment may not hold a `.` or `..` part.
    if (
      ENCODED_SEPARATOR.test(seg) &&
      decodeURIComponent(seg)
        .split(/[/\\]/)
        .some((p) => p === '.' || p === '..')
    ) {
      throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'dot segment inside an encoded path segment');
    }
  }
  return { path, query, queryKeys: queryKeys(query) };
}

function checkEscapes(s: string, inPath: boolean): void {
  for (let i = s.indexOf('%'); i !== -1; i = s.indexOf('%', i + 1)) {
    const hex = s.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'malformed percent escape');
    const b = parseInt(hex, 16);
    if (b < 0x20 || b === 0x7f) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'encoded control character');
    // Only the path decides the route: there `%25` (double encoding) and `%2E` (an encoded
    // dot segment) are refused. The query is forwarded as received and never matched.
    if (inPath && b === 0x25) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'double percent-encoding in path');
    if (inPath && b === 0x2e) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', 'encoded dot in path');
  }
}

function queryKeys(query: string): string[] {
  if (!query) return [];
  const keys = new Set<string>();
  for (const part of query.split('&')) {
    if (!part) continue;
    const k = part.split('=')[0];
    try {
      keys.add(decodeURIComponent(k.replace(/\+/g, ' ')).slice(0, 64));
    } catch {
      // Undecodable UTF-8 in a key: log a marker rather than the raw bytes.
      keys.add('?');
    }
    if (keys.size >= 20) break;
  }
  return [...keys];
}

/**
 * Match a canonical path (from parseTarget) against a template such as
 * `/v4/spreadsheets/{id}/values/{range}`. A `{name}` matches exactly one non-empty segment;
 * literal segments match exactly. A segment holding an encoded `/` or `\` matches only a
 * parameter named in `opaque` (a value the upstream treats as one unit, like an A1 range), so
 * an encoded slash can never stand in for the `/` between two segments of a route.
 */
export function matchTemplate(template: string, path: string, opaque: readonly string[] = []): boolean {
  const t = template.split('/');
  const p = path.split('/');
  if (t.length !== p.length) return false;
  for (let i = 0; i < t.length; i++) {
    const ts = t[i];
    if (ts.startsWith('{') && ts.endsWith('}')) {
      if (!p[i] || !SEGMENT_PARAM.test(p[i])) return false;
      if (ENCODED_SEPARATOR.test(p[i]) && !opaque.includes(ts.slice(1, -1))) return false;
    } else if (ts !== p[i]) return false;
  }
  return true;
}
