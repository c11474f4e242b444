/**
 * /api/settings: a signed-in user's own settings (docs/chat.md "Settings"). The colour scheme is
 * the browser's (localStorage, applied before the first paint); the server keeps the model a new
 * chat starts with and the password.
 *   GET   /api/settings            → {default_model_id, has_password, password_min, password_max}
 *   PATCH /api/settings            {default_model_id: id | null} → the same view
 *   POST  /api/settings/password   {current_password, new_password} → {sessions_ended}
 */
import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError, verifyPassword } from '../core/index.js';
import { LoginLimiter } from '../domain/login-limits.js';
import {
  changeOwnPassword,
  defaultModelOf,
  passwordHashOf,
  PASSWORD_MAX,
  PASSWORD_MIN,
  setDefaultModel,
} from '../domain/user-admin.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { checkPick, MODEL_ID_PATTERN } from './chat-model-routes.js';
import { problemsError } from './validate.js';
import type { SettingsView } from './admin-api.js';
import type { PasswordChanged } from './platform-api.js';

export const SettingsChangeSchema = z
  .object({ default_model_id: z.string().regex(new RegExp(MODEL_ID_PATTERN), 'must be a model id').nullable() })
  .strict();
export const PasswordChangeSchema = z
  .object({
    current_password: z.string().min(1).max(PASSWORD_MAX),
    new_password: z.string().min(PASSWORD_MIN, `must be at least ${PASSWORD_MIN} characters`).max(PASSWORD_MAX),
  })
  .strict();

/** A body checked with zod; a bad one is 400 ERR_VALIDATION naming the field. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  throw problemsError(
    r.error.issues.map((i) => {
      const field = i.path.length ? i.path.join('.') : i.code === 'unrecognized_keys' ? String(i.keys[0]) : '';
      return {
        field,
        message:
          i.code === 'unrecognized_keys'
            ? `"${i.keys[0]}" is not a field here.`
            : `${field || 'The body'}: ${i.message}.`,
      };
    }),
  );
}

async function view(ctx: WebContext, userId: number): Promise<SettingsView> {
  const db = ctx.database.sql;
  return {
    default_model_id: await defaultModelOf(db, userId),
    has_password: (await passwordHashOf(db, userId)) !== null,
    password_min: PASSWORD_MIN,
    password_max: PASSWORD_MAX,
  };
}

export function settingsRoutes(ctx: WebContext): Router {
  const r = Router();
  // The login limits guard the current-password check too: guessing here counts as guessing at login.
  const limiter = new LoginLimiter(ctx.database.sql, {
    maxFailures: ctx.config.login.maxFailures,
    windowMs: ctx.config.login.windowS * 1000,
  });
  r.use(requireUser);

  r.get(
    '/',
    asyncHandler(async (req, res) => {
      res.json(await view(ctx, req.user!.id));
    }),
  );

  r.patch(
    '/',
    asyncHandler(async (req, res) => {
      const body = parseBody(SettingsChangeSchema, req.body);
      if (body.default_model_id !== null) await checkPick(ctx, req.user!.id, body.default_model_id);
      await setDefaultModel(ctx.database.sql, req.user!.id, body.default_model_id);
      res.json(await view(ctx, req.user!.id));
    }),
  );

  r.post(
    '/password',
    asyncHandler(async (req, res) => {
      const body = parseBody(PasswordChangeSchema, req.body);
      const user = req.user!;
      const hash = await passwordHashOf(ctx.database.sql, user.id);
      if (hash === null)
        throw new AppError('ERR_AUTH_NO_PASSWORD', 'your account signs in by single sign-on and has no password here');
      await checkCurrent(limiter, req, user.username, body.current_password, hash);
      const ended = await changeOwnPassword(ctx.database.sql, user.id, body.new_password, req.sessionID);
      req.log.info({ event: 'password_changed', sessionsEnded: ended }, 'password changed');
      res.json({ sessions_ended: ended } satisfies PasswordChanged);
    }),
  );
  return r;
}

/** The current password, under the login limits (429 ERR_AUTH_RATE_LIMITED; a wrong one waits like a failed login). */
async function checkCurrent(
  limiter: LoginLimiter,
  req: Request,
  username: string,
  password: string,
  hash: string,
): Promise<void> {
  const address = req.ip ?? 'unknown';
  const verdict = await limiter.begin(username, address);
  if (!verdict.ok) {
    req.res?.setHeader('Retry-After', String(verdict.retryAfterS));
    throw new AppError('ERR_AUTH_RATE_LIMITED', 'too many wrong passwords; try again later', {
      details: { retry_after_s: verdict.retryAfterS },
    });
  }
  if (!(await verifyPassword(password, hash))) {
    const wait = await limiter.fail(username, address);
    await new Promise((resolve) => setTimeout(resolve, wait));
    throw new AppError('ERR_AUTH_WRONG_PASSWORD', 'the current password is wrong', {
      details: { field: 'current_password' },
    });
  }
  await limiter.succeed(username, address);
}
