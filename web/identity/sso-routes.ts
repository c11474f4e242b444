import { Router } from 'express';
import * as oidc from 'openid-client';
import { AppError, Encryptor, randomToken } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { createUser, getUserByEmail, usernameTaken, type User } from '../../domain/users.js';
import type { SsoProviderList } from '../admin-api.js';
import { regenerate, saveSession } from '../auth-routes.js';
import { resolveRedirect } from '../redirect.js';
import { asyncHandler, type WebContext } from '../context.js';
import {
  recordSsoLogin,
  SOCIAL_ACCOUNT_ADDED,
  SOCIAL_ACCOUNT_UPDATED,
  type IdentitySignals,
} from '../../domain/identity/events.js';
import {
  decryptClientSecret,
  getConnectionByProvider,
  listConnections,
  type IdpConnectionRow,
} from '../../domain/identity/store.js';

/** Path of the browser form post that starts an SSO login (docs/rules.md#versioning: under /_login/browser/v1/). */
export const SSO_REDIRECT_PATH = '/_login/browser/v1/auth/provider/redirect';
/** Return point from the provider; the IdP client must list `${publicOrigin}${callbackPath(p)}`. */
export const callbackPath = (provider: string) => `/accounts/${provider}/login/callback/`;

const PENDING_TTL_MS = 10 * 60 * 1000;
const MAX_PENDING = 5;
const SCOPE = 'openid email profile';

interface Pending {
  provider: string;
  connectionId: number;
  codeVerifier: string;
  nonce: string;
  callbackUrl: string;
  createdAt: number;
}

/** Discovery results per connection, refreshed when the connection row changes. */
class DiscoveryCache {
  readonly #cache = new Map<number, { key: string; config: Promise<oidc.Configuration> }>();
  constructor(private readonly enc: Encryptor) {}

  get(c: IdpConnectionRow): Promise<oidc.Configuration> {
    const key = `${c.updated_at}|${c.issuer}|${c.client_id}`;
    const hit = this.#cache.get(c.id);
    if (hit && hit.key === key) return hit.config;
    const issuer = new URL(c.issuer);
    // Plain http only for a loopback issuer (the local emulator); real IdPs are https.
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
    const secret = decryptClientSecret(this.enc, c);
    const config = oidc
      .discovery(
        issuer,
        c.client_id,
        secret ? { client_secret: secret } : undefined,
        secret ? oidc.ClientSecretPost(secret) : oidc.None(),
        {
          execute: [
            // Without this openid-client v6 checks only iss/aud/exp/nonce of an ID token that came
            // from the token endpoint, not its signature: a forged or altered token (another e-mail)
            // would log in as anyone. With it, the signature is verified against the IdP's JWKS
            // (jwks_uri from discovery; fetched once, cached ≤ 5 min, refetched on an unknown kid).
            oidc.enableNonRepudiationChecks,
            ...(loopback && issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : []),
          ],
          timeout: 10,
        },
      )
      .then((config) => {
        // A JWKS the IdP cannot serve is "IdP unreachable" (502), not a bad token.
        const jwksUri = config.serverMetadata().jwks_uri;
        if (!jwksUri)
          throw new Error('the discovery document names no jwks_uri: ID token signatures cannot be checked');
        const jwksHref = new URL(jwksUri).href;
        config[oidc.customFetch] = async (url, options) => {
          const init = options as RequestInit;
          if (url !== jwksHref) return fetch(url, init);
          let res: Response;
          try {
            res = await fetch(url, init);
          } catch (err) {
            throw new AppError('ERR_SSO_DISCOVERY', "the identity provider's signing keys cannot be fetched", {
              cause: err,
            });
          }
          if (!res.ok)
            throw new AppError('ERR_SSO_DISCOVERY', "the identity provider's signing keys cannot be fetched", {
              details: { upstream_status: res.status },
            });
          return res;
        };
        return config;
      })
      .catch((err: unknown) => {
        this.#cache.delete(c.id);
        throw new AppError('ERR_SSO_DISCOVERY', 'the identity provider cannot be reached', { cause: err });
      });
    this.#cache.set(c.id, { key, config });
    return config;
  }
}

