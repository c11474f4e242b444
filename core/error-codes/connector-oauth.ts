import type { ErrorArea } from './types.js';

/**
 * OAuth per user for connectors (docs/connectors.md, "OAuth per user"): the host is the OAuth
 * client to each connector's authorization server. The connect, callback and disconnect routes
 * answer these; the token service (refresh) raises the last ones. No message carries a token, a
 * client secret or the answer body of the authorization server.
 */
export const CONNECTOR_OAUTH_ERRORS = {
  ERR_CONNECTOR_OAUTH_UNKNOWN: {
    status: 404,
    surfaces: ['http'],
    description: 'No OAuth connector with this id that the user may use.',
  },
  ERR_CONNECTOR_OAUTH_RETURN_TO: {
    status: 400,
    surfaces: ['http'],
    description: 'return_to is not a path on this origin (checked after resolution).',
  },
  ERR_CONNECTOR_OAUTH_STATE: {
    status: 400,
    surfaces: ['http'],
    description:
      'Unknown, used, foreign (another user or browser session) or expired connect state: nothing was saved; start again.',
  },
  ERR_CONNECTOR_OAUTH_DENIED: {
    status: 400,
    surfaces: ['http'],
    description:
      "The connector's authorization server did not grant access (the user declined, or it answered an OAuth error).",
  },
  ERR_CONNECTOR_OAUTH_DISCOVERY: {
    status: 502,
    surfaces: ['http'],
    description:
      "The connector's protected-resource metadata (RFC 9728) or its authorization server's metadata (RFC 8414 / OpenID discovery) is missing or unusable: no authorization server, a resource that is not the connector's URL, an issuer that differs, no code flow with PKCE S256, or an endpoint that is not https.",
  },
  ERR_CONNECTOR_OAUTH_REDIRECT: {
    status: 502,
    surfaces: ['http', 'start'],
    description:
      'A metadata, token or revocation request of the OAuth flow was redirected to another host: not followed, nothing saved.',
  },
  ERR_CONNECTOR_OAUTH_ISSUER: {
    status: 400,
    surfaces: ['http'],
    description:
      "The authorization answer names another issuer (RFC 9207 `iss`) than the connector's authorization server: refused (mix-up defence), nothing saved.",
  },
  ERR_CONNECTOR_OAUTH_TOKEN: {
    status: 502,
    surfaces: ['http', 'start'],
    description:
      "The connector's token endpoint is unreachable, refused the grant, or answered without a usable bearer access token: nothing saved.",
  },
  ERR_CONNECTOR_OAUTH_ECHO: {
    status: 502,
    surfaces: ['http', 'start'],
    description:
      "The connector's token endpoint echoed a secret of the request (the client secret, the PKCE verifier or the code) in its answer: refused, the answer is neither logged nor stored.",
  },
  ERR_CONNECTOR_OAUTH_CLIENT: {
    status: 503,
    surfaces: ['http'],
    description:
      "No usable OAuth client for this connector: its authorization server does not take Airlock's client ID metadata document (https public origin needed) and the connector has no pre-registered client id.",
  },
  ERR_CONNECTOR_OAUTH_REFRESH: {
    status: 502,
    surfaces: ['start', 'tool', 'proxy'],
    description:
      "The user's connector access token could not be refreshed (the authorization server is unreachable or failed); retried on the next call.",
  },
} as const satisfies ErrorArea;
