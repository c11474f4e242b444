import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AppError } from '../../core/index.js';

/**
 * A migration module in domain/db/migrations/, named `NNN-what.ts`, exporting the step for each
 * engine: `sqlite` (SQL text, or a function given the connection) and `postgres` (SQL text).
 * Each step runs in its own transaction and is recorded in schema_migrations; a SQLite step that
 * rebuilds tables exports `foreignKeysOff = true` (foreign keys cannot be switched inside a
 * transaction; the runner checks them before it commits).
 */
export interface Migration {
  version: number;
  name: string;
  sqlite: string | ((db: BetterSqlite3.Database) => void);
  postgres: string;
  foreignKeysOff: boolean;
}

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Load every numbered migration, in order. */
export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = readdirSync(dir)
    // .js when built, .ts when the sources run as they are (npm run test:unit, no build).
    .filter((f) => /^\d{3}-[a-z0-9-]+\.(js|ts)$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
  const out: Migration[] = [];
  const seen = new Set<number>();
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as Partial<Migration>;
    const version = Number(f.slice(0, 3));
    if (!mod.sqlite || typeof mod.postgres !== 'string')
      throw new AppError('ERR_DB_MIGRATION', `migration ${f} must export both sqlite and postgres`);
    if (seen.has(version)) throw new AppError('ERR_DB_MIGRATION', `two migrations numbered ${version}`);
    seen.add(version);
    out.push({
      version,
      name: f.replace(/\.(js|ts)$/, ''),
      sqlite: mod.sqlite,
      postgres: mod.postgres,
      foreignKeysOff: mod.foreignKeysOff === true,
    });
  }
  return out;
}

const LEDGER_SQLITE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`;
const LEDGER_POSTGRES = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL,
  applied_at TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`;

function refuseNewer(applied: Iterable<number>, migrations: Migration[]): void {
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...applied].filter((v) => !known.has(v));
  if (unknown.length) {
    throw new AppError(
      'ERR_DB_MIGRATION',
      `the database has schema version ${Math.max(...unknown)}, newer than this program knows (${Math.max(0, ...known)}): upgrade airlock on this node`,
    );
  }
}

/** Apply pending migrations to a SQLite connection; returns the schema version. */
export function migrateSqlite(db: BetterSqlite3.Database, migrations: Migration[]): number {
  db.exec(LEDGER_SQLITE);
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  refuseNewer(applied, migrations);
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    const fkWasOn = db.pragma('foreign_keys', { simple: true }) === 1;
    if (m.foreignKeysOff) db.pragma('foreign_keys = OFF');
    try {
      db.transaction(() => {
        if (typeof m.sqlite === 'string') db.exec(m.sqlite);
        else m.sqlite(db);
        if (m.foreignKeysOff) {
          const broken = db.pragma('foreign_key_check') as unknown[];
          if (broken.length)
            throw new AppError(
              'ERR_DB_MIGRATION',
              `migration ${m.name} would leave ${broken.length} broken foreign keys`,
            );
        }
        db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(m.version, m.name);
      })();
    } finally {
      if (m.foreignKeysOff && fkWasOn) db.pragma('foreign_keys = ON');
    }
  }
  const version = sqliteSchemaVersion(db);
  db.pragma(`user_version = ${version}`);
  return version;
}

export function sqliteSchemaVersion(db: BetterSqlite3.Database): number {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

/** Any fixed number: the advisory lock that keeps two nodes starting at once from both migrating. */
const MIGRATION_LOCK = 0x4169726c; // "Airl"

/** Apply pending migrations to PostgreSQL, one transaction each, under an advisory lock. */
export async function migratePostgres(pool: pg.Pool, migrations: Migration[]): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(LEDGER_POSTGRES);
      const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
      const applied = new Set(rows.map((r) => r.version));
      refuseNewer(applied, migrations);
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.postgres);
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }
      const v = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
      return v.rows[0]?.v ?? 0;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}
