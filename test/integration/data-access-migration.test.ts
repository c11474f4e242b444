import t from 'tap';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { join } from 'node:path';
import { getRoleByName, listPolicies, effectivePolicyOf, policyForTable } from '../../domain/data-access/index.js';
import {
  loadMigrations,
  migratePostgres,
  migrateSqlite,
  openDatabase,
  type Migration,
  type Schema,
  type Sql,
} from '../../domain/db/index.js';
import { createUser } from '../../domain/users.js';
import { tempDir } from '../helpers/app.js';
import { TEST_ENGINE, testDatabaseUrl } from '../helpers/db.js';

/** Bring a new database of this run's engine to the migrations given, run `fn` on it, close it. */
async function atVersion(
  url: string | undefined,
  file: string,
  migrations: Migration[],
  fn: (db: Sql) => Promise<void>,
): Promise<void> {
  if (url) {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    await migratePostgres(pool, migrations);
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    try {
      await fn(db);
    } finally {
      await db.destroy();
    }
    return;
  }
  const conn = new BetterSqlite3(file);
  conn.pragma('foreign_keys = ON');
  migrateSqlite(conn, migrations);
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: conn }) });
  try {
    await fn(db);
  } finally {
    await db.destroy();
  }
}

t.test(
  `initial setup (${TEST_ENGINE}): bi_admin with the wildcard grant, assigned to every existing superuser`,
  async (t) => {
    const url = await testDatabaseUrl(t);
    const file = join(tempDir(t), 'a.db');
    const all = await loadMigrations();
    const at = all.findIndex((m) => m.version === 5);
    t.ok(at >= 0, 'migration 005 exists');
    const made: { id: number; username: string }[] = [];
    await atVersion(url, file, all.slice(0, at), async (db) => {
      made.push(await createUser(db, { username: 'root', isSuperuser: true }));
      made.push(await createUser(db, { username: 'ops', isSuperuser: true }));
      made.push(await createUser(db, { username: 'pat' }));
    });
    const [s1, s2, plain] = made;

    // Opening the database runs the remaining migrations (005 on, on this engine).
    const database = await openDatabase({ url, file });
    t.teardown(() => database.close());
    const db = database.sql;
    const role = (await getRoleByName(db, 'bi_admin'))!;
    t.ok(role.builtin);
    t.same(
      (await listPolicies(db, role.id)).map((p) => [p.table, p.allowed_columns, p.row_filter]),
      [['*', ['*'], {}]],
    );
    for (const u of [s1, s2]) {
      const eff = await effectivePolicyOf(db, u.id);
      t.equal(eff.bi, true, `${u.username} has the bi bit`);
      t.same(eff.roles, [{ id: role.id, name: 'bi_admin' }], `${u.username} has bi_admin`);
      const p = policyForTable(eff, 'anything');
      t.same([p?.columns, p?.all_rows], [['*'], true], `${u.username} reads everything`);
    }
    const pe = await effectivePolicyOf(db, plain.id);
    t.equal(pe.bi, false);
    t.equal(policyForTable(pe, 'anything'), null, 'a plain user gets nothing (rule 1)');

    const log = await db
      .selectFrom('action_log')
      .select(['event', 'subject_id', 'data'])
      .orderBy('subject_id')
      .orderBy('event')
      .execute();
    t.same(
      log.map((r) => [r.event, r.subject_id, JSON.parse(r.data)]),
      [s1, s2].flatMap((u) => [
        ['bi.entitlement.granted', u.id, { entitlement: 'bi', bi: true, initial_setup: true }],
        ['data.assignment.created', u.id, { role_id: role.id, role: 'bi_admin', initial_setup: true }],
      ]),
      'the assignments and the bit are written to the action log, alike on both engines',
    );

    const later = await createUser(db, { username: 'late', isSuperuser: true });
    t.equal((await effectivePolicyOf(db, later.id)).bi, false, 'a superuser created later gets no data role');
  },
);
