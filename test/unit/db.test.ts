/**
 * The SQLite store as the foundation issue asks: WAL, foreign keys on, numbered migrations applied
 * at start in order and recorded with the schema version, nothing applied twice on a reopen, and
 * a failing migration leaves no half-applied step behind.
 */
import t from 'tap';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { createUser } from '../../domain/users.js';
import { loadMigrations, migrateSqlite as migrate, openDatabase } from '../../domain/db/index.js';
import { dbCount, dbRows, dbRun } from '../helpers/db.js';

const dir = mkdtempSync(join(tmpdir(), 'airlock-db-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'data', 'airlock.db');

t.test('open: WAL, foreign keys, every migration recorded in order, schema version', async (t) => {
  const migrations = await loadMigrations();
  t.ok(migrations.length >= 7, 'the numbered migrations are found');
  t.same(
    migrations.map((m) => m.version),
    [...migrations.map((m) => m.version)].sort((a, b) => a - b),
    'in number order',
  );
  const database = await openDatabase({ file });
  const db = database.sql;
  const pragma = async (name: string) =>
    Object.values((await sql.raw(`PRAGMA ${name}`).execute(db)).rows[0] as object)[0];
  t.equal(await pragma('journal_mode'), 'wal');
  t.equal(await pragma('foreign_keys'), 1);
  const rows = await dbRows<{ version: number; name: string }>(
    db,
    'SELECT version, name FROM schema_migrations ORDER BY version',
  );
  t.same(
    rows,
    migrations.map((m) => ({ version: m.version, name: m.name })),
    'each applied migration recorded',
  );
  const last = migrations.at(-1)!.version;
  t.equal(database.schemaVersion, last);
  t.equal(await pragma('user_version'), last);
  await t.rejects(
    dbRun(db, "INSERT INTO chat_sessions (id, user_id) VALUES ('s1', 424242)"),
    { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
    'a row pointing at no user is refused',
  );
  const u = await createUser(database.sql, { username: 'fk', passwordHash: null });
  await dbRun(db, "INSERT INTO chat_sessions (id, user_id) VALUES ('s1', ?)", u.id);
  await dbRun(db, 'DELETE FROM users WHERE id = ?', u.id);
  t.equal(await dbCount(db, 'SELECT COUNT(*) AS n FROM chat_sessions'), 0, 'ON DELETE CASCADE acts');
  await database.close();
  t.ok(readdirSync(join(dir, 'data')).includes('airlock.db'));
});

t.test('reopen: nothing is applied twice', async (t) => {
  const before = new Database(file).prepare('SELECT version, applied_at FROM schema_migrations').all();
  const database = await openDatabase({ file });
  t.same(
    await dbRows(database.sql, 'SELECT version, applied_at FROM schema_migrations'),
    before,
    'same rows, same times',
  );
  await database.close();
});

t.test('a failing migration rolls back its own step and is not recorded', async (t) => {
  const mdir = join(dir, 'migrations');
  mkdirSync(mdir);
  // Outside the project: say these .js files are ES modules, as dist/core/migrations' are.
  writeFileSync(join(mdir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(
    join(mdir, '001-ok.js'),
    "export const sqlite = 'CREATE TABLE a (x INTEGER);'; export const postgres = sqlite;\n",
  );
  writeFileSync(
    join(mdir, '002-bad.js'),
    "export const sqlite = 'CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);'; export const postgres = sqlite;\n",
  );
  const db = new Database(':memory:');
  const ms = await loadMigrations(mdir);
  t.same(
    ms.map((m) => m.name),
    ['001-ok', '002-bad'],
  );
  t.throws(() => migrate(db, ms), /no such table: nowhere/);
  t.same(db.prepare('SELECT version FROM schema_migrations').all(), [{ version: 1 }], 'only the good one recorded');
  t.equal(
    (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'b'").get() as { n: number }).n,
    0,
    "the bad step's table is gone",
  );
  db.close();
});

t.test('upgrading a SQLite install to AUTOINCREMENT ids keeps every row, index and foreign key', async (t) => {
  const db = new Database(join(dir, 'upgrade.db'));
  t.teardown(() => db.close());
  db.pragma('foreign_keys = ON');
  const all = await loadMigrations();
  const at = all.findIndex((m) => m.version === 8);
  migrate(db, all.slice(0, at));
  // A user row of the schema before migration 8 (the domain's createUser writes today's schema).
  const u = {
    id: Number(db.prepare("INSERT INTO users (username, password_hash) VALUES ('keep', NULL)").run().lastInsertRowid),
  };
  db.prepare("INSERT INTO memories (user_id, content) VALUES (?, 'one'), (?, 'two')").run(u.id, u.id);
  db.prepare("INSERT INTO chat_sessions (id, user_id) VALUES ('s1', ?)").run(u.id);
  const last = db.prepare('SELECT MAX(id) AS id FROM memories').get() as { id: number };
  db.prepare('DELETE FROM memories WHERE id = ?').run(last.id);
  const indexesBefore = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
    .all();
  migrate(db, all);
  t.equal(db.pragma('foreign_keys', { simple: true }), 1, 'foreign keys are on again');
  t.same(db.prepare('SELECT content FROM memories ORDER BY id').all(), [{ content: 'one' }], 'rows kept');
  t.same(
    db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND name IN (SELECT name FROM sqlite_master) ORDER BY name",
      )
      .all()
      .filter((r) => (indexesBefore as { name: string }[]).some((b) => b.name === (r as { name: string }).name)),
    indexesBefore,
    'indexes kept',
  );
  t.match(
    String((db.prepare("SELECT sql FROM sqlite_master WHERE name = 'memories'").get() as { sql: string }).sql),
    /AUTOINCREMENT/,
  );
  // (An id deleted before the upgrade left no trace, so the upgrade cannot hold it back.)
  const three = Number(
    db.prepare("INSERT INTO memories (user_id, content) VALUES (?, 'three')").run(u.id).lastInsertRowid,
  );
  db.prepare('DELETE FROM memories WHERE id = ?').run(three);
  const four = Number(
    db.prepare("INSERT INTO memories (user_id, content) VALUES (?, 'four')").run(u.id).lastInsertRowid,
  );
  t.ok(four > three, 'after the upgrade a deleted last id is not handed out again');
  db.prepare('DELETE FROM users WHERE id = ?').run(u.id);
  t.equal(
    (db.prepare('SELECT COUNT(*) AS n FROM chat_sessions').get() as { n: number }).n,
    0,
    'cascades still act on the rebuilt users table',
  );
  t.same(db.pragma('foreign_key_check'), [], 'no broken references');
});
