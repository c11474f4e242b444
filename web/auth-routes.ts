import { Router } from 'express';
import { AppError, dummyPasswordHash, randomToken, verifyPassword } from '../core/index.js';
import type { CsrfResponse, LoginResponse, UserView } from './admin-api.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { LoginLimiter } from '../domain/login-limits.js';
import { getCredentials, recordLogin, type User } from '../domain/users.js';
import { logAction } from '../domain/action-log.js';
import { inTransaction } from '../domain/db/index.js';
import { resolveRedirect } from './redirect.js';
import { validateBody } from './validate.js';
import { LoginSchema } from '../core/api-requests.js';

/** The public view of a user, as /api/auth/me and login answer. */
export function userView(u: User): UserView {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    display_name: u.display_name,
    is_superuser: u.is_superuser,
    is_active: u.is_active,
  };
}

/** /api/auth/csrf, login, logout, me. (SSO routes live in the identity area.) */
export function authRoutes(ctx: WebContext): Router {
  const r = Router();
  // The unknown-user hash is made now, so the first failed login for an unknown name costs one
  // scrypt like every other attempt, not two.
  void dummyPasswordHash();
  // Limits in the database (shared by a fleet); rules in domain/login-limits.ts and docs/security.md.
  const limiter = new LoginLimiter(ctx.database.sql, {
    maxFailures: ctx.config.login.maxFailures,
    windowMs: ctx.config.login.windowS * 1000,
  });

  r.get('/csrf', (req, res) => {
    req.session.csrfToken ??= randomToken(32);
    res.json({ csrf_token: req.session.csrfToken } satisfies CsrfResponse);
  });

  r.post(
    '/login',
    asyncHandler(async (req, res) => {
      const body = validateBody(LoginSchema, req.body);
      // `next` (where the page goes after login) is checked after resolution, path only.
      const next = body.next === undefined ? '/' : resolveRedirect(body.next, ctx.config.publicOrigin);
      if (next === null)
        throw new AppError('ERR_VALIDATION', 'next must be a path on this service', { details: { field: 'next' } });
      // req.ip honours X-Forwarded-For only from the proxies AIRLOCK_TRUST_PROXY names.
      const address = req.ip ?? 'unknown';
      const verdict = await limiter.begin(body.username, address);
      if (!verdict.ok) {
        res.setHeader('Retry-After', String(verdict.retryAfterS));
        ctx.services.metrics.logins.inc({ outcome: 'rate_limited' });
        req.log.info({ event: 'login_rate_limited', reason: verdict.reason }, 'login rate limited');
        throw new AppError('ERR_AUTH_RATE_LIMITED', 'too many failed logins; try again later', {
          details: { retry_after_s: verdict.retryAfterS },
        });
      }
      const creds = await getCredentials(ctx.database.sql, body.username);
      // Unknown users still pay for one scrypt so the timing does not tell them apart.
      const ok = await verifyPassword(body.password, creds?.passwordHash ?? (await dummyPasswordHash()));
      if (!creds || !creds.passwordHash || !ok || !creds.user.is_active) {
        const wait = await limiter.fail(body.username, address);
        req.log.info({ event: 'login_failed' }, 'login failed');
        // The progressive delay: the failed answer itself waits, so one-at-a-time guessing slows down.
        await new Promise((resolve) => setTimeout(resolve, wait));
        ctx.services.metrics.logins.inc({ outcome: 'failed' });
        throw new AppError('ERR_AUTH_INVALID_CREDENTIALS', 'wrong username or password');
      }
      await limiter.succeed(body.username, address);
      const user = creds.user;
      await regenerate(req);
      // last_login_at and the action-log entry in one transaction; the session is the user's
      // only once both are written.
      await inTransaction(ctx.database.sql, async (trx) => {
        await recordLogin(trx, user.id);
        await logAction(trx, {
          event: 'auth.login',
          actorId: user.id,
          subjectId: user.id,
          data: { method: 'password' },
        });
      });
      req.session.userId = user.id;
      req.session.csrfToken = randomToken(32);
      req.log.info({ userId: user.id }, 'login');
      ctx.services.metrics.logins.inc({ outcome: 'ok' });
      res.json({ user: userView(user), csrf_token: req.session.csrfToken, next } satisfies LoginResponse);
    }),
  );

  r.post(
    '/logout',
    asyncHandler(async (req, res) => {
      const userId = req.session.userId;
      await new Promise<void>((resolve, reject) => req.session.destroy((err) => (err ? reject(err) : resolve())));
      if (userId) await logAction(ctx.database.sql, { event: 'auth.logout', actorId: userId, subjectId: userId });
      res.clearCookie(SESSION_COOKIE, { path: '/' });
      res.status(204).end();
    }),
  );

  r.get('/me', requireUser, (req, res) => {
    res.json(userView(req.user!) satisfies UserView);
  });

  return r;
}

export const SESSION_COOKIE = 'airlock.sid';

/** Regenerate the session id (login, SSO callback) to stop session fixation. */
export function regenerate(req: import('express').Request): Promise<void> {
  return new Promise((resolve, reject) => req.session.regenerate((err) => (err ? reject(err) : resolve())));
}

/**
 * Store the session now, before answering with a redirect. express-session saves a changed
 * session when the response ends, but it sends the headers (status, Location, Set-Cookie)
 * before that write finishes; a browser follows a redirect on its headers alone, so its next
 * request could read the session before it is stored (seen on PostgreSQL, where the write is
 * truly asynchronous: a fresh SSO login answered 401 on the page it redirected to).
 */
export function saveSession(req: import('express').Request): Promise<void> {
  return new Promise((resolve, reject) => req.session.save((err) => (err ? reject(err) : resolve())));
}
