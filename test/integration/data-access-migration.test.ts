import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { createUser } from '../../core/index.js';
import { loadMigrations, migrateSqlite as migrate } from '../../domain/db/index.js';
import { DataAccessStore, effectivePolicyOf, policyForTable } from '../../web/data-access/index.js';
import { tempDir } from '../helpers/app.js';

t.test('initial setup: bi_admin with the wildcard grant, assigned to every existing superuser', async (t) => {
  const db = new Database(join(tempDir(t), 'a.db'));
  t.teardown(() => db.close());
  db.pragma('foreign_keys = ON');
  const all = await loadMigrations();
  const at = all.findIndex((m) => m.version === 5);
  t.ok(at >= 0, 'migration 005 exists');
  migrate(db, all.slice(0, at));
  const s1 = createUser(db, { username: 'root', isSuperuser: true });
  const s2 = createUser(db, { username: 'ops', isSuperuser: true });
  const plain = createUser(db, { username: 'pat' });
  migrate(db, all);

  const store = new DataAccessStore(db);
  const role = store.getRoleByName('bi_admin')!;
  t.ok(role.builtin);
  t.same(
    store.listPolicies(role.id).map((p) => [p.table, p.allowed_columns, p.row_filter]),
    [['*', ['*'], {}]],
  );
  for (const u of [s1, s2]) {
    const eff = effectivePolicyOf(store, u.id);
    t.equal(eff.bi, true, `${u.username} has the bi bit`);
    const p = policyForTable(eff, 'anything');
    t.same([p?.columns, p?.all_rows], [['*'], true], `${u.username} reads everything`);
  }
  const pe = effectivePolicyOf(store, plain.id);
  t.equal(pe.bi, false);
  t.equal(policyForTable(pe, 'anything'), null, 'a plain user gets nothing (rule 1)');
  const log = db.prepare("SELECT subject_id FROM action_log WHERE event = 'bi.entitlement.granted' ORDER BY subject_id").all();
  t.same(log, [{ subject_id: s1.id }, { subject_id: s2.id }], 'the bit is written to the action log');

  const later = createUser(db, { username: 'late', isSuperuser: true });
  t.equal(effectivePolicyOf(store, later.id).bi, false, 'a superuser created later gets no data role');
});
