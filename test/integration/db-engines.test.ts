/**
 * The data layer on this run's engine (SQLite in pass 1, PostgreSQL in pass 2 of `npm test`):
 * migrations applied and recorded, ids never reused, case-insensitive names, foreign keys, and a
 * clear error for a database that cannot be reached.
 */
import t from 'tap';
import { sql } from 'kysely';
import { loadMigrations, openDatabase } from '../../domain/db/index.js';
import { isAppError } from '../../core/index.js';
import { tempDir } from '../helpers/app.js';
import { openTestDatabase, TEST_ENGINE } from '../helpers/db.js';

t.test(`${TEST_ENGINE}: every migration applied once and recorded; schema version`, async (t) => {
  const dir = tempDir(t);
  const database = await openTestDatabase(t, dir);
  t.equal(database.engine, TEST_ENGINE);
  const ms = await loadMigrations();
  const rows = await database.sql
    .selectFrom('schema_migrations')
    .select(['version', 'name'])
    .orderBy('version')
    .execute();
  t.same(
    rows,
    ms.map((m) => ({ version: m.version, name: m.name })),
  );
  t.equal(database.schemaVersion, ms.at(-1)!.version);
  t.ok(await database.ping(), 'ping answers');
  t.notMatch(database.target, /:[^@/]*@/, 'the target names no password');
});

t.test(`${TEST_ENGINE}: ids are never reused after the last row is deleted`, async (t) => {
  const database = await openTestDatabase(t, tempDir(t));
  const db = database.sql;
  const u = await db
    .insertInto('users')
    .values({ username: 'ids', email: null, display_name: null, password_hash: null, last_login_at: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  for (const table of ['memories', 'data_roles'] as const) {
    const insert = (n: number) =>
      table === 'memories'
        ? db
            .insertInto('memories')
            .values({ user_id: u.id, content: `m${n}` })
            .returning('id')
            .executeTakeFirstOrThrow()
        : db
            .insertInto('data_roles')
            .values({ name: `role-${n}` })
            .returning('id')
            .executeTakeFirstOrThrow();
    await insert(1);
    const second = await insert(2);
    await db.deleteFrom(table).where('id', '=', second.id).execute();
    const third = await insert(3);
    t.ok(third.id > second.id, `${table}: a deleted last id (${second.id}) is not handed out again (got ${third.id})`);
  }
});

t.test(`${TEST_ENGINE}: usernames are unique whatever their case; foreign keys cascade`, async (t) => {
  const database = await openTestDatabase(t, tempDir(t));
  const db = database.sql;
  const u = await db
    .insertInto('users')
    .values({ username: 'Alice', email: 'A@x.test', display_name: null, password_hash: null, last_login_at: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  await t.rejects(
    db
      .insertInto('users')
      .values({ username: 'alice', email: null, display_name: null, password_hash: null, last_login_at: null })
      .execute(),
    'ALICE and alice are one name',
  );
  await t.rejects(
    db.insertInto('chat_sessions').values({ id: 's-orphan', user_id: 424242 }).execute(),
    'a row pointing at no user is refused',
  );
  await db.insertInto('chat_sessions').values({ id: 's1', user_id: u.id }).execute();
  await db.deleteFrom('users').where('id', '=', u.id).execute();
  const n = await db
    .selectFrom('chat_sessions')
    .select(sql<number>`count(*)`.as('n'))
    .executeTakeFirstOrThrow();
  t.equal(Number(n.n), 0, 'ON DELETE CASCADE acts');
});

t.test('an unreachable PostgreSQL: one clear error naming host and database, never the password', async (t) => {
  const err = await openDatabase({ url: 'postgres://airlock:s3cret-pw@127.0.0.1:1/airlockdb' }).catch(
    (e: unknown) => e,
  );
  t.ok(isAppError(err, 'ERR_DB_UNAVAILABLE'), 'ERR_DB_UNAVAILABLE');
  const msg = (err as Error).message;
  t.match(msg, /127\.0\.0\.1:1\/airlockdb/, 'names host, port and database');
  t.notMatch(msg, /s3cret-pw/, 'never the password');
  const bad = await openDatabase({ url: 'mysql://x@y/z' }).catch((e: unknown) => e);
  t.ok(isAppError(bad, 'ERR_DB_URL'), 'a non-postgres URL is refused');
});
