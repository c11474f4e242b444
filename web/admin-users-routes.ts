import { Router, type Request } from 'express';
import { AppError } from '../core/index.js';
import { listUsers } from '../domain/users.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';
import type { AdminUserList } from './admin-api.js';
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
        throw new AppError('ERR_VALIDATION', `q: must be one text of at most ${MAX_Q} characters`, { details: { field: 'q' } });
      }
      const limit = intParam(req, 'limit', 50, MAX_LIMIT);
      const offset = intParam(req, 'offset', 0, 1e9);
      const { users, total } = await listUsers(ctx.database.sql, { q, limit, offset });
      res.json({ users, total, limit, offset, next_offset: offset + users.length < total ? offset + users.length : null } satisfies AdminUserList);
    }),
  );
  return r;
}
