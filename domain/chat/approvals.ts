import type { StoredApproval, StoredConnectorApproval } from '../../core/chat-history.js';
import { nowIso, type Sql } from '../db/index.js';
import { recipientFields } from '../mail/store.js';

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
 * The approvals of a chat's turns, by turn, oldest first (docs/chat.md#approvals): the mail sends
 * someone was asked about and the connector calls held for the user.
 */
export async function turnApprovals(
  db: Sql,
  sessionId: string,
  turnIds: readonly string[],
  running: ReadonlySet<string> = new Set(),
): Promise<Map<string, (StoredApproval | StoredConnectorApproval)[]>> {
  const out = new Map<string, (StoredApproval | StoredConnectorApproval)[]>();
  if (!turnIds.length) return out;
  const all = [
    ...(await mailApprovals(db, sessionId, turnIds)),
    ...(await connectorApprovals(db, sessionId, turnIds, running)),
  ];
  all.sort((a, b) => (a[1].created_at < b[1].created_at ? -1 : a[1].created_at > b[1].created_at ? 1 : 0));
  for (const [turnId, a] of all) {
    const l = out.get(turnId) ?? [];
    l.push(a);
    out.set(turnId, l);
  }
  return out;
}

/**
 * Held mail sends from `mail_holds`: who a send went to, its subject, attachment names and sizes,
 * and the decision — never its body, which the database never had. Only sends someone was asked
 * about (asked recipients) are shown.
 */
async function mailApprovals(
  db: Sql,
  sessionId: string,
  turnIds: readonly string[],
): Promise<[string, StoredApproval][]> {
  const rows = await db
    .selectFrom('mail_holds')
    .select([
      'id',
      'turn_id',
      'call_id',
      'recipients',
      'recipient_fields',
      'asked',
      'subject',
      'attachments',
      'state',
      'scope',
      'created_at',
      'decided_at',
    ])
    .where('session_id', '=', sessionId)
    .where('turn_id', 'in', turnIds)
    .where('state', 'in', ASKED_STATES)
    .execute();
  const out: [string, StoredApproval][] = [];
  for (const r of rows) {
    const asked = list(r.asked);
    if (!asked.length || !r.turn_id) continue;
    let attachments: StoredApproval['attachments'] = [];
    try {
      const v: unknown = JSON.parse(r.attachments);
      if (Array.isArray(v))
        attachments = v.map((a: { name?: unknown; size?: unknown }) => ({
          name: String(a?.name ?? ''),
          size: Number(a?.size) || 0,
        }));
    } catch {
      // unreadable: shown without attachments
    }
    out.push([
      r.turn_id,
      {
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
      },
    ]);
  }
  return out;
}

/**
 * Held connector calls from `connector_approvals` (docs/connectors.md "Approval binding"): the
 * connector as it was named then, the tool, the exact arguments and the decision. One still
 * `pending` on a turn that no longer runs (the daemon stopped while it waited) was never
 * forwarded: it reads as denied.
 */
async function connectorApprovals(
  db: Sql,
  sessionId: string,
  turnIds: readonly string[],
  running: ReadonlySet<string>,
): Promise<[string, StoredConnectorApproval][]> {
  const rows = await db
    .selectFrom('connector_approvals')
    .select([
      'id',
      'turn_id',
      'call_id',
      'connector_id',
      'connector_label',
      'tool',
      'arguments',
      'state',
      'created_at',
      'decided_at',
    ])
    .where('session_id', '=', sessionId)
    .where('turn_id', 'in', turnIds)
    .execute();
  return rows.map((r) => {
    let args: Record<string, unknown> = {};
    try {
      const v: unknown = JSON.parse(r.arguments);
      if (v && typeof v === 'object' && !Array.isArray(v)) args = v as Record<string, unknown>;
    } catch {
      // unreadable: shown as no arguments
    }
    const cutOff = r.state === 'pending' && !running.has(r.turn_id);
    return [
      r.turn_id,
      {
        kind: 'connector',
        approval_id: r.id,
        call_id: r.call_id,
        connector: { id: r.connector_id, label: r.connector_label },
        tool: r.tool,
        arguments: args,
        state: cutOff ? 'denied' : r.state,
        created_at: r.created_at,
        decided_at: r.decided_at,
      },
    ];
  });
}

/** A connector call held for the user, as connector_approvals keeps it (docs/connectors.md "Approval binding"). */
export interface ConnectorAsk {
  id: string;
  sessionId: string;
  turnId: string;
  callId: string | null;
  userId: number;
  connector: { id: string; label: string };
  tool: string;
  arguments: Record<string, unknown>;
}

/** Keep a held connector call, `pending`, before the user is asked. */
export async function recordConnectorAsk(db: Sql, a: ConnectorAsk): Promise<void> {
  await db
    .insertInto('connector_approvals')
    .values({
      id: a.id,
      session_id: a.sessionId,
      turn_id: a.turnId,
      call_id: a.callId,
      user_id: a.userId,
      connector_id: a.connector.id,
      connector_label: a.connector.label,
      tool: a.tool,
      arguments: JSON.stringify(a.arguments),
      state: 'pending',
      decided_at: null,
    })
    .execute();
}

/** Its decision, once: a row already decided is left as it is. */
export async function decideConnectorAsk(
  db: Sql,
  id: string,
  state: 'approved' | 'denied' | 'timed_out',
): Promise<void> {
  await db
    .updateTable('connector_approvals')
    .set({ state, decided_at: nowIso() })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .execute();
}
