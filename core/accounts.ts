import type { Db } from './db.js';
import { nowIso } from './db.js';
import type { Encryptor } from './crypto.js';
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

interface Row {
  user_id: number;
  provider: string;
  email: string | null;
  scopes: string;
  refresh_token_enc: string | null;
  access_token_enc: string | null;
  access_expires_at: number | null;
  connected_at: string;
}

/** connected_accounts, with tokens encrypted at rest (AAD binds each box to its user and kind). */
export class AccountStore {
  readonly #db: Db;
  readonly #enc: Encryptor;
  constructor(db: Db, enc: Encryptor) {
    this.#db = db;
    this.#enc = enc;
  }

  get(userId: number): ConnectedAccount | undefined {
    const r = this.#row(userId);
    if (!r) return undefined;
    return {
      userId: r.user_id,
      provider: r.provider,
      email: r.email,
      scopes: r.scopes.split(' ').filter(Boolean),
      connectedAt: r.connected_at,
      accessExpiresAt: r.access_token_enc ? r.access_expires_at : null,
      hasRefreshToken: !!r.refresh_token_enc,
    };
  }

  tokens(userId: number): AccountTokens | undefined {
    const r = this.#row(userId);
    if (!r) return undefined;
    return {
      accessToken: r.access_token_enc ? this.#enc.decrypt(r.access_token_enc, `account:${userId}:access`) : undefined,
      accessExpiresAt: r.access_expires_at ?? undefined,
      refreshToken: r.refresh_token_enc ? this.#enc.decrypt(r.refresh_token_enc, `account:${userId}:refresh`) : undefined,
    };
  }

  /** Create or replace the user's connected account. */
  connect(userId: number, a: { email?: string | null; scopes: string[]; accessToken: string; expiresAt: number; refreshToken?: string }): void {
    this.#db
      .prepare(
        `INSERT INTO connected_accounts (user_id, email, scopes, refresh_token_enc, access_token_enc, access_expires_at, connected_at, updated_at)
         VALUES (@user_id, @email, @scopes, @refresh, @access, @exp, @now, @now)
         ON CONFLICT(user_id) DO UPDATE SET email = excluded.email, scopes = excluded.scopes,
           refresh_token_enc = COALESCE(excluded.refresh_token_enc, connected_accounts.refresh_token_enc),
           access_token_enc = excluded.access_token_enc, access_expires_at = excluded.access_expires_at,
           connected_at = excluded.connected_at, updated_at = excluded.updated_at`,
      )
      .run({
        user_id: userId,
        email: a.email ?? null,
        scopes: a.scopes.join(' '),
        refresh: a.refreshToken ? this.#enc.encrypt(a.refreshToken, `account:${userId}:refresh`) : null,
        access: this.#enc.encrypt(a.accessToken, `account:${userId}:access`),
        exp: a.expiresAt,
        now: nowIso(),
      });
  }

  /** Cache a refreshed access token (and a rotated refresh token, when the provider sent one). */
  saveAccess(userId: number, accessToken: string, expiresAt: number, refreshToken?: string): void {
    const sets = ['access_token_enc = ?', 'access_expires_at = ?', 'updated_at = ?'];
    const args: unknown[] = [this.#enc.encrypt(accessToken, `account:${userId}:access`), expiresAt, nowIso()];
    if (refreshToken) {
      sets.push('refresh_token_enc = ?');
      args.push(this.#enc.encrypt(refreshToken, `account:${userId}:refresh`));
    }
    this.#db.prepare(`UPDATE connected_accounts SET ${sets.join(', ')} WHERE user_id = ?`).run(...args, userId);
  }

  disconnect(userId: number): boolean {
    return this.#db.prepare('DELETE FROM connected_accounts WHERE user_id = ?').run(userId).changes > 0;
  }

  #row(userId: number): Row | undefined {
    return this.#db.prepare('SELECT * FROM connected_accounts WHERE user_id = ?').get(userId) as Row | undefined;
  }
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

export interface OAuthClientConfig {
  tokenUrl: string;
  clientId?: string;
  clientSecret?: Secret;
  timeoutMs?: number;
}

/** POST to the token endpoint; errors become ERR_ACCOUNT_OAUTH (never echoing the answer body). */
export async function tokenRequest(cfg: OAuthClientConfig, params: Record<string, string>): Promise<TokenResponse> {
  if (!cfg.clientId) throw new AppError('ERR_ACCOUNT_NOT_CONFIGURED', 'AIRLOCK_GOOGLE_CLIENT_ID is not set', { status: 503 });
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
    throw new AppError('ERR_ACCOUNT_OAUTH', 'token endpoint unreachable', { status: 502, retryable: true, cause: err });
  }
  const json = (await res.json().catch(() => ({}))) as Partial<TokenResponse> & { error?: string };
  if (!res.ok || typeof json.access_token !== 'string') {
    const kind = typeof json.error === 'string' && /^[a-z_]{1,40}$/.test(json.error) ? json.error : `http_${res.status}`;
    throw new AppError('ERR_ACCOUNT_OAUTH', `token endpoint refused the grant (${kind})`, {
      status: 502,
      retryable: res.status >= 500,
      details: { oauth_error: kind },
    });
  }
  return { ...json, expires_in: Number(json.expires_in ?? 3600) } as TokenResponse;
}

/**
 * Revoke a grant at the provider (RFC 7009; Google: POST /revoke, form `token=`). Revoking the
 * refresh token ends the whole grant, access tokens included. Answers whether the provider
 * confirmed it (2xx, or 400 invalid_token: already gone); never throws, never logs the token.
 */
export async function revokeToken(url: string, token: string, timeoutMs = 10_000): Promise<{ revoked: boolean; reason?: string }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ token }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = (await res.json().catch(() => ({}))) as { error?: unknown };
    if (res.ok) return { revoked: true };
    const kind = typeof json.error === 'string' && /^[a-z_]{1,40}$/.test(json.error) ? json.error : `http_${res.status}`;
    return kind === 'invalid_token' ? { revoked: true, reason: 'already invalid' } : { revoked: false, reason: kind };
  } catch (err) {
    return { revoked: false, reason: (err as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable' };
  }
}
