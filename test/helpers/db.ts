import { join, sep } from 'node:path';
import { sql } from 'kysely';
import { openDatabase, type Database, type Sql } from '../../domain/db/index.js';
import { createPgDatabase } from './postgres.js';

/**
 * Which engine this test process runs on: `npm test` runs the suite on SQLite, then the tests
 * that talk to the database again with AIRLOCK_TEST_ENGINE=postgres (test/run.ts).
 */
export const TEST_ENGINE: 'sqlite' | 'postgres' =
  process.env.AIRLOCK_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

type Teardown = { teardown(fn: () => unknown): void };

/**
 * test/run.ts runs every integration test on both engines except the files it lists in
 * PASS_1_ONLY (no database, or an engine of their own); it names them in AIRLOCK_TEST_PASS_1_ONLY.
 * One of them opening a database on the pass's engine here is a mistake in that list: it would be
 * missing from the PostgreSQL pass.
 */
function checkNotListedAsPass1Only(): void {
  const listed = (process.env.AIRLOCK_TEST_PASS_1_ONLY ?? '').split(',').filter(Boolean);
  const file = (process.argv[1] ?? '').split(sep).join('/');
  const hit = listed.find((f) => file.endsWith(f));
  if (hit)
    throw new Error(
      `${hit} opens a database on the pass's engine but test/run.ts lists it in PASS_1_ONLY: take it off the list so it runs on both engines`,
    );
}

/** On PostgreSQL: the URL of a new, empty database, dropped at teardown. On SQLite: undefined. */
export async function testDatabaseUrl(t: Teardown): Promise<string | undefined> {
  checkNotListedAsPass1Only();
  if (TEST_ENGINE !== 'postgres') return undefined;
  const admin = process.env.AIRLOCK_TEST_POSTGRES_URL;
  if (!admin)
    throw new Error('AIRLOCK_TEST_ENGINE=postgres needs AIRLOCK_TEST_POSTGRES_URL (npm test starts a cluster)');
  const db = await createPgDatabase(admin);
  t.teardown(() => db.drop());
  return db.url;
}

/** A migrated database on this run's engine (SQLite: a file in dataDir), closed at teardown. */
export async function openTestDatabase(t: Teardown, dataDir: string): Promise<Database> {
  const url = await testDatabaseUrl(t);
  const database = await openDatabase({ url, file: join(dataDir, 'airlock.db') });
  t.teardown(() => database.close());
  return database;
}

/**
 * A new PostgreSQL database for tests that need one whatever the pass's engine (the fleet and
 * fault tests): on the test cluster `npm test` started. Without one the test skips with the
 * reason, except under CI=true, where it fails.
 */
export async function postgresForTest(
  t: Teardown & { pass: (...a: any[]) => unknown; fail: (...a: any[]) => unknown },
): Promise<string | null> {
  const admin = process.env.AIRLOCK_TEST_POSTGRES_URL;
  if (!admin) {
    const why =
      'no PostgreSQL for this test (run it through `npm test`, which starts one, or set AIRLOCK_TEST_POSTGRES_URL)';
    if (process.env.CI === 'true') t.fail(`CI=true: ${why}`);
    else t.pass('PostgreSQL test', { skip: why });
    return null;
  }
  const db = await createPgDatabase(admin);
  t.teardown(() => db.drop());
  return db.url;
}

/** Raw SQL with `?` placeholders as a Kysely query (so a test's checks run on either engine). */
function rawQuery(text: string, params: unknown[]) {
  const parts = text.split('?');
  if (parts.length - 1 !== params.length)
    throw new Error(`${parts.length - 1} placeholders, ${params.length} values: ${text}`);
  return sql(Object.assign([...parts], { raw: [...parts] }) as unknown as TemplateStringsArray, ...params);
}

/** The rows of a query with `?` placeholders, on the test's database (either engine). */
export async function dbRows<T = any>(db: Sql, text: string, ...params: unknown[]): Promise<T[]> {
  return (await rawQuery(text, params).execute(db)).rows as T[];
}

/** The first row of a query, or undefined. */
export async function dbRow<T = any>(db: Sql, text: string, ...params: unknown[]): Promise<T | undefined> {
  return (await dbRows<T>(db, text, ...params))[0];
}

/** Run a statement; the number of rows it changed. */
export async function dbRun(db: Sql, text: string, ...params: unknown[]): Promise<number> {
  const r = await rawQuery(text, params).execute(db);
  return Number(r.numAffectedRows ?? 0n);
}

/**
 * Make the database refuse to write an action-log entry of `event` (a trigger, per engine): the
 * change that writes it must then leave nothing of itself behind. Dropped by `allowActionLog`.
 */
export async function failActionLog(database: Database, event: string): Promise<void> {
  const db = database.sql;
  const name = sql.raw(`fail_${event.replace(/\./g, '_')}`);
  if (database.engine === 'sqlite') {
    await sql`CREATE TRIGGER ${name} BEFORE INSERT ON action_log WHEN NEW.event = ${sql.lit(event)} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`.execute(
      db,
    );
  } else {
    await sql`CREATE OR REPLACE FUNCTION fail_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`.execute(
      db,
    );
    await sql`CREATE TRIGGER ${name} BEFORE INSERT ON action_log FOR EACH ROW WHEN (NEW.event = ${sql.lit(event)}) EXECUTE FUNCTION fail_log()`.execute(
      db,
    );
  }
}

/** Undo failActionLog. */
export async function allowActionLog(database: Database, event: string): Promise<void> {
  const name = sql.raw(`fail_${event.replace(/\./g, '_')}`);
  if (database.engine === 'sqlite') await sql`DROP TRIGGER ${name}`.execute(database.sql);
  else await sql`DROP TRIGGER ${name} ON action_log`.execute(database.sql);
}

/** Run an INSERT (`?` placeholders) and return the new row's id (`RETURNING id`, either engine). */
export async function dbInsertId(db: Sql, text: string, ...params: unknown[]): Promise<number> {
  const row = await dbRow<{ id: number }>(db, `${text} RETURNING id`, ...params);
  if (!row) throw new Error(`no id returned: ${text}`);
  return Number(row.id);
}

/** The number a `SELECT COUNT(*) AS n …` query returns. */
export async function dbCount(db: Sql, text: string, ...params: unknown[]): Promise<number> {
  return Number((await dbRow<{ n: number }>(db, text, ...params))?.n ?? 0);
}
