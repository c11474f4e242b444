import type { StoredApproval } from '../../core/chat-history.js';
import type { Sql } from '../db/index.js';
import { recipientFields } from '../mail.js';

/** States of a held send the user was asked about (a `pending` one whose turn ended was refused with it). */
const ASKED_STATES = ['pending', 'approved', 'denied', 'timed_out'] as const;

function list(s: string): string[] {
  try {
    const v: unknown = JSON.parse(s);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * The approvals of a chat's turns, by turn, from `mail_holds` (docs/chat.md#approvals): who a
 * held send went to, its subject, attachment names and sizes, and the decision — never its body,
 * which the database never had. Only sends someone was asked about (asked recipients) are shown.
 */
export async function turnApprovals(db: Sql, sessionId: string, turnIds: readonly string[]): Promise<Map<string, StoredApproval[]>> {
  const out = new Map<string, StoredApproval[]>();
  if (!turnIds.length) return out;
  const rows = await db
    .selectFrom('mail_holds')
    .select(['id', 'turn_id', 'call_id', 'recipients', 'recipient_fields', 'asked', 'subject', 'attachments', 'state', 'scope', 'created_at', 'decided_at'])
    .where('session_id', '=', sessionId)
    .where('turn_id', 'in', turnIds)
    .where('state', 'in', ASKED_STATES)
    .orderBy('created_at')
    .execute();
  for (const r of rows) {
    const asked = list(r.asked);
    if (!asked.length || !r.turn_id) continue;
    let attachments: StoredApproval['attachments'] = [];
    try {
      const v: unknown = JSON.parse(r.attachments);
      if (Array.isArray(v)) attachments = v.map((a: { name?: unknown; size?: unknown }) => ({ name: String(a?.name ?? ''), size: Number(a?.size) || 0 }));
    } catch {
      // unreadable: shown without attachments
    }
    const a: StoredApproval = {
      approval_id: r.id,
      call_id: r.call_id,
      recipients: list(r.recipients),
      ...(recipientFields(r.recipient_fields) ? { fields: recipientFields(r.recipient_fields) } : {}),
      ask: asked,
      subject: r.subject,
      attachments,
      state: r.state as StoredApproval['state'],
      ...(r.scope ? { scope: r.scope } : {}),
      created_at: r.created_at,
      decided_at: r.decided_at,
    };
    const l = out.get(r.turn_id) ?? [];
    l.push(a);
    out.set(r.turn_id, l);
  }
  return out;
}
