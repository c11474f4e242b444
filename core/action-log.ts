import type { Db } from './db.js';

export type Severity = 'info' | 'warning' | 'critical';

export interface ActionEvent {
  event: string;
  severity?: Severity;
  actorId?: number | null;
  subjectId?: number | null;
  /** Structured details; callers must not put secrets, SQL or result values here. */
  data?: Record<string, unknown>;
}

export interface ActionLogRow {
  id: number;
  event: string;
  severity: Severity;
  actor_id: number | null;
  subject_id: number | null;
  data: Record<string, unknown>;
  created_at: string;
}

/** Append one event to the action log (the service's audit trail). */
export function logAction(db: Db, e: ActionEvent): number {
  const info = db
    .prepare('INSERT INTO action_log (event, severity, actor_id, subject_id, data) VALUES (?, ?, ?, ?, ?)')
    .run(e.event, e.severity ?? 'info', e.actorId ?? null, e.subjectId ?? null, JSON.stringify(e.data ?? {}));
  return Number(info.lastInsertRowid);
}

export interface ActionLogQuery {
  event?: string;
  severity?: Severity;
  subjectId?: number;
  limit?: number;
  /** Return rows with id < before (paging newest first). */
  before?: number;
}

export function queryActionLog(db: Db, q: ActionLogQuery = {}): ActionLogRow[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.event) (where.push('event = ?'), args.push(q.event));
  if (q.severity) (where.push('severity = ?'), args.push(q.severity));
  if (q.subjectId !== undefined) (where.push('subject_id = ?'), args.push(q.subjectId));
  if (q.before !== undefined) (where.push('id < ?'), args.push(q.before));
  const sql = `SELECT * FROM action_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
  args.push(Math.min(Math.max(q.limit ?? 50, 1), 500));
  return (db.prepare(sql).all(...args) as (Omit<ActionLogRow, 'data'> & { data: string })[]).map((r) => ({
    ...r,
    data: JSON.parse(r.data) as Record<string, unknown>,
  }));
}
