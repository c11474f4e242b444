/**
 * The send policy of a user, the held sends and the proxy's audit trail (docs/proxy.md#send-policy,
 * docs/audit.md). Every row here is about a request, never its body: recipients and subject of a
 * held send, and route, method, path template, status, bytes and time of each proxied request.
 */
import type { Config } from '../../core/index.js';
import type { MailPolicy, MailSummary, ProxyDecisionRecord } from '../../core/sandbox-protocol.js';
import type { RecipientFields } from '../../core/approval-request.js';
import { nowIso, type Row, type Sql } from '../db/index.js';
import { agentPoliciesApplyingTo } from '../identity/agent-policy.js';
import { serverMailPolicy } from './server-policy.js';
import { inTransaction } from '../db/index.js';

const STRICTNESS = { allow: 0, ask: 1, block: 2 } as const;

/**
 * The send policy in force for a user: the server-wide one (kept in the database, first from
 * AIRLOCK_MAIL_*: domain/mail/server-policy.ts) combined with every agent policy that applies to
 * the user (the same rule as the tools: organisation-wide or through a team). Domain lists add up;
 * `other` and the limits take the strictest value; a blocked domain always wins over an allowed
 * one (at check time).
 */
export async function mailPolicyFor(db: Sql, defaults: Readonly<Config['mail']>, userId: number): Promise<MailPolicy> {
  const [server, rows] = await Promise.all([serverMailPolicy(db, defaults), agentPoliciesApplyingTo(db, userId)]);
  const allow = new Set(server.allow_domains);
  const block = new Set(server.block_domains);
  let other = server.other;
  let maxRecipients = server.max_recipients;
  let maxPerHour = server.max_per_hour;
  for (const r of rows) {
    for (const d of JSON.parse(r.mail_allow_domains) as string[]) allow.add(d);
    for (const d of JSON.parse(r.mail_block_domains) as string[]) block.add(d);
    if (r.mail_other && STRICTNESS[r.mail_other] > STRICTNESS[other]) other = r.mail_other;
    if (r.mail_max_recipients !== null) maxRecipients = Math.min(maxRecipients, r.mail_max_recipients);
    if (r.mail_max_per_hour !== null) maxPerHour = Math.min(maxPerHour, r.mail_max_per_hour);
  }
  return {
    allow_domains: [...allow].sort(),
    block_domains: [...block].sort(),
    other,
    max_recipients: maxRecipients,
    max_per_hour: maxPerHour,
    approval_timeout_s: server.approval_timeout_s,
  };
}

export type HoldState = Row<'mail_holds'>['state'];

export interface NewHold {
  id: string;
  sessionId: string;
  userId: number;
  nodeId: string;
  turnId: string | null;
  callId: string | null;
  verdict: 'allow' | 'ask';
  summary: MailSummary;
  asked: string[];
  state: HoldState;
  scope?: 'once' | 'recipient' | null;
  code?: string | null;
}

/** A hold's recipients by header, as stored (migration 065); undefined for older rows or anything unreadable. */
export function recipientFields(json: string | null): RecipientFields | undefined {
  if (!json) return undefined;
  try {
    const v = JSON.parse(json) as Record<string, unknown>;
    const strs = (x: unknown) => (Array.isArray(x) ? x.filter((a): a is string => typeof a === 'string') : []);
    return v && typeof v === 'object' ? { to: strs(v.to), cc: strs(v.cc), bcc: strs(v.bcc) } : undefined;
  } catch {
    return undefined;
  }
}

/** Record a held send (decided at once, or `pending` while the user is asked). */
export async function insertHold(db: Sql, h: NewHold): Promise<void> {
  await db
    .insertInto('mail_holds')
    .values({
      id: h.id,
      session_id: h.sessionId,
      user_id: h.userId,
      node_id: h.nodeId,
      turn_id: h.turnId,
      call_id: h.callId,
      verdict: h.verdict,
      recipients: JSON.stringify(h.summary.recipients),
      recipient_fields: h.summary.fields ? JSON.stringify(h.summary.fields) : null,
      asked: JSON.stringify(h.asked),
      subject: h.summary.subject,
      attachments: JSON.stringify(h.summary.attachments),
      bytes: h.summary.bytes,
      state: h.state,
      scope: h.scope ?? null,
      code: h.code ?? null,
      decided_at: h.state === 'pending' ? null : nowIso(),
    })
    .execute();
}