/** `callback_url` must be absolute and on the configured public origin: no open redirect. */
export function checkCallbackUrl(raw: unknown, publicOrigin: string): string {
  if (typeof raw !== 'string' || raw.length > 2048)
    throw new AppError('ERR_SSO_CALLBACK_URL', 'callback_url is required');
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // Not absolute (or not a URL at all): refused below with the same code.
    throw new AppError('ERR_SSO_CALLBACK_URL', 'callback_url must be an absolute URL');
  }
  // Checked after resolution (dot segments removed), then rebuilt from the public origin and
  // the resolved path only: `http://origin/.//evil.example/x` is refused, see web/redirect.ts.
  const path =
    u.protocol === 'http:' || u.protocol === 'https:'
      ? resolveRedirect(raw, publicOrigin, { allowAbsolute: true })
      : null;
  if (path === null) {
    throw new AppError('ERR_SSO_CALLBACK_URL', "callback_url must be on this service's own origin");
  }
  return new URL(publicOrigin).origin + path;
}

async function activeConnection(db: Sql, provider: unknown): Promise<IdpConnectionRow> {
  const c = typeof provider === 'string' ? await getConnectionByProvider(db, provider) : undefined;
  if (!c || c.is_active !== 1) throw new AppError('ERR_SSO_PROVIDER', 'unknown or inactive identity provider');
  return c;
}

/** What the SSO routes share. */
interface SsoKit {
  r: Router;
  ctx: WebContext;
  discovery: DiscoveryCache;
  signals: IdentitySignals;
}

/**
 * Single sign-on: GET /api/auth/sso-providers, the redirect form post and the callback.
 *
 * CSRF: the redirect endpoint is a browser form post outside /api (no X-CSRF-Token possible).
 * Starting a login for a victim gains an attacker nothing (the victim logs into their own IdP
 * account); the callback is bound to this browser session by `state` (single use, kept in the
 * session), the ID token by `nonce`, the code by PKCE, and the session cookie is SameSite=Lax.
 */
export function ssoRoutes(ctx: WebContext, enc: Encryptor, signals: IdentitySignals): Router {
  const r = Router();
  const discovery = new DiscoveryCache(enc);

  r.get(
    '/api/auth/sso-providers',
    asyncHandler(async (_req, res) => {
      const rows = (await listConnections(ctx.database.sql)).filter((c) => c.is_active === 1);
      res.json({
        providers: rows.map((c) => ({
          id: c.provider,
          name: c.display_name,
          flows: ['provider_redirect'],
          redirect_url: SSO_REDIRECT_PATH,
        })),
      } satisfies SsoProviderList);
    }),
  );
  const kit: SsoKit = { r, ctx, discovery, signals };
  ssoRedirectRoute(kit);
  ssoCallbackRoute(kit);

  return r;
}

/** The redirect form post: start the handshake (PKCE, state, nonce kept in the session). */
function ssoRedirectRoute({ r, ctx, discovery }: SsoKit): void {
  r.post(
    SSO_REDIRECT_PATH,
    asyncHandler(async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const c = await activeConnection(ctx.database.sql, body.provider);
      if (body.process !== 'login') throw new AppError('ERR_SSO_PROCESS', 'process must be "login"');
      const callbackUrl = checkCallbackUrl(body.callback_url, ctx.config.publicOrigin);
      const config = await discovery.get(c);
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: ctx.config.publicOrigin + callbackPath(c.provider),
        scope: SCOPE,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      const now = Date.now();
      const pending = Object.entries((req.session.oauth ?? {}) as Record<string, Pending>)
        .filter(([, p]) => now - p.createdAt < PENDING_TTL_MS)
        .slice(-(MAX_PENDING - 1));
      pending.push([
        state,
        { provider: c.provider, connectionId: c.id, codeVerifier, nonce, callbackUrl, createdAt: now },
      ]);
      req.session.oauth = Object.fromEntries(pending);
      await saveSession(req);
      res.redirect(303, url.href);
    }),
  );
}

