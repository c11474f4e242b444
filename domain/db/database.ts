import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { AppError, type Logger } from '../../core/index.js';
export { nowIso } from '../../core/db.js';
import { loadMigrations, migratePostgres, migrateSqlite } from './migrate.js';
import { cachedStatements } from './statement-cache.js';
import type { Schema, Sql } from './schema.js';

export type Engine = 'sqlite' | 'postgres';

/**
 * The one database of an Airlock install: embedded SQLite in the data folder (the default), or
 * PostgreSQL when AIRLOCK_DATABASE_URL names one (a fleet of nodes shares it, docs/deploy.md).
 * Store modules take `sql` (Kysely) and stay engine-neutral; see domain/db/schema.ts.
 */
export interface Database {
  readonly engine: Engine;
  readonly sql: Sql;
  /** Where the data lives, without any password: `sqlite:/path/airlock.db`, `postgres://user@host:port/db`. */
  readonly target: string;
  /** The schema version the migrations brought the database to at open. */
  readonly schemaVersion: number;
  /**
   * The SQLite connection itself (the same one Kysely uses), for the code that still speaks
   * better-sqlite3 directly; undefined on PostgreSQL.
   */
  readonly sqlite?: BetterSqlite3.Database;
  /** True when a round trip to the database succeeds now. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** postgres://… or postgresql://…; unset = SQLite at `file`. */
  url?: string;
  /** The SQLite file (':memory:' for tests). */
  file?: string;
  log?: Logger;
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
}

/** A PostgreSQL URL as it may be shown: user, host, port and database, never the password. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    const host = u.hostname || new URLSearchParams(u.search).get('host') || 'localhost';
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `postgres://${user}${host}${u.port ? `:${u.port}` : ''}/${decodeURIComponent(u.pathname.slice(1)) || '(default)'}`;
  } catch {
    return 'postgres://(unparsable url)';
  }
}

/** Errors a PostgreSQL client raises when the server is gone or refuses to talk (not SQL errors). */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string') {
    if (
      ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'ENOENT', 'EHOSTUNREACH', 'EAI_AGAIN'].includes(
        e.code,
      )
    )
      return true;
    // 08xxx connection exceptions, 57P01-03 admin shutdown / crash shutdown / cannot connect now.
    if (/^08/.test(e.code) || ['57P01', '57P02', '57P03'].includes(e.code)) return true;
  }
  return /Connection terminated|connection timeout|Client has encountered a connection error|Cannot use a pool after calling end/i.test(
    e.message ?? '',
  );
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.url) return openPostgres(opts.url, opts);
  return openSqlite(opts.file ?? ':memory:');
}

async function openSqlite(file: string): Promise<Database> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const conn = new BetterSqlite3(file);
  conn.pragma('journal_mode = WAL');
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  conn.pragma('synchronous = NORMAL');
  let version: number;
  try {
    version = migrateSqlite(conn, await loadMigrations());
  } catch (err) {
    conn.close();
    throw err;
  }
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: cachedStatements(conn) }) });
  let closed = false;
  return {
    engine: 'sqlite',
    sql: db,
    target: `sqlite:${file}`,
    schemaVersion: version,
    sqlite: conn,
    ping: async () => !closed && conn.open,
    async close() {
      if (closed) return;
      closed = true;
      // Kysely's SQLite driver closes the connection it was given.
      await db.destroy();
    },
  };
}

async function openPostgres(url: string, opts: OpenOptions): Promise<Database> {
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new AppError('ERR_DB_URL', 'AIRLOCK_DATABASE_URL must start with postgres:// or postgresql://');
  const target = describePostgresUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    // Counts and sums come back as int8; every value Airlock stores fits a JS number.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format),
    },
  });
  // A server restart kills idle clients; the pool replaces them, this only keeps the process alive.
  pool.on('error', (err) => opts.log?.warn({ db: target, err: err.message }, 'idle PostgreSQL connection lost'));
  let version: number;
  try {
    version = await migratePostgres(pool, await loadMigrations());
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (err instanceof AppError) throw err;
    if (isConnectionError(err) || /password authentication|does not exist|no pg_hba/i.test((err as Error).message)) {
      throw new AppError(
        'ERR_DB_UNAVAILABLE',
        `cannot reach the database ${target}: ${redact((err as Error).message, url)}`,
      );
    }
    throw err;
  }
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    engine: 'postgres',
    sql: db,
    target,
    schemaVersion: version,
    async ping() {
      if (closed) return false;
      try {
        await sql`SELECT 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/** A driver message never carries the password, but make sure. */
function redact(message: string, url: string): string {
  try {
    const pw = decodeURIComponent(new URL(url).password);
    return pw ? message.split(pw).join('***') : message;
  } catch {
    return message;
  }
}
