import type Database from 'better-sqlite3';

/**
 * The SQLite connection as code written before the Kysely data layer (domain/db) speaks to it.
 * Being replaced store by store; new code takes `Sql` from domain/db instead.
 */
export type Db = Database.Database;

/** Current time as the ISO text every table stores. */
export function nowIso(date = new Date()): string {
  return date.toISOString();
}
