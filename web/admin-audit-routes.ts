import type { Router } from 'express';
import { AppError } from '../core/index.js';
import * as store from '../domain/chat/store.js';
import { recipientFields, turnAudit } from '../domain/mail/index.js';
import { feedbackOnTurn } from '../domain/chat/feedback.js';
import { asyncHandler, type WebContext } from './context.js';
import { superuserRouter } from './route-kit.js';
import type { TurnAudit } from './admin-api.js';

/**
 * /api/admin/turns/:turnId (superuser, session): one chat turn with everything it caused, for
 * the audit page — the prompt, each tool call with the upstream requests the proxy made for it,
 * the requests of no tool call (the model's), and the mail sends held for approval with their
 * outcome. Never a body, token or placeholder: none of them is stored.
 */
export function adminAuditRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  r.get(
    '/:turnId',
    asyncHandler(async (req, res) => {
      const turnId = String(req.params.turnId);
      const row = /^[A-Za-z0-9-]{1,64}$/.test(turnId) ? await store.turnOwner(db, turnId) : undefined;
      if (!row) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn');
      const turn = (await store.storedTurn(db, row.session_id, turnId))!;
      const { requests, holds } = await turnAudit(db, turnId);
      const request = (q: (typeof requests)[number]) => ({
        id: Number(q.id),
        route: q.route,
        method: q.method,
        template: q.template,
        outcome: q.outcome,
        status: q.status,
        code: q.code,
        req_bytes: q.req_bytes,
        res_bytes: q.res_bytes,
        ms: q.ms,
        recipients: q.recipients,
        node_id: q.node_id,
        at: q.created_at,
      });
      const feedback = await feedbackOnTurn(db, turnId);
      const calls = new Set(turn.tool_calls.map((c) => c.call_id));
      const out: TurnAudit = {
        turn_id: turnId,
        session_id: row.session_id,
        title: row.title,
        user: { id: row.user_id, username: row.username ?? null },
        prompt: turn.prompt,
        status: turn.status,
        stop_reason: turn.stop_reason,
        started_at: turn.started_at,
        ended_at: turn.ended_at,
        usage: turn.usage ?? null,
        tool_calls: turn.tool_calls.map((c) => ({
          call_id: c.call_id,
          tool: c.tool,
          status: c.status,
          duration_ms: c.duration_ms ?? null,
          requests: requests.filter((q) => q.call_id === c.call_id).map(request),
        })),
        other_requests: requests.filter((q) => !q.call_id || !calls.has(q.call_id)).map(request),
        mail_holds: holds.map((h) => ({
          id: h.id,
          call_id: h.call_id,
          recipients: JSON.parse(h.recipients) as string[],
          ...(recipientFields(h.recipient_fields) ? { fields: recipientFields(h.recipient_fields) } : {}),
          asked: JSON.parse(h.asked) as string[],
          subject: h.subject,
          attachments: JSON.parse(h.attachments) as { name: string; size: number }[],
          state: h.state,
          scope: h.scope,
          code: h.code,
          at: h.created_at,
          decided_at: h.decided_at,
        })),
        feedback: feedback.map((f) => ({ user: { id: f.user_id, username: f.username }, rating: f.rating, note: f.note, at: f.updated_at })),
      };
      res.json(out);
    }),
  );
  return r;
}
