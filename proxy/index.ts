/**
 * The in-sandbox proxy (started by the supervisor): the first wall. It holds no real token; what it
 * admits goes to the daemon's egress gateway, which injects the credential on the host.
 * Contract: `startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy>`. See docs/proxy.md.
 */
export {
  startCredentialProxy,
  tokenEnvOf,
  TUNNEL_IDLE_MS,
  MAX_BODY_BYTES,
  MAX_HEADER_BYTES,
  MAX_HEADER_COUNT,
  TRACE_HEADER,
  type ProxyDecision,
  type ProxyOptions,
  type RunningProxy,
} from './server.js';
export { COMMON_REQUEST_HEADERS, ROUTE_REQUEST_HEADERS } from '../core/egress/headers.js';
export {
  SessionLimits,
  MAX_UPSTREAM_CONCURRENT,
  BODY_TIMEOUT_MS,
  HEADERS_TIMEOUT_MS,
  type LimitOptions,
} from './limits.js';
export { errorResponse, PROXY_ERRORS, ProxyRefusal, type ProxyErrorCode } from '../core/egress/errors.js';
export { parseTarget, matchTemplate } from '../core/egress/normalise.js';
export { Scrubber, SCRUBBED, scrubString } from '../core/egress/scrub.js';
export { contentCodings, DECODABLE_CODINGS, decodeBody, DecodeError } from '../core/egress/decode.js';
