import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError } from '../core/index.js';
import { listUsers } from '../domain/users.js';
import { changeUser, generatedPassword, PASSWORD_MAX, PASSWORD_MIN, resetPassword } from '../domain/user-admin.js';
import { parseBody } from './settings-routes.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';
import type { AdminUserChanged, AdminUserList, PasswordReset } from './admin-api.js';
import { intQueryParam } from './query-params.js';

const MAX_LIMIT = 200;
const MAX_Q = 100;

function intParam(req: Request, name: string, dflt: number, max: number): number {
  return intQueryParam(req, name, { min: name === 'limit' ? 1 : 0, max }) ?? dflt;
}

/**
 * GET /api/admin/users (superuser): the accounts, for the admin pages' user pickers.
 * `q` matches a part of the username, e-mail or display name (case-insensitive);
 * `limit` (1–200, default 50) and `offset` page through them by id. Never a password hash.
 */
export function adminUserRoutes(ctx: WebContext): Router {
  const r = Router();
  r.use(requireSuperuser);
  r.get(
    '/',
    asyncHandler(async (req, res) => {
      const q = req.query.q;
      if (q !== undefined && (typeof q !== 'string' || q.length > MAX_Q)) {
        throw new AppError('ERR_VALIDATION', `q: must be one text of at most ${MAX_Q} characters`, {
          details: { field: 'q' },
        });
      }
      const limit = intParam(req, 'limit', 50, MAX_LIMIT);
      const offset = intParam(req, 'offset', 0, 1e9);
      const { users, total } = await listUsers(ctx.database.sql, { q, limit, offset });
      res.json({
        users,
        total,
        limit,
        offset,
        next_offset: offset + users.length < total ? offset + users.length : null,
      } satisfies AdminUserList);
    }),
  );
  userChangeRoutes(ctx, r);
  return r;
}

export const UserChangeSchema = z
  .object({ is_active: z.boolean(), is_superuser: z.boolean() })
  .partial()
  .strict()
  .refine((b) => b.is_active !== undefined || b.is_superuser !== undefined, 'name is_active or is_superuser');
export const PasswordResetSchema = z
  .object({ password: z.string().min(PASSWORD_MIN, `must be at least ${PASSWORD_MIN} characters`).max(PASSWORD_MAX) })
  .partial()
  .strict();

function userId(req: Request): number {
  const raw = String(req.params.id);
  if (!/^[1-9]\d{0,9}$/.test(raw)) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
  return Number(raw);
}

/**
 * PATCH /api/admin/users/:id {is_active?, is_superuser?}: deactivate (web sessions and live
 * sandboxes end), reactivate, promote, demote; never the admin's own account (409 ERR_USER_SELF)
 * nor the last active superuser (409 ERR_USER_LAST_SUPERUSER).
 * POST /api/admin/users/:id/password {password?}: set a password, or with no body a generated one
 * returned once; the user's web sessions end. Each change is in the action log.
 */
function userChangeRoutes(ctx: WebContext, r: Router): void {
  r.patch(
    '/:id',
    asyncHandler(async (req, res) => {
      const id = userId(req);
      const body = parseBody(UserChangeSchema, req.body);
      const out = await changeUser(ctx.database.sql, req.user!.id, id, body);
      let sandboxesEnded: number | null = null;
      if (out.deactivated) {
        // After the commit: the account is inactive and its web sessions gone already, so a failure here is logged, not fatal.
        try {
          const n = await ctx.services.sandboxes.killForUser(id, 'user deactivated');
          sandboxesEnded = typeof n === 'number' ? n : null;
        } catch (err) {
          req.log.warn({ userId: id, err }, 'could not stop the sandboxes of a deactivated user');
        }
      }
      req.log.info({ subjectId: id, ...body }, 'user changed by an admin');
      res.json({
        user: out.user,
        sessions_ended: out.sessionsEnded,
        sandboxes_ended: sandboxesEnded,
      } satisfies AdminUserChanged);
    }),
  );

  r.post(
    '/:id/password',
    asyncHandler(async (req, res) => {
      const id = userId(req);
      const body = parseBody(PasswordResetSchema, req.body ?? {});
      const generated = body.password === undefined;
      const password = body.password ?? generatedPassword();
      const ended = await resetPassword(ctx.database.sql, req.user!.id, id, password, generated);
      req.log.info({ subjectId: id, generated }, 'password reset by an admin');
      res.setHeader('Cache-Control', 'no-store');
      res.json({ sessions_ended: ended, ...(generated ? { password } : {}) } satisfies PasswordReset);
    }),
  );
}
