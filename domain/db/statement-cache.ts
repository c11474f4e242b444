import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Distinct SQL texts kept prepared; the least recently used goes first. */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * The SQLite connection as Kysely's driver sees it, with its prepared statements kept: the
 * driver prepares every query it runs, and preparing costs as much as running one of our small
 * statements (measured in the chat bench, docs/chat.md). Kysely emits the same text for the same
 * query shape (values are parameters), so a turn's few statements are prepared once per process.
 * Safe to share: the driver runs one query at a time on its single connection (a mutex), and
 * each `all`/`run` finishes before the next query starts.
 */
export function cachedStatements(conn: BetterSqlite3.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => {
      cache.clear();
      conn.close();
    },
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (stmt) {
        // Most recently used last: Map keeps insertion order.
        cache.delete(sql);
      } else {
        stmt = conn.prepare(sql);
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
}
