import t from 'tap';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type Generated } from 'kysely';
import { cachedStatements } from '../../domain/db/statement-cache.js';

interface T {
  t: { id: Generated<number>; k: string; v: string };
}

t.test('the SQLite driver reuses prepared statements: same results, a bounded cache, close closes', async (t) => {
  const conn = new BetterSqlite3(':memory:');
  conn.exec('create table t (id integer primary key autoincrement, k text, v text)');
  let prepared = 0;
  const real = conn.prepare.bind(conn);
  conn.prepare = ((s: string) => (prepared++, real(s))) as typeof conn.prepare;
  const db = new Kysely<T>({ dialect: new SqliteDialect({ database: cachedStatements(conn, 3) }) });
  for (let i = 0; i < 20; i++)
    await db
      .insertInto('t')
      .values({ k: `k${i % 4}`, v: String(i) })
      .execute();
  t.equal(prepared, 1, 'twenty inserts of one shape: prepared once');
  const rows = await db.selectFrom('t').select(['v']).where('k', '=', 'k1').orderBy('id').execute();
  t.same(
    rows.map((r) => r.v),
    ['1', '5', '9', '13', '17'],
    'a reused statement binds the new values',
  );
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('t').set({ v: 'x' }).where('k', '=', 'k2').execute();
    await trx.updateTable('t').set({ v: 'y' }).where('k', '=', 'k3').execute();
  });
  t.same(
    (
      await db
        .selectFrom('t')
        .select(sql<number>`count(*)`.as('n'))
        .where('v', 'in', ['x', 'y'])
        .executeTakeFirst()
    )?.n,
    10,
    'a transaction through cached begin/commit',
  );
  const before = prepared;
  // Five distinct texts through a cache of three: the first is evicted and prepared again.
  const shapes = [1, 2, 3, 4, 5].map(
    (n) => () =>
      db
        .selectFrom('t')
        .select('id')
        .where(
          'id',
          'in',
          Array.from({ length: n }, (_, i) => i + 1),
        )
        .execute(),
  );
  for (const q of shapes) await q();
  await shapes[4]();
  t.equal(prepared - before, 5, 'the most recently used stay prepared');
  await shapes[0]();
  t.equal(prepared - before, 6, 'the least recently used was evicted');
  await db.destroy();
  t.notOk(conn.open, 'destroy closes the connection');
});
