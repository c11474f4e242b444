/**
 * The audit view of one chat turn (GET /api/admin/turns/:turnId, the admin's audit page): the
 * prompt, each tool call with the upstream requests the proxy made for it, the requests of no tool
 * call (the model's), the mail sends held for approval with their outcome, and the feedback on it.
 * Never a body, token or placeholder: none of them is stored.
 */
import type { TurnAudit } from '../../core/api-types-data-access.js';
import type { Sql } from '../db/index.js';
import { recipientFields, turnAudit } from '../mail/store.js';
import { feedbackOnTurn } from './feedback.js';
import * as store from './store.js';

type RequestRow = Awaited<ReturnType<typeof turnAudit>>['requests'][number];
type HoldRow = Awaited<ReturnType<typeof turnAudit>>['holds'][number];

/** The turn's audit view, or undefined when there is no such turn. */
export async function turnAuditView(db: Sql, turnId: string): Promise<TurnAudit | undefined> {
  const row = /^[A-Za-z0-9-]{1,64}$/.test(turnId) ? await store.turnOwner(db, turnId) : undefined;
  if (!row) return undefined;
  const turn = (await store.storedTurn(db, row.session_id, turnId))!;
  const [{ requests, holds }, feedback] = await Promise.all([turnAudit(db, turnId), feedbackOnTurn(db, turnId)]);
  const calls = new Set(turn.tool_calls.map((c) => c.call_id));
  return {
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
      requests: requests.filter((q) => q.call_id === c.call_id).map(requestView),
    })),
    other_requests: requests.filter((q) => !q.call_id || !calls.has(q.call_id)).map(requestView),
    mail_holds: holds.map(holdView),
    feedback: feedback.map((f) => ({
      user: { id: f.user_id, username: f.username },
      rating: f.rating,
      note: f.note,
      at: f.updated_at,
    })),
  };
}

/** One proxied request as the audit page shows it (route, method, path template, outcome, sizes, time). */
function requestView(q: RequestRow): TurnAudit['other_requests'][number] {
  return {
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
  };
}

/** One held mail send: recipients (To/Cc/Bcc apart when known), who was asked, the outcome. */
function holdView(h: HoldRow): TurnAudit['mail_holds'][number] {
  const fields = recipientFields(h.recipient_fields);
  return {
    id: h.id,
    call_id: h.call_id,
    recipients: JSON.parse(h.recipients) as string[],
    ...(fields ? { fields } : {}),
    asked: JSON.parse(h.asked) as string[],
    subject: h.subject,
    attachments: JSON.parse(h.attachments) as { name: string; size: number }[],
    state: h.state,
    scope: h.scope,
    code: h.code,
    at: h.created_at,
    decided_at: h.decided_at,
  };
}
