import Database from 'better-sqlite3';
import { readdirSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AppError } from './errors.js';

export type Db = Database.Database;

/**
 * A migration module in core/migrations/, named `NNN-what.ts`, exporting `up`:
 * SQL text, or a function given the database (run inside the migration's transaction).
 */
export interface Migration {
  version: number;
  name: string;
  up: string | ((db: Db) => void);
}

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Load every numbered migration, in order. */
export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = readdirSync(dir)
    .filter((f) => /^\d{3}-[a-z0-9-]+\.js$/.test(f))
    .sort();
  const out: Migration[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { up?: Migration['up'] };
    if (!mod.up) throw new AppError('ERR_DB_MIGRATION', `migration ${f} exports no up`);
    out.push({ version: Number(f.slice(0, 3)), name: f.replace(/\.js$/, ''), up: mod.up });
  }
  const seen = new Set<number>();
  for (const m of out) {
    if (seen.has(m.version)) throw new AppError('ERR_DB_MIGRATION', `two migrations numbered ${m.version}`);
    seen.add(m.version);
  }
  return out;
}

/** Apply pending migrations, each in its own transaction; records the schema version. */
export function migrate(db: Db, migrations: Migration[]): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`);
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      if (typeof m.up === 'string') db.exec(m.up);
      else m.up(db);
      db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(m.version, m.name);
    })();
  }
  db.pragma(`user_version = ${migrations.length ? migrations[migrations.length - 1].version : 0}`);
  return schemaVersion(db);
}

export function schemaVersion(db: Db): number {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

/**
 * Open (or create) the SQLite database with WAL and foreign keys on, and apply migrations.
 * `file` ':memory:' is allowed for tests.
 */
export async function openDatabase(file: string): Promise<Db> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  migrate(db, await loadMigrations());
  return db;
}

/** Current time as the ISO text every table stores. */
export function nowIso(date = new Date()): string {
  return date.toISOString();
}
