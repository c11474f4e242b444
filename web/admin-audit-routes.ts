import type { Router } from 'express';
import { AppError } from '../core/index.js';
import { turnAuditView } from '../domain/chat/turn-audit.js';
import { asyncHandler, type WebContext } from './context.js';
import { superuserRouter } from './route-kit.js';
import type { TurnAudit } from './admin-api.js';

/**
 * /api/admin/turns/:turnId (superuser, session): one chat turn with everything it caused, for
 * the audit page. The view is built in domain/chat/turn-audit.ts; this route authorises (a
 * superuser router), calls and answers.
 */
export function adminAuditRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  r.get(
    '/:turnId',
    asyncHandler(async (req, res) => {
      const view = await turnAuditView(db, String(req.params.turnId));
      if (!view) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn');
      res.json(view satisfies TurnAudit);
    }),
  );
  return r;
}
