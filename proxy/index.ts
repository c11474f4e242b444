/**
 * The in-sandbox proxy (started by the supervisor): the first wall. It holds no real token; what it
 * admits goes to the daemon's egress gateway, which injects the credential on the host.
 * Contract: `startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy>`. See docs/proxy.md.
 */
export { startCredentialProxy, tokenEnvOf, TUNNEL_IDLE_MS, MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_HEADER_COUNT, TRACE_HEADER, type ProxyDecision, type ProxyOptions, type RunningProxy } from './server.js';
export { COMMON_REQUEST_HEADERS, ROUTE_REQUEST_HEADERS } from './headers.js';
export { SessionLimits, MAX_UPSTREAM_CONCURRENT, BODY_TIMEOUT_MS, HEADERS_TIMEOUT_MS, type LimitOptions } from './limits.js';
export { errorResponse, PROXY_ERRORS, ProxyRefusal, type ProxyErrorCode } from './errors.js';
export { parseTarget, matchTemplate } from './normalise.js';
export { Scrubber, SCRUBBED, scrubString } from './scrub.js';
export { contentCodings, DECODABLE_CODINGS, decodeBody, DecodeError } from './decode.js';
