import { importPKCS8, SignJWT } from 'jose';
import { AppError } from '../../core/index.js';
import type { ServiceAccountKey } from '../../domain/identity/index.js';

/** Read-only directory scopes (domain-wide delegation must grant exactly these). */
export const DIRECTORY_SCOPES = [
  'https://www.googleapis.com/auth/admin.directory.user.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
];

export const USERS_PAGE = 500;
export const GROUPS_PAGE = 200;
export const MEMBERS_PAGE = 200;
const REQUEST_TIMEOUT_MS = 30_000;
const RATE_LIMIT_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded']);

export interface GoogleUser {
  id: string;
  primaryEmail: string;
  name?: { fullName?: string };
  suspended?: boolean;
  archived?: boolean;
}
export interface GoogleGroup {
  id: string;
  email: string;
  name?: string;
  description?: string;
}
export interface GoogleMember {
  id?: string;
  email?: string;
  type?: string;
  status?: string;
}

export interface DirectoryClientOptions {
  serviceAccount: ServiceAccountKey;
  /** `sub` of the assertion: the admin the service account acts for (domain-wide delegation). */
  delegatedAdminEmail: string;
  /** Admin SDK base URL (config AIRLOCK_GOOGLE_DIRECTORY_BASE_URL). */
  baseUrl: string;
  /** Token endpoint (config AIRLOCK_GOOGLE_TOKEN_URL); also the assertion's `aud`. */
  tokenUrl: string;
  customer?: string;
  /** Attempts per request for retryable answers (default 6). */
  maxAttempts?: number;
  /** First backoff delay; doubles each attempt, with jitter (default 500 ms). */
  baseDelayMs?: number;
  /** Largest single backoff delay (default 32 s). */
  maxDelayMs?: number;
}

/**
 * Google Admin SDK Directory client: a service-account JWT assertion (RS256, jose) exchanged
 * for an access token, then users.list / groups.list / members.list with page tokens.
 * 429, 403 rate-limit reasons and 5xx are retried with exponential backoff and jitter
 * (Retry-After honoured); other failures become ERR_SYNC_UPSTREAM.
 */
export class DirectoryClient {
  readonly #o: Required<Omit<DirectoryClientOptions, 'customer'>> & { customer: string };
  #token?: { value: string; exp: number };
  /** Requests sent (including retries). */
  requests = 0;
  retries = 0;

  constructor(o: DirectoryClientOptions) {
    this.#o = { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 32_000, customer: 'my_customer', ...o };
  }

  async #accessToken(): Promise<string> {
    if (this.#token && this.#token.exp - 60_000 > Date.now()) return this.#token.value;
    const sa = this.#o.serviceAccount;
    let key: CryptoKey;
    try {
      key = await importPKCS8(sa.private_key, 'RS256');
    } catch (err) {
      throw new AppError('ERR_SYNC_SERVICE_ACCOUNT', 'the service-account private key cannot be read', { cause: err });
    }
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope: DIRECTORY_SCOPES.join(' ') })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(sa.private_key_id ? { kid: sa.private_key_id } : {}) })
      .setIssuer(sa.client_email)
      .setSubject(this.#o.delegatedAdminEmail)
      .setAudience(this.#o.tokenUrl)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(key);
    const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
    const res = await this.#send(this.#o.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
    const json = (await res.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error?: string };
    if (!res.ok || !json.access_token) {
      throw new AppError(
        'ERR_SYNC_AUTH',
        `the token endpoint refused the service account (${json.error ?? res.status})`,
        {
          details: { upstream_status: res.status, upstream_error: json.error },
        },
      );
    }
    this.#token = { value: json.access_token, exp: Date.now() + (json.expires_in ?? 3600) * 1000 };
    return this.#token.value;
  }

  /** One HTTP exchange with retries on 429 / 403 rate limits / 5xx / network errors. */
  async #send(url: string, init: RequestInit): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      this.requests++;
      let res: Response | undefined;
      let netErr: unknown;
      try {
        res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      } catch (err) {
        netErr = err;
      }
      let retry = !!netErr;
      if (res && (res.status === 429 || res.status >= 500)) retry = true;
      if (res && res.status === 403) {
        const body = (await res
          .clone()
          .json()
          .catch(() => ({}))) as { error?: { errors?: { reason?: string }[] } };
        const reason = body.error?.errors?.[0]?.reason ?? '';
        retry = RATE_LIMIT_REASONS.has(reason);
      }
      if (!retry) return res!;
      if (attempt >= this.#o.maxAttempts) {
        if (res) return res;
        throw new AppError('ERR_SYNC_UPSTREAM', 'the directory API cannot be reached', { cause: netErr });
      }
      this.retries++;
      const ra = Number(res?.headers.get('retry-after'));
      const backoff = Math.min(this.#o.maxDelayMs, this.#o.baseDelayMs * 2 ** (attempt - 1));
      const delay =
        Number.isFinite(ra) && ra > 0
          ? Math.min(ra * 1000, this.#o.maxDelayMs)
          : backoff / 2 + Math.random() * (backoff / 2);
      await res?.body?.cancel().catch(() => undefined);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  async #get<T>(path: string, params: Record<string, string>): Promise<T> {
    const u = new URL(`${this.#o.baseUrl}/admin/directory/v1${path}`);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    const res = await this.#send(u.href, {
      headers: { authorization: `Bearer ${await this.#accessToken()}`, accept: 'application/json' },
    });
    const json = (await res.json().catch(() => ({}))) as T & {
      error?: { message?: string; errors?: { reason?: string }[] };
    };
    if (!res.ok) {
      const reason = json.error?.errors?.[0]?.reason ?? 'unknown';
      throw new AppError('ERR_SYNC_UPSTREAM', `directory API ${path.split('/')[1]} failed: ${res.status} ${reason}`, {
        details: { upstream_status: res.status, reason },
      });
    }
    return json;
  }

  async #all<T>(path: string, field: string, max: number, extra: Record<string, string> = {}): Promise<T[]> {
    const out: T[] = [];
    let pageToken: string | undefined;
    do {
      const page = await this.#get<Record<string, unknown> & { nextPageToken?: string }>(path, {
        ...extra,
        maxResults: String(max),
        ...(pageToken ? { pageToken } : {}),
      });
      out.push(...((page[field] as T[] | undefined) ?? []));
      pageToken = page.nextPageToken;
    } while (pageToken);
    return out;
  }

  listUsers(): Promise<GoogleUser[]> {
    return this.#all('/users', 'users', USERS_PAGE, {
      customer: this.#o.customer,
      projection: 'basic',
      orderBy: 'email',
    });
  }
  listGroups(): Promise<GoogleGroup[]> {
    return this.#all('/groups', 'groups', GROUPS_PAGE, { customer: this.#o.customer });
  }
  listMembers(groupKey: string): Promise<GoogleMember[]> {
    return this.#all(`/groups/${encodeURIComponent(groupKey)}/members`, 'members', MEMBERS_PAGE);
  }
}
