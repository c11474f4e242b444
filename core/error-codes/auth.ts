import type { ErrorArea } from './types.js';

/** Login, CSRF, internal and agent credentials, single sign-on and IdP connections. */
export const AUTH_ERRORS = {
  ERR_AUTH_REQUIRED: {
    status: 401,
    surfaces: ['http'],
    description: 'Not logged in (no session, or the user was deactivated).',
  },
  ERR_AUTH_FORBIDDEN: {
    status: 403,
    surfaces: ['http'],
    description: 'Logged in but not allowed (superuser or organisation manager only).',
  },
  ERR_AUTH_CSRF: {
    status: 403,
    surfaces: ['http'],
    description: "A write under /api/ without the session's X-CSRF-Token.",
  },
  ERR_AUTH_INACTIVE: {
    status: 403,
    surfaces: ['http'],
    description: 'The account is deactivated (single sign-on login).',
  },
  ERR_AUTH_INVALID_CREDENTIALS: {
    status: 401,
    surfaces: ['http'],
    description: 'Wrong username or password, or an inactive account (password login).',
  },
  ERR_AUTH_WRONG_PASSWORD: {
    status: 403,
    surfaces: ['http'],
    description: 'Changing your password: the current password is wrong.',
  },
  ERR_AUTH_NO_PASSWORD: {
    status: 409,
    surfaces: ['http'],
    description: 'Changing your password: the account signs in by single sign-on only and has no password.',
  },
  ERR_AUTH_RATE_LIMITED: {
    status: 429,
    surfaces: ['http'],
    description: 'Too many failed logins for this name or address; Retry-After says when to try again.',
  },
  ERR_AUTH_SECRET_REQUIRED: {
    status: 401,
    surfaces: ['http'],
    description: '/api/internal/* without `Authorization: Bearer <MCP_INTERNAL_SECRET>`.',
  },
  ERR_AUTH_SECRET_INVALID: {
    status: 403,
    surfaces: ['http'],
    description: '/api/internal/* with a wrong secret (or none is configured).',
  },
  ERR_AGENT_TOKEN_INVALID: {
    status: 401,
    surfaces: ['http'],
    description:
      'The agent user token is missing, malformed or tampered, its user is inactive, or its chat session ended.',
  },
  ERR_AGENT_TOKEN_EXPIRED: {
    status: 401,
    surfaces: ['http'],
    description: 'The agent user token expired; a new chat session gets a fresh one.',
  },
  ERR_AGENT_TOKEN_UNCONFIGURED: {
    status: 503,
    surfaces: ['http'],
    description: 'The agent API is off: AGENT_USER_TOKEN_SECRET is not configured.',
  },
  ERR_SSO_PROVIDER: {
    status: 400,
    surfaces: ['http'],
    description: 'Unknown or inactive identity provider in a login redirect.',
  },
  ERR_SSO_PROCESS: {
    status: 400,
    surfaces: ['http'],
    description: 'The login redirect form\'s `process` is not "login".',
  },
  ERR_SSO_CALLBACK_URL: {
    status: 400,
    surfaces: ['http'],
    description: '`callback_url` is missing, not absolute, or not on AIRLOCK_PUBLIC_ORIGIN.',
  },
  ERR_SSO_STATE: {
    status: 400,
    surfaces: ['http'],
    description: 'Unknown, used or expired login state, or the connection changed during the login.',
  },
  ERR_SSO_DENIED: {
    status: 400,
    surfaces: ['http'],
    description: 'The identity provider answered the callback with an error.',
  },
  ERR_SSO_CODE_EXCHANGE: {
    status: 400,
    surfaces: ['http'],
    description: 'The identity provider refused the authorization code, or the exchange failed.',
  },
  ERR_SSO_ID_TOKEN: {
    status: 400,
    surfaces: ['http'],
    description: 'The ID token failed validation (signature, issuer, audience, nonce, expiry).',
  },
  ERR_SSO_EMAIL_UNVERIFIED: {
    status: 403,
    surfaces: ['http'],
    description: 'The identity provider did not confirm a verified e-mail address.',
  },
  ERR_SSO_DISCOVERY: {
    status: 502,
    surfaces: ['http'],
    description: "The identity provider's discovery document or signing keys cannot be fetched.",
  },
  ERR_IDP_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: 'No such IdP connection (or none is configured).',
  },
  ERR_IDP_EXISTS: { status: 409, surfaces: ['http'], description: 'A connection for this provider exists already.' },
  ERR_IDP_SERVICE_ACCOUNT: {
    status: 400,
    surfaces: ['http'],
    description: '`service_account_json` is not JSON, or lacks client_email and a PEM private_key.',
  },
} as const satisfies ErrorArea;
