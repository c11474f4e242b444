import { Router, type Request, type Response } from 'express';
import { AppError, type MailPreview } from '../core/index.js';
import type { ApprovalPreview } from './chat-api.js';
import type { WebContext } from './context.js';
import { onOwnedChat, type OwnedSession } from './chat-route-kit.js';

const APPROVAL_ID = /^[A-Za-z0-9-]{1,64}$/;

/**
 * The message of a mail send held for approval, for the chat's own user while it waits
 * (docs/chat.md#approvals): GET /sessions/:id/approvals/:approvalId/preview (From, To, Cc, Bcc,
 * Subject, the body as text, the attachments by name, size and type) and
 * GET …/attachments/:n (an image attachment's bytes, for its thumbnail). Another user's chat or
 * an unknown send: 404; a decided send: 410. Nothing here is stored or logged.
 */
export function approvalRoutes(ctx: WebContext, owned: OwnedSession): Router {
  const r = Router();
  // A route on the held send `:approvalId` of the caller's own chat (checked first: web/chat-route-kit.ts).
  const onHeldSend = (handle: (req: Request, res: Response, p: MailPreview) => Promise<void>) =>
    onOwnedChat(owned, async (req, res, s) => {
      const approvalId = String(req.params.approvalId);
      const approvals = ctx.services.approvals;
      if (!APPROVAL_ID.test(approvalId) || !approvals.preview)
        throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
      return handle(req, res, await approvals.preview({ userId: req.user!.id, sessionId: s.id, approvalId }));
    });

  r.get(
    '/sessions/:id/approvals/:approvalId/preview',
    ...onHeldSend(async (req, res, p) => {
      const out: ApprovalPreview = {
        ...p,
        attachments: p.attachments.map((a, n) => ({
          n,
          name: a.name,
          content_type: a.content_type,
          size: a.size,
          thumbnail: a.data !== undefined,
        })),
      };
      res.setHeader('Cache-Control', 'no-store');
      res.json(out);
    }),
  );

  r.get(
    '/sessions/:id/approvals/:approvalId/attachments/:n',
    ...onHeldSend(async (req, res, p) => {
      const n = /^\d{1,3}$/.test(String(req.params.n)) ? Number(req.params.n) : -1;
      const a = p.attachments[n];
      if (!a?.data) throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such image attachment in this held send');
      res.setHeader('Content-Type', a.content_type);
      res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cache-Control', 'no-store');
      res.end(a.data);
    }),
  );
  return r;
}
