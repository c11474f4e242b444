/**
 * The send policy of a user, the held sends and the proxy's audit trail (docs/proxy.md#send-policy,
 * docs/audit.md). Every row here is about a request, never its body: recipients and subject of a
 * held send, and route, method, path template, status, bytes and time of each proxied request.
 */
import type { Config } from '../core/index.js';
import type { MailPolicy, MailSummary, ProxyDecisionRecord } from '../core/sandbox-protocol.js';
import { nowIso, type Row, type Sql } from './db/index.js';
import { agentPoliciesApplyingTo } from './identity/agent-policy.js';

const STRICTNESS = { allow: 0, ask: 1, block: 2 } as const;

/**
 * The send policy in force for a user: the server's (AIRLOCK_MAIL_*) combined with every agent
 * policy that applies to the user (the same rule as the tools: organisation-wide or through a
 * team). Domain lists add up; `other` and the limits take the strictest value; a blocked domain
 * always wins over an allowed one (at check time).
 */
export async function mailPolicyFor(db: Sql, defaults: Readonly<Config['mail']>, userId: number): Promise<MailPolicy> {
  const rows = await agentPoliciesApplyingTo(db, userId);
  const allow = new Set(defaults.allowDomains);
  const block = new Set(defaults.blockDomains);
  let other = defaults.other;
  let maxRecipients = defaults.maxRecipients;
  let maxPerHour = defaults.maxPerHour;
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
    approval_timeout_s: defaults.approvalTimeoutS,
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
export async function decideHold(db: Sql, id: string, state: Exclude<HoldState, 'pending'>, scope: 'once' | 'recipient' | null, code: string | null): Promise<boolean> {
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

/** Sends of a user let through (sent at once or approved) since `sinceIso`, on every node. */
export async function sendsSince(db: Sql, userId: number, sinceIso: string): Promise<number> {
  const r = await db
    .selectFrom('mail_holds')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('state', 'in', ['sent', 'approved'])
    .where('created_at', '>=', sinceIso)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
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
export async function turnAudit(db: Sql, turnId: string): Promise<{ requests: Row<'proxy_requests'>[]; holds: Row<'mail_holds'>[] }> {
  const requests = await db.selectFrom('proxy_requests').selectAll().where('turn_id', '=', turnId).orderBy('id').execute();
  const holds = await db.selectFrom('mail_holds').selectAll().where('turn_id', '=', turnId).orderBy('created_at').execute();
  return { requests, holds };
}
