// What the superuser admin route files share (web/admin-*-routes.ts, web/data-access/routes.ts):
// their router, the "field: reason" body check of the admin pages, a 204 answer.
import { Router, type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import type { Sql } from '../domain/db/index.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';
import { problemsError } from './validate.js';

/** A router every route of which is for superusers only (401 anonymous, 403 otherwise), and the database its routes use. */
export function superuserRouter(ctx: WebContext): { r: Router; db: Sql } {
  const r = Router();
  r.use(requireSuperuser);
  return { r, db: ctx.database.sql };
}

/**
 * Parse `body` with `schema`; 400 ERR_VALIDATION whose messages the admin mail-policy and
 * chat-model pages show as they are: `field: reason.`, or `"x" is not a field of <what>.`.
 */
export function parseFields<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  throw problemsError(
    r.error.issues.map((i) => {
      const field = i.path.length ? i.path.join('.') : i.code === 'unrecognized_keys' ? String(i.keys[0]) : '';
      return {
        field,
        message:
          i.code === 'unrecognized_keys'
            ? `"${i.keys[0]}" is not a field of ${what}.`
            : `${field || 'The body'}: ${i.message}.`,
      };
    }),
  );
}

/** A route that does `fn` and answers 204 with no body (a delete). */
export function noContent(fn: (req: Request) => Promise<unknown>): RequestHandler {
  return asyncHandler(async (req, res) => {
    await fn(req);
    res.status(204).end();
  });
}