/** Decide a pending hold; false when it was no longer pending (decided elsewhere meanwhile). */
export async function decideHold(
  db: Sql,
  id: string,
  state: Exclude<HoldState, 'pending'>,
  scope: 'once' | 'recipient' | null,
  code: string | null,
): Promise<boolean> {
  const r = await db
    .updateTable('mail_holds')
    .set({ state, scope, code, decided_at: nowIso() })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function getHold(db: Sql, id: string): Promise<Row<'mail_holds'> | undefined> {
  return db.selectFrom('mail_holds').selectAll().where('id', '=', id).executeTakeFirst();
}

/** States of a hold that take one of the user's hourly slots: let through, or waiting for the user. */
export const SLOT_STATES = ['pending', 'sent', 'approved'] as const;

/** Sends of a user that hold a slot (let through, or held for the user) since `sinceIso`, on every node. */
export async function sendsSince(db: Sql, userId: number, sinceIso: string): Promise<number> {
  const r = await db
    .selectFrom('mail_holds')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('state', 'in', [...SLOT_STATES])
    .where('created_at', '>=', sinceIso)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

/**
 * An earlier send from the same chat that this one repeats: the same recipients, subject and
 * attachments (names and sizes), sent or approved since `sinceIso` (docs/proxy.md#repeated-sends).
 * The body is never stored, so two messages that differ only in their text count as a repeat: the
 * user, asked, sees the body and decides.
 */
export async function findRepeat(
  db: Sql,
  sessionId: string,
  summary: MailSummary,
  sinceIso: string,
): Promise<{ id: string; created_at: string } | undefined> {
  const rows = await db
    .selectFrom('mail_holds')
    .select(['id', 'recipients', 'attachments', 'created_at'])
    .where('session_id', '=', sessionId)
    .where('subject', '=', summary.subject)
    .where('state', 'in', ['sent', 'approved'])
    .where('created_at', '>=', sinceIso)
    .orderBy('created_at', 'desc')
    .limit(50)
    .execute();
  const same = (a: string[], b: string[]) =>
    a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
  const files = (xs: { name: string; size: number }[]) => xs.map((x) => `${x.name}\u0000${x.size}`);
  return rows.find(
    (r) =>
      same(JSON.parse(r.recipients) as string[], summary.recipients) &&
      same(files(JSON.parse(r.attachments) as MailSummary['attachments']), files(summary.attachments)),
  );
}

/**
 * Reserve one of the user's hourly slots for a hold and record it (state `pending`, `sent` or
 * `approved`), or return false when the user's last hour already holds `limit` of them. One
 * transaction that first updates the user's row of `mail_send_locks`: on PostgreSQL that row
 * lock makes concurrent reservations of one user (on any node) wait their turn, on SQLite the
 * writer lock does; so the count cannot change between the check and the insert. A hold decided
 * later as denied, timed out or refused gives its slot back (its state no longer counts).
 */
export async function reserveHold(db: Sql, h: NewHold, limit: number, sinceIso: string): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const at = nowIso();
    await trx
      .insertInto('mail_send_locks')
      .values({ user_id: h.userId, reserved_at: at })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ reserved_at: at }))
      .execute();
    if ((await sendsSince(trx, h.userId, sinceIso)) >= limit) return false;
    await insertHold(trx, h);
    return true;
  });
}

export interface AuditedRequest extends ProxyDecisionRecord {
  sessionId: string;
  userId: number;
  nodeId: string;
}

/** One proxied request into the audit trail. */
export async function recordProxyRequest(db: Sql, r: AuditedRequest): Promise<void> {
  const int = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : null);
  await db
    .insertInto('proxy_requests')
    .values({
      session_id: r.sessionId,
      user_id: r.userId,
      node_id: r.nodeId,
      turn_id: r.turn_id ?? null,
      call_id: r.call_id ?? null,
      route: r.route,
      method: r.method ?? null,
      template: r.template ?? null,
      outcome: r.outcome,
      status: Math.round(r.status) || 0,
      code: r.code ?? null,
      req_bytes: int(r.req_bytes),
      res_bytes: int(r.res_bytes),
      ms: typeof r.ms === 'number' && Number.isFinite(r.ms) ? r.ms : null,
      recipients: int(r.recipients),
    })
    .execute();
}

/** A turn's audit: its proxied requests and held sends, oldest first. */
export async function turnAudit(
  db: Sql,
  turnId: string,
): Promise<{ requests: Row<'proxy_requests'>[]; holds: Row<'mail_holds'>[] }> {
  const requests = await db
    .selectFrom('proxy_requests')
    .selectAll()
    .where('turn_id', '=', turnId)
    .orderBy('id')
    .execute();
  const holds = await db
    .selectFrom('mail_holds')
    .selectAll()
    .where('turn_id', '=', turnId)
    .orderBy('created_at')
    .execute();
  return { requests, holds };
}
