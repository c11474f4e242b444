import { z } from 'zod';
import { AppError } from './errors.js';
import type { Secret } from './secret.js';

/** Scopes of the connected workspace account: mail is send-only. */
export const WORKSPACE_SCOPES = [
  'https://www.googleapis.com/auth/gmail.send',
  'https://www.googleapis.com/auth/spreadsheets.readonly',
  'https://www.googleapis.com/auth/drive.metadata.readonly',
] as const;

/** What may be shown about a connected account (no token material). */
export interface ConnectedAccount {
  userId: number;
  provider: string;
  email: string | null;
  scopes: string[];
  connectedAt: string;
  /** Expiry of the cached access token (ms since epoch), if one is cached. */
  accessExpiresAt: number | null;
  hasRefreshToken: boolean;
}

/** Decrypted token material, for the token service only. */
export interface AccountTokens {
  accessToken?: string;
  accessExpiresAt?: number;
  refreshToken?: string;
}

/** A token endpoint answer (RFC 6749 §5.1, Google's shape). */
export interface TokenResponse {
  access_token: string;
  expires_in: number;
  refresh_token?: string;
  scope?: string;
  token_type: string;
  id_token?: string;
}

/**
 * A token endpoint's success body, checked before any field is used. `expires_in` may come as a
 * number or a numeric string (3600 when absent); `token_type` is Bearer when absent.
 */
const TokenResponseSchema: z.ZodType<TokenResponse> = z.object({
  access_token: z.string().min(1),
  expires_in: z
    .union([z.number(), z.string().regex(/^\d+$/).transform(Number)])
    .optional()
    .transform((s) => s ?? 3600),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
  token_type: z.string().default('Bearer'),
  id_token: z.string().optional(),
});

/** An OAuth error body (RFC 6749 §5.2): `error` when it is a plain error name. */
const OAuthErrorSchema = z.object({ error: z.string().regex(/^[a-z_]{1,40}$/) });

/** What went wrong, safe to log and show: the provider's error name, else the HTTP status. */
function oauthErrorKind(body: unknown, status: number): string {
  const e = OAuthErrorSchema.safeParse(body);
  return e.success ? e.data.error : `http_${status}`;
}

export interface OAuthClientConfig {
  tokenUrl: string;
  clientId?: string;
  clientSecret?: Secret;
  timeoutMs?: number;
}

/** POST to the token endpoint; errors become ERR_ACCOUNT_OAUTH (never echoing the answer body). */
export async function tokenRequest(cfg: OAuthClientConfig, params: Record<string, string>): Promise<TokenResponse> {
  if (!cfg.clientId) throw new AppError('ERR_ACCOUNT_NOT_CONFIGURED', 'AIRLOCK_GOOGLE_CLIENT_ID is not set');
  const body = new URLSearchParams({ ...params, client_id: cfg.clientId });
  if (cfg.clientSecret) body.set('client_secret', cfg.clientSecret.reveal());
  let res: Response;
  try {
    res = await fetch(cfg.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(cfg.timeoutMs ?? 15_000),
    });
  } catch (err) {
    throw new AppError('ERR_ACCOUNT_OAUTH', 'token endpoint unreachable', { retryable: true, cause: err });
  }
  const answer: unknown = await res.json().catch(() => undefined);
  const grant = res.ok ? TokenResponseSchema.safeParse(answer) : undefined;
  if (grant?.success) return grant.data;
  // Refused, or a success body without a usable access token (malformed: nothing of it is used).
  const kind = oauthErrorKind(answer, res.status);
  throw new AppError('ERR_ACCOUNT_OAUTH', `token endpoint refused the grant (${kind})`, {
    retryable: res.status >= 500,
    details: { oauth_error: kind },
  });
}

/**
 * Revoke a grant at the provider (RFC 7009; Google: POST /revoke, form `token=`). Revoking the
 * refresh token ends the whole grant, access tokens included. Answers whether the provider
 * confirmed it (2xx, or 400 invalid_token: already gone); never throws, never logs the token.
 */
export async function revokeToken(
  url: string,
  token: string,
  timeoutMs = 10_000,
): Promise<{ revoked: boolean; reason?: string }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ token }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const answer: unknown = await res.json().catch(() => undefined);
    if (res.ok) return { revoked: true };
    const kind = oauthErrorKind(answer, res.status);
    return kind === 'invalid_token' ? { revoked: true, reason: 'already invalid' } : { revoked: false, reason: kind };
  } catch (err) {
    return { revoked: false, reason: err instanceof Error && err.name === 'TimeoutError' ? 'timeout' : 'unreachable' };
  }
}
