import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from './errors.js';
import { Secret } from './secret.js';

/**
 * AGENT_USER_TOKEN: the short-lived bearer the sandboxed agent presents on the proxy's
 * `host` route (GET /api/agent/memories). It is bound to one user and one chat session.
 *
 * Format: `aut1.<payload>.<mac>`, payload = base64url(JSON {u, s, iat, exp}),
 * mac = base64url(HMAC-SHA256(AGENT_USER_TOKEN_SECRET, "aut1." + payload)).
 * The token is not secret from the child (it lives in its env), but it can only read
 * that user's non-`bi` memories and it expires.
 */
export const AGENT_USER_TOKEN_PREFIX = 'aut1';
/** Default lifetime: the life of a warm session (it counts as stale after about an hour). */
export const AGENT_USER_TOKEN_TTL_S = 3600;
/** Clock skew allowed on `iat` (a token from the near future is still fine). */
const CLOCK_SKEW_S = 60;
const MAC_BYTES = 32;

export interface AgentUserTokenClaims {
  userId: number;
  sessionId: string;
  /** Issued at, seconds since the epoch. */
  iat: number;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export interface MintAgentUserTokenOptions {
  userId: number;
  sessionId: string;
  ttlS?: number;
  /** Milliseconds since the epoch (tests). */
  now?: number;
}

function keyOf(secret: Secret | string): string {
  return typeof secret === 'string' ? secret : secret.reveal();
}

function mac(secret: Secret | string, signed: string): Buffer {
  return createHmac('sha256', keyOf(secret)).update(signed).digest();
}

/** Mint a token for (user, session). */
export function mintAgentUserToken(secret: Secret | string, opts: MintAgentUserTokenOptions): string {
  if (!Number.isSafeInteger(opts.userId) || opts.userId <= 0) throw new TypeError('userId must be a positive integer');
  if (typeof opts.sessionId !== 'string' || opts.sessionId.length === 0 || opts.sessionId.length > 200) {
    throw new TypeError('sessionId must be a non-empty string');
  }
  const ttl = opts.ttlS ?? AGENT_USER_TOKEN_TTL_S;
  if (!Number.isFinite(ttl) || ttl <= 0) throw new TypeError('ttlS must be positive');
  const iat = Math.floor((opts.now ?? Date.now()) / 1000);
  const payload = Buffer.from(
    JSON.stringify({ u: opts.userId, s: opts.sessionId, iat, exp: iat + Math.floor(ttl) }),
  ).toString('base64url');
  const signed = `${AGENT_USER_TOKEN_PREFIX}.${payload}`;
  return `${signed}.${mac(secret, signed).toString('base64url')}`;
}

export interface VerifyAgentUserTokenOptions {
  /** Milliseconds since the epoch (tests). */
  now?: number;
  /** When given, the token must be bound to this session. */
  sessionId?: string;
}

/**
 * Verify signature (constant time), shape and expiry. Throws AppError
 * ERR_AGENT_TOKEN_INVALID (401) or ERR_AGENT_TOKEN_EXPIRED (401). Never echoes the token.
 */
export function verifyAgentUserToken(
  secret: Secret | string,
  token: string | undefined | null,
  opts: VerifyAgentUserTokenOptions = {},
): AgentUserTokenClaims {
  const invalid = () => new AppError('ERR_AGENT_TOKEN_INVALID', 'invalid agent user token');
  if (typeof token !== 'string' || token.length > 2048) throw invalid();
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== AGENT_USER_TOKEN_PREFIX) throw invalid();
  const given = Buffer.from(parts[2], 'base64url');
  const expected = mac(secret, `${parts[0]}.${parts[1]}`);
  // The MAC length is public (fixed), so checking it first leaks nothing; the comparison is constant time.
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, expected)) throw invalid();
  let claims: { u?: unknown; s?: unknown; iat?: unknown; exp?: unknown };
  try {
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as typeof claims;
  } catch {
    throw invalid(); // signed but unparsable: only possible with a leaked secret; treat as invalid
  }
  const { u, s, iat, exp } = claims ?? {};
  if (
    !Number.isSafeInteger(u) ||
    (u as number) <= 0 ||
    typeof s !== 'string' ||
    !s ||
    !Number.isSafeInteger(iat) ||
    !Number.isSafeInteger(exp)
  ) {
    throw invalid();
  }
  const nowS = Math.floor((opts.now ?? Date.now()) / 1000);
  if ((iat as number) > nowS + CLOCK_SKEW_S) throw invalid();
  if ((exp as number) <= nowS)
    throw new AppError('ERR_AGENT_TOKEN_EXPIRED', 'agent user token expired; start a new chat session');
  if (opts.sessionId !== undefined && opts.sessionId !== s) throw invalid();
  return { userId: u as number, sessionId: s, iat: iat as number, exp: exp as number };
}
