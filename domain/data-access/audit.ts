import { sql } from 'kysely';
import type { LogAccount, LogEntry } from '../../core/api-types-data-access.js';
import type { Severity } from '../action-log.js';
import type { Sql } from '../db/index.js';

export interface AuditFilter {
  /** An exact event name, or a prefix ending in `.*` (as `bi.*`). */
  event?: string;
  severity?: Severity;
  subjectId?: number;
  actorId?: number;
  /** Only entries with a smaller id (keyset paging, newest first). */
  before?: number;
  limit: number;
}

type Who = LogAccount | null;

/** An action-log entry with the accounts by name (core/api-types-data-access.ts). */
export type AuditEntry = LogEntry;

/**
 * One page of the action log, newest first, with the actor's and subject's names.
 * `next_before` is the cursor of the next (older) page, null on the last page.
 */
export async function auditPage(
  db: Sql,
  f: AuditFilter,
): Promise<{ events: AuditEntry[]; next_before: number | null }> {
  let q = db
    .selectFrom('action_log as l')
    .leftJoin('users as a', 'a.id', 'l.actor_id')
    .leftJoin('users as s', 's.id', 'l.subject_id')
    .select([
      'l.id',
      'l.event',
      'l.severity',
      'l.actor_id',
      'l.subject_id',
      'l.data',
      'l.created_at',
      'a.username as actor_username',
      'a.display_name as actor_display_name',
      's.username as subject_username',
      's.display_name as subject_display_name',
    ]);
  if (f.event !== undefined) {
    if (f.event.endsWith('.*')) {
      const prefix = f.event.slice(0, -1);
      // substr, not LIKE: `_` in an event name is literal.
      q = q.where(sql<string>`substr(l.event, 1, ${sql.lit(prefix.length)})`, '=', prefix);
    } else q = q.where('l.event', '=', f.event);
  }
  if (f.severity !== undefined) q = q.where('l.severity', '=', f.severity);
  if (f.subjectId !== undefined) q = q.where('l.subject_id', '=', f.subjectId);
  if (f.actorId !== undefined) q = q.where('l.actor_id', '=', f.actorId);
  if (f.before !== undefined) q = q.where('l.id', '<', f.before);
  const rows = await q
    .orderBy('l.id', 'desc')
    .limit(f.limit + 1)
    .execute();
  const who = (id: number | null, username: string | null, display: string | null): Who =>
    id === null ? null : { id, username, display_name: display };
  const events = rows
    .slice(0, f.limit)
    .map(({ actor_username, actor_display_name, subject_username, subject_display_name, ...x }) => ({
      ...x,
      actor: who(x.actor_id, actor_username, actor_display_name),
      subject: who(x.subject_id, subject_username, subject_display_name),
      data: JSON.parse(x.data) as Record<string, unknown>,
    }));
  return { events, next_before: rows.length > f.limit ? events[events.length - 1].id : null };
}
