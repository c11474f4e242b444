import type { ErrorArea } from './types.js';

/** The in-sandbox credential-injection proxy (its refusals carry `X-Airlock-Error`). */
export const PROXY_AREA_ERRORS = {
  ERR_PROXY_BAD_REQUEST: {
    status: 400,
    surfaces: ['proxy'],
    description: 'A malformed request: bad target characters, duplicate or conflicting headers, a parser error.',
  },
  ERR_PROXY_PLACEHOLDER: {
    status: 401,
    surfaces: ['proxy'],
    description: "The route's placeholder header is missing or wrong.",
  },
  ERR_PROXY_ROUTE_DENIED: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description: 'No route allows this method and path (also CONNECT, Upgrade, dot segments, denied headers).',
  },
  ERR_PROXY_REQUEST_TIMEOUT: {
    status: 408,
    surfaces: ['proxy'],
    description: "The request's headers or body did not arrive in time.",
  },
  ERR_PROXY_BODY_TOO_LARGE: {
    status: 413,
    surfaces: ['proxy'],
    description: 'The request body is larger than the proxy allows.',
  },
  ERR_PROXY_UPSTREAM: {
    status: 502,
    surfaces: ['proxy'],
    description: 'The upstream (or the tunnel to it through the egress socket) failed.',
  },
  ERR_PROXY_UPSTREAM_ENCODING: {
    status: 502,
    surfaces: ['proxy'],
    description: 'The upstream answered with a content-encoding the proxy cannot decode to scrub.',
  },
  ERR_PROXY_TOKEN_MISSING: {
    status: 503,
    surfaces: ['proxy', 'start'],
    description: 'The daemon holds no real token for the route (the egress gateway injects it).',
  },
  ERR_PROXY_BUSY: {
    status: 503,
    surfaces: ['proxy'],
    description: 'The session already has the most upstream requests in flight; none freed up in time.',
  },
  ERR_PROXY_TIMEOUT: { status: 504, surfaces: ['proxy'], description: 'The upstream did not answer in time.' },
  ERR_MAIL_UNPARSEABLE: {
    status: 400,
    surfaces: ['proxy', 'tool'],
    description:
      'A mail send whose message the proxy cannot read (not JSON with a base64 raw message, a header line without a name, two subjects, a multipart without boundary): refused, never passed.',
  },
  ERR_MAIL_AMBIGUOUS: {
    status: 400,
    surfaces: ['proxy', 'tool'],
    description:
      'A mail send outside the strict reading of address headers (a comment, a group, an encoded word or a missing comma in an address field, a display name that looks like an address, two @, a bare CR or LF in the header block, an address header twice, a Resent-* header, a JSON key twice): mail readers could disagree on its recipients, so it is refused before anyone is asked.',
  },
  ERR_MAIL_BLOCKED: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description:
      'The send policy refuses this message: a blocked recipient domain, a domain not allowed, no recipient or too many.',
  },
  ERR_MAIL_DENIED: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description: 'The user denied the held send in the chat.',
  },
  ERR_MAIL_APPROVAL_TIMEOUT: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description: 'Nobody decided on the held send in time (AIRLOCK_MAIL_APPROVAL_TIMEOUT_S): it was refused.',
  },
  ERR_MAIL_APPROVAL_UNAVAILABLE: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description:
      "The send needs the user's approval but no chat turn is running to ask in (or the daemon is not reachable).",
  },
  ERR_MAIL_CALL_UNBOUND: {
    status: 403,
    surfaces: ['proxy', 'tool'],
    description:
      "A mail send whose X-Airlock-Call names no send_email call the turn is running (or, when it needs the user's approval, names none): refused, no approval card (docs/security.md).",
  },
  ERR_MAIL_CALL_REUSED: {
    status: 409,
    surfaces: ['proxy', 'tool'],
    description:
      'A second mail send under a send_email call that already made one: one call binds one send; refused, no approval card.',
  },
  ERR_MAIL_PREVIEW_INCOMPLETE: {
    status: 422,
    surfaces: ['proxy', 'tool'],
    description:
      'A mail send that needs approval but whose parts the approval card cannot show faithfully (an unknown alternative, a nested multipart, an HTML part over the bound): never sent on a partial preview.',
  },
  ERR_MAIL_RATE_LIMITED: {
    status: 429,
    surfaces: ['proxy', 'tool'],
    description: 'The user has sent the most messages the send policy allows in the last hour.',
  },
  ERR_PROXY_PROFILE: {
    status: 500,
    surfaces: ['start'],
    description: 'The session profile has an invalid route (token_ref, prefix, opaque parameter, upstream).',
  },
} as const satisfies ErrorArea;
