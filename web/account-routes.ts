import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { AppError, randomToken, revokeToken, tokenRequest, WORKSPACE_SCOPES } from '../core/index.js';
import { accountView, type AccountStore } from '../domain/accounts.js';
import { asyncHandler, requireUser, type WebContext, type WebServices } from './context.js';
import { resolveRedirect } from './redirect.js';
import { validateBody } from './validate.js';
import { ConnectAccountSchema } from '../core/api-requests.js';
import { saveSession } from './auth-routes.js';
import type { AuthorizationUrl } from './platform-api.js';
import type { AccountDisconnected } from '../core/api-types-account.js';

/** How long a started connect handshake stays valid. */
export const ACCOUNT_STATE_TTL_MS = 10 * 60 * 1000;
const STATE_KEY = 'account:';

/** Services this area takes from the daemon (ctx.services). */
export type AccountWebServices = Pick<WebServices, 'accounts' | 'tokenService' | 'sandboxes'>;

interface PendingConnect {
  verifier: string;
  userId: number;
  returnTo: string;
  at: number;
}

/** The e-mail claim of an id_token, for display only (the token endpoint answered us directly over TLS). */
function emailOf(idToken: string | undefined): string | null {
  try {
    const payload = JSON.parse(Buffer.from((idToken ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      email?: unknown;
    };
    return typeof payload.email === 'string' ? payload.email.slice(0, 320) : null;
  } catch {
    return null; // no or malformed id_token: the status simply shows no e-mail
  }
}

/** What the account routes share: the provider config, the services, the store and the callback URI. */
interface AccountDeps {
  ctx: WebContext;
  g: WebContext['config']['google'];
  services: AccountWebServices;
  store: AccountStore;
  redirectUri: string;
}

const pending = (req: Request): Record<string, unknown> => (req.session.oauth ??= {});

/**
 * After a connect, warm sandboxes must not keep the previous grant: the same account connected
 * again gets its new token pushed in; another account (a different or unknown e-mail) ends them, since
 * their mail sender and conversation belong to the old one. A first connect changes nothing:
 * those sandboxes have no account routes (the tools ask for a new chat session).
 */
async function refreshLiveSandboxes(
  services: AccountWebServices,
  userId: number,
  before: { email: string | null } | undefined,
  after: string | null | undefined,
  accessToken: string,
): Promise<void> {
  if (!before) return;
  // An account whose e-mail is unknown cannot be told apart: treated as another one.
  if (before.email && before.email === after) await services.tokenService.pushToUser(userId, accessToken);
  else await services.sandboxes.killForUser(userId, 'account changed');
}

/** The provider's authorization URL for a connect (authorization code + PKCE S256, offline, consent). */
function authorizationUrl(d: AccountDeps, clientId: string, state: string, verifier: string): URL {
  const { g, redirectUri } = d;
  const u = new URL(g.authUrl);
  u.searchParams.set('client_id', clientId);
  u.searchParams.set('redirect_uri', redirectUri);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('scope', WORKSPACE_SCOPES.join(' '));
  u.searchParams.set('access_type', 'offline');
  u.searchParams.set('prompt', 'consent');
  u.searchParams.set('include_granted_scopes', 'false');
  u.searchParams.set('state', state);
  u.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
  u.searchParams.set('code_challenge_method', 'S256');
  return u;
}

/** GET /api/account/callback: checks the handshake, takes the tokens, stores them and redirects back. */
async function completeConnect(d: AccountDeps, req: Request, res: Response): Promise<void> {
  const { ctx, g, services, store, redirectUri } = d;
  const state = typeof req.query.state === 'string' ? req.query.state : '';
  const bag = pending(req);
  const p = bag[STATE_KEY + state] as PendingConnect | undefined;
  delete bag[STATE_KEY + state];
  if (!state || !p || p.userId !== req.user!.id || Date.now() - p.at > ACCOUNT_STATE_TTL_MS) {
    throw new AppError('ERR_ACCOUNT_STATE', 'unknown or expired connect attempt; start again');
  }
  if (typeof req.query.error === 'string') {
    const kind = /^[a-z_]{1,40}$/.test(req.query.error) ? req.query.error : 'error';
    throw new AppError('ERR_ACCOUNT_DENIED', `the provider did not grant access (${kind})`);
  }
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  if (!code) throw new AppError('ERR_VALIDATION', 'code: missing');
  const tok = await tokenRequest(
    { tokenUrl: g.tokenUrl, clientId: g.clientId, clientSecret: g.clientSecret },
    { grant_type: 'authorization_code', code, code_verifier: p.verifier, redirect_uri: redirectUri },
  );
  const granted = (tok.scope ?? WORKSPACE_SCOPES.join(' ')).split(' ').filter(Boolean);
  const missing = WORKSPACE_SCOPES.filter((s) => !granted.includes(s));
  const previous = await store.get(req.user!.id);
  const email = emailOf(tok.id_token);
  // The record and its action-log entry, in one transaction.
  await store.connect(
    req.user!.id,
    {
      email,
      scopes: granted,
      accessToken: tok.access_token,
      expiresAt: Date.now() + tok.expires_in * 1000,
      refreshToken: tok.refresh_token,
    },
    {
      event: 'account.connected',
      actorId: req.user!.id,
      subjectId: req.user!.id,
      data: { scopes: granted, offline: !!tok.refresh_token },
    },
  );
  await refreshLiveSandboxes(services, req.user!.id, previous, email, tok.access_token);
  req.log.info({ event: 'account_connected', missingScopes: missing }, 'account connected');
  const back = new URL(p.returnTo, ctx.config.publicOrigin);
  back.searchParams.set('account', missing.length ? 'partial' : 'connected');
  await saveSession(req);
  // The fragment too: the chat page's return_to is `/#/chat/<id>`, the chat the user was in.
  res.redirect(302, back.pathname + back.search + back.hash);
}

/** DELETE /api/account: revoke at the provider, delete the record, end the user's sandboxes. */
async function disconnect(d: AccountDeps, req: Request, res: Response): Promise<void> {
  const { g, services, store } = d;
  const userId = req.user!.id;
  let token: string | undefined;
  try {
    const t = await store.tokens(userId);
    token = t?.refreshToken ?? t?.accessToken;
  } catch (err) {
    // Undecryptable (the data-folder key changed): the record goes anyway; nothing to revoke.
    req.log.warn({ err: (err as Error).message }, 'connected account tokens unreadable at disconnect');
  }
  // Revoked at the provider first, so that the record's deletion and its action-log entry
  // (which says what the provider answered) are one transaction; whatever the provider
  // answers, the record then goes, and Airlock holds no token after this.
  const revocation = token ? await revokeToken(g.revokeUrl, token) : undefined;
  const revoked = revocation?.revoked ?? null;
  const had = await store.disconnect(userId, {
    event: 'account.disconnected',
    actorId: userId,
    subjectId: userId,
    severity: revoked === false ? 'warning' : 'info',
    data: { revoked_at_provider: revoked, ...(revocation?.reason ? { reason: revocation.reason } : {}) },
  });
  // No warm sandbox keeps the old token either: the user's sandboxes end, and the next
  // prompt starts a fresh one without an account.
  if (had) await services.sandboxes.killForUser(userId, 'account disconnected');
  req.log.info({ event: 'account_disconnected', had, revoked, reason: revocation?.reason }, 'account disconnected');
  res.json({ connected: false, revoked_at_provider: revoked } satisfies AccountDisconnected);
}

/**
 * /api/account: the user's connected workspace account (the OAuth credential record of docs/rules.md#identity-rules),
 * separate from login. Authorization code + PKCE (S256), offline access, send-only mail scope.
 *   GET    /api/account           status
 *   POST   /api/account/connect   {return_to?} → {authorization_url}
 *   GET    /api/account/callback  provider redirect → stores tokens (encrypted) → 302 return_to
 *   DELETE /api/account           disconnect: delete, revoke at the provider, end sandboxes → {connected:false, revoked_at_provider}
 */
export function accountRoutes(ctx: WebContext): Router {
  const r = Router();
  const g = ctx.config.google;
  const services = ctx.services;
  const store = services.accounts;
  const redirectUri = `${ctx.config.publicOrigin}/api/account/callback`;
  const d: AccountDeps = { ctx, g, services, store, redirectUri };

  r.get(
    '/',
    requireUser,
    asyncHandler(async (req, res) => {
      res.json(accountView(await store.get(req.user!.id)));
    }),
  );

  r.post('/connect', requireUser, (req, res) => {
    const body = validateBody(ConnectAccountSchema, req.body ?? {});
    // Checked after resolution (dot segments removed), path only: see web/redirect.ts.
    const returnTo = body.return_to === undefined ? '/' : resolveRedirect(body.return_to, ctx.config.publicOrigin);
    if (returnTo === null) throw new AppError('ERR_ACCOUNT_RETURN_TO', 'return_to must be a path on this service');
    if (!g.clientId)
      throw new AppError(
        'ERR_ACCOUNT_NOT_CONFIGURED',
        'workspace account connection is not configured (AIRLOCK_GOOGLE_CLIENT_ID)',
      );
    const state = randomToken(24);
    const verifier = randomToken(48);
    const bag = pending(req);
    // Drop stale handshakes so the session does not grow.
    for (const [k, v] of Object.entries(bag))
      if (k.startsWith(STATE_KEY) && Date.now() - (v as PendingConnect).at > ACCOUNT_STATE_TTL_MS) delete bag[k];
    bag[STATE_KEY + state] = { verifier, userId: req.user!.id, returnTo, at: Date.now() } satisfies PendingConnect;
    const u = authorizationUrl(d, g.clientId, state, verifier);
    req.log.info({ event: 'account_connect_started' }, 'account connect started');
    res.json({ authorization_url: u.toString() } satisfies AuthorizationUrl);
  });

  r.get(
    '/callback',
    requireUser,
    asyncHandler((req, res) => completeConnect(d, req, res)),
  );

  r.delete(
    '/',
    requireUser,
    asyncHandler((req, res) => disconnect(d, req, res)),
  );

  return r;
}
