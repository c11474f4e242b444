import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { ProfileRoute } from '../sandbox-protocol.js';

/**
 * Response headers neither wall passes on to the child: the hop-by-hop ones, and the length (each
 * wall frames the body again). The gateway drops `x-airlock-error` too (daemon/host/egress-upstream.ts):
 * an upstream cannot speak as the proxy.
 */
export const HOP_BY_HOP_RESPONSE: readonly string[] = [
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'proxy-authenticate',
  'proxy-connection',
];

/**
 * Request headers the proxy forwards: an allow-list, never a deny-list. Anything the child sends
 * that is not on its route's list is dropped and counted (Cookie, X-Original-URL, X-Rewrite-URL,
 * X-Forwarded-*, method overrides, tracing headers, …): an upstream or a front end in its path
 * may give such a header a meaning the proxy never checked. The proxy sets Host,
 * Accept-Encoding, Content-Length / Transfer-Encoding and the credential itself.
 */
export const COMMON_REQUEST_HEADERS: readonly string[] = [
  'accept',
  'accept-language',
  'content-type',
  'user-agent',
  'if-match',
  'if-none-match',
];

/** Extra headers per route name (the profile's route names; see daemon/host/overlay.ts). */
export const ROUTE_REQUEST_HEADERS: Readonly<Record<string, readonly string[]>> = {
  // Anthropic's API needs its version header; the beta header picks features, not targets.
  model: ['anthropic-version', 'anthropic-beta', 'openai-beta'],
};

/** The allow-list of one route. */
export function allowedHeaders(route: ProfileRoute, extra: readonly string[] = []): ReadonlySet<string> {
  return new Set([
    ...COMMON_REQUEST_HEADERS,
    ...(ROUTE_REQUEST_HEADERS[route.name] ?? []),
    ...extra.map((h) => h.toLowerCase()),
  ]);
}

/** Headers the proxy handles itself: neither forwarded from the child nor counted as dropped. */
/** Also the tool call's trace header (TRACE_HEADER): read by the proxy for the audit trail, never forwarded. */
const OWN = new Set([
  'host',
  'authorization',
  'x-api-key',
  'content-length',
  'transfer-encoding',
  'connection',
  'accept-encoding',
  'expect',
  'x-airlock-call',
]);

/**
 * The headers of the upstream request: the allowed ones from the child (never a value holding
 * the placeholder), then what the proxy sets. Returns the names it dropped (for the count and
 * the log; names only, never values).
 */
export function upstreamHeaders(
  req: IncomingMessage,
  route: ProfileRoute,
  allowed: ReadonlySet<string>,
  opts: { host: string; bodyLength: number; real?: string; placeholder?: string },
): { headers: OutgoingHttpHeaders; dropped: string[] } {
  const headers: OutgoingHttpHeaders = {};
  const dropped: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    if (OWN.has(name)) continue;
    // Fetch metadata (undici's fetch adds Sec-Fetch-Mode to every request): dropped without
    // being counted, or the count would go up on every request and tell nothing.
    if (name.startsWith('sec-fetch-')) continue;
    const value = req.rawHeaders[i + 1];
    // The placeholder never leaves the sandbox, whatever header the child put it in.
    if (!allowed.has(name) || (opts.placeholder && value.includes(opts.placeholder))) {
      if (dropped.length < 32) dropped.push(name.slice(0, 64));
      continue;
    }
    const prev = headers[name];
    headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
  }
  headers.host = opts.host;
  headers['accept-encoding'] = 'identity'; // so the token scrubber sees plain bytes
  // The body was read in full before the upstream request: its exact length goes on.
  if (opts.bodyLength > 0 || req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH')
    headers['content-length'] = String(opts.bodyLength);
  if (opts.real !== undefined) {
    if (route.inject === 'x-api-key') headers['x-api-key'] = opts.real;
    else headers.authorization = `Bearer ${opts.real}`;
  } else if (req.headers.authorization && passesAuthorization(route)) {
    // No injection (host route): the child's own bearer (already checked) goes on.
    headers.authorization = req.headers.authorization;
  }
  return { headers, dropped };
}

/** A route without a token of its own whose bearer is the child's (the host route's AGENT_USER_TOKEN). */
export function passesAuthorization(route: ProfileRoute): boolean {
  return route.token_ref === null && route.inject !== 'none';
}
