import type { LogRecord, LogSeverity } from '../core/api-types-data-access.js';
import type { Sql } from './db/index.js';

export type Severity = LogSeverity;

export interface ActionEvent {
  event: string;
  severity?: Severity;
  actorId?: number | null;
  subjectId?: number | null;
  /** Structured details; callers must not put secrets, SQL or result values here. */
  data?: Record<string, unknown>;
}

/** One row of the action log, its `data` parsed (the audit API's shape, core/api-types-data-access.ts). */
export type ActionLogRow = LogRecord;

/** Append one event to the action log (the service's audit trail); pass the transaction when there is one. */
export async function logAction(db: Sql, e: ActionEvent): Promise<number> {
  const r = await db
    .insertInto('action_log')
    .values({
      event: e.event,
      severity: e.severity ?? 'info',
      actor_id: e.actorId ?? null,
      subject_id: e.subjectId ?? null,
      data: JSON.stringify(e.data ?? {}),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}

export interface ActionLogQuery {
  event?: string;
  severity?: Severity;
  subjectId?: number;
  limit?: number;
  /** Return rows with id < before (paging newest first). */
  before?: number;
}

export async function queryActionLog(db: Sql, q: ActionLogQuery = {}): Promise<ActionLogRow[]> {
  let s = db.selectFrom('action_log').selectAll();
  if (q.event) s = s.where('event', '=', q.event);
  if (q.severity) s = s.where('severity', '=', q.severity);
  if (q.subjectId !== undefined) s = s.where('subject_id', '=', q.subjectId);
  if (q.before !== undefined) s = s.where('id', '<', q.before);
  const rows = await s
    .orderBy('id', 'desc')
    .limit(Math.min(Math.max(q.limit ?? 50, 1), 500))
    .execute();
  return rows.map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
}
