import type { ErrorArea } from './types.js';

/** The in-sandbox credential-injection proxy (its refusals carry `X-Airlock-Error`). */
export const PROXY_AREA_ERRORS = {
  ERR_PROXY_BAD_REQUEST: { status: 400, surfaces: ['proxy'], description: 'A malformed request: bad target characters, duplicate or conflicting headers, a parser error.' },
  ERR_PROXY_PLACEHOLDER: { status: 401, surfaces: ['proxy'], description: 'The route\'s placeholder header is missing or wrong.' },
  ERR_PROXY_ROUTE_DENIED: { status: 403, surfaces: ['proxy', 'tool'], description: 'No route allows this method and path (also CONNECT, Upgrade, dot segments, denied headers).' },
  ERR_PROXY_BODY_TOO_LARGE: { status: 413, surfaces: ['proxy'], description: 'The request body is larger than the proxy allows.' },
  ERR_PROXY_UPSTREAM: { status: 502, surfaces: ['proxy'], description: 'The upstream (or the tunnel to it through the egress socket) failed.' },
  ERR_PROXY_UPSTREAM_ENCODING: { status: 502, surfaces: ['proxy'], description: 'The upstream answered with a content-encoding the proxy cannot decode to scrub.' },
  ERR_PROXY_TOKEN_MISSING: { status: 503, surfaces: ['proxy', 'start'], description: 'The real token of a route is not set in the supervisor.' },
  ERR_PROXY_TIMEOUT: { status: 504, surfaces: ['proxy'], description: 'The upstream did not answer in time.' },
  ERR_PROXY_PROFILE: { status: 500, surfaces: ['start'], description: 'The session profile has an invalid route (token_ref, prefix, opaque parameter, upstream).' },
} as const satisfies ErrorArea;
