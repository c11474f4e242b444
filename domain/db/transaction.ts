import type { Sql } from './schema.js';

/**
 * Run `fn` in a transaction: a new one, or the caller's when `db` already is one. Every change
 * of several rows (its action-log entry included) goes through one, so a failure half-way
 * leaves nothing half-written (docs/architecture.md#the-data-layer).
 */
export function inTransaction<T>(db: Sql, fn: (trx: Sql) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