/** The IdP's callback: check the handshake, validate the ID token, sign the user in. */
function ssoCallbackRoute({ r, ctx, discovery, signals }: SsoKit): void {
  r.get(
    '/accounts/:provider/login/callback/',
    asyncHandler(async (req, res) => {
      const provider = req.params.provider as string;
      const state = typeof req.query.state === 'string' ? req.query.state : '';
      const all = (req.session.oauth ?? {}) as Record<string, Pending>;
      const pending = Object.hasOwn(all, state) ? all[state] : undefined;
      if (pending) {
        // Single use: a replayed callback finds no pending handshake.
        delete all[state];
        req.session.oauth = all;
      }
      if (!pending || pending.provider !== provider || Date.now() - pending.createdAt > PENDING_TTL_MS) {
        throw new AppError('ERR_SSO_STATE', 'unknown, used or expired login state; start the login again');
      }
      if (typeof req.query.error === 'string') {
        throw new AppError('ERR_SSO_DENIED', 'the identity provider refused the login', {
          details: { provider_error: req.query.error.slice(0, 64) },
        });
      }
      const c = await activeConnection(ctx.database.sql, provider);
      if (c.id !== pending.connectionId) throw new AppError('ERR_SSO_STATE', 'the connection changed during login');
      const config = await discovery.get(c);
      const redirectUri = ctx.config.publicOrigin + callbackPath(provider);
      const currentUrl = new URL(req.originalUrl, ctx.config.publicOrigin);
      let claims: oidc.IDToken;
      try {
        const tokens = await oidc.authorizationCodeGrant(
          config,
          currentUrl,
          {
            pkceCodeVerifier: pending.codeVerifier,
            expectedState: state,
            expectedNonce: pending.nonce,
            idTokenExpected: true,
          },
          { redirect_uri: redirectUri },
        );
        claims = tokens.claims()!;
      } catch (err) {
        const e = ssoError(err);
        // A token that fails validation may be an attack: warn, by code only (never the token).
        if (e.code === 'ERR_SSO_ID_TOKEN')
          req.log.warn({ provider, code: e.code, reason: (err as { code?: string }).code }, 'sso id token refused');
        throw e;
      }
      const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : '';
      const verified = claims.email_verified === true || claims.email_verified === 'true';
      if (!email || !verified) {
        req.log.info({ provider, event: 'sso_refused_unverified' }, 'sso login refused');
        throw new AppError(
          'ERR_SSO_EMAIL_UNVERIFIED',
          'the identity provider did not confirm a verified e-mail address',
        );
      }
      const db = ctx.database.sql;
      const user = await matchOrCreateUser(db, email, typeof claims.name === 'string' ? claims.name : null);
      if (!user.is_active) throw new AppError('ERR_AUTH_INACTIVE', 'this account is deactivated');

      await regenerate(req);
      const event = { userId: user.id, connectionId: c.id, provider, sub: claims.sub, email };
      // last_login_at, the action-log entry and the ExternalIdentity, in one transaction; the
      // ExternalIdentity exists before the browser goes on to callback_url. The session is the
      // user's only once they are written: a failed write leaves the browser logged out.
      const { known } = await recordSsoLogin(db, event);
      req.session.userId = user.id;
      req.session.csrfToken = randomToken(32);
      signals.emit(known ? SOCIAL_ACCOUNT_UPDATED : SOCIAL_ACCOUNT_ADDED, event);
      req.log.info({ userId: user.id, provider }, 'sso login');
      await saveSession(req);
      res.redirect(303, pending.callbackUrl);
    }),
  );
}

/** Match by verified e-mail, else create a user (no password: SSO only). */
async function matchOrCreateUser(db: Sql, email: string, name: string | null): Promise<User> {
  const found = await getUserByEmail(db, email);
  if (found) return found;
  const taken = await usernameTaken(db, email);
  return createUser(db, { username: taken ? `${email}-${randomToken(4)}` : email, email, displayName: name });
}

/**
 * openid-client codes of a token response whose ID token is not acceptable: a claim (nonce, iss,
 * aud) or timestamp check failed, the token is malformed or its signature does not verify
 * (`OAUTH_INVALID_RESPONSE`), no IdP key matches its `kid`/`alg` (`OAUTH_KEY_SELECTION_FAILED`),
 * or it uses an algorithm we do not accept, such as HS256 or none (`OAUTH_UNSUPPORTED_OPERATION`).
 */
const ID_TOKEN_FAILURES = new Set([
  'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
  'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_KEY_SELECTION_FAILED',
  'OAUTH_UNSUPPORTED_OPERATION',
]);

/** openid-client failures become coded 400s; nothing of the provider's answer is echoed. */
function ssoError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // Our own JWKS fetch failure, wrapped by openid-client as the cause of a ClientError.
  if ((err as { cause?: unknown }).cause instanceof AppError) return (err as { cause: AppError }).cause;
  const e = err as { code?: string; error?: string; cause?: { claim?: string } };
  if (ID_TOKEN_FAILURES.has(e.code ?? '')) {
    return new AppError('ERR_SSO_ID_TOKEN', 'the ID token failed validation', { cause: err });
  }
  if (e.error)
    return new AppError('ERR_SSO_CODE_EXCHANGE', 'the identity provider refused the authorization code', {
      cause: err,
    });
  return new AppError('ERR_SSO_CODE_EXCHANGE', 'the code exchange failed', { cause: err });
}
