import t from 'tap';
import type { Test } from 'tap';
import {
  assign,
  auditPage,
  createRole,
  deletePolicy,
  deleteRole,
  effectivePolicyOf,
  getRoleByName,
  grantsOf,
  hasEntitlement,
  listAssignments,
  listPolicies,
  listRoles,
  putPolicy,
  unassign,
  updateRole,
} from '../../domain/data-access/index.js';
import type { Sql } from '../../domain/db/index.js';
import { createUser } from '../../domain/users.js';
import { tempDir } from '../helpers/app.js';
import { failActionLog, TEST_ENGINE, openTestDatabase } from '../helpers/db.js';

/** The store functions themselves, on this pass's engine (SQLite, then PostgreSQL). */

async function setup(t: Test) {
  const database = await openTestDatabase(t, tempDir(t));
  const db = database.sql;
  const admin = await createUser(db, { username: 'root', isSuperuser: true });
  const ann = await createUser(db, { username: 'ann' });
  const bob = await createUser(db, { username: 'bob' });
  return { database, db, admin, ann, bob };
}

const events = async (db: Sql, since = 0) =>
  (
    await db
      .selectFrom('action_log')
      .select(['id', 'event', 'subject_id'])
      .where('id', '>', since)
      .orderBy('id')
      .execute()
  ).map((r) => [r.event, r.subject_id]);
const lastLogId = async (db: Sql) =>
  Number(
    (
      await db
        .selectFrom('action_log')
        .select((eb) => eb.fn.max('id').as('m'))
        .executeTakeFirstOrThrow()
    ).m ?? 0,
  );

/** Make the next action-log insert of `event` fail, as a crash between two writes would. */
const failOn = failActionLog;

t.test(
  `roles: names unique whatever their case, sorted case-insensitively, built-in fixed (${TEST_ENGINE})`,
  async (t) => {
    const { db, admin } = await setup(t);
    const sales = await createRole(db, admin.id, 'Sales', 'the sales team');
    await createRole(db, admin.id, 'audit');
    await t.rejects(createRole(db, admin.id, 'SALES'), { code: 'ERR_DATA_ROLE_EXISTS' });
    t.equal((await getRoleByName(db, 'sales'))?.id, sales.id, 'found by name in another case');
    t.same(
      (await listRoles(db)).map((r) => r.name),
      ['audit', 'bi_admin', 'Sales'],
    );
    await t.rejects(updateRole(db, admin.id, sales.id, { name: 'AUDIT' }), { code: 'ERR_DATA_ROLE_EXISTS' });
    const renamed = await updateRole(db, admin.id, sales.id, { name: 'sales2' });
    t.equal(renamed.name, 'sales2');
    t.equal(renamed.description, 'the sales team', 'description kept');
    const bi = (await getRoleByName(db, 'bi_admin'))!;
    await t.rejects(updateRole(db, admin.id, bi.id, { name: 'x' }), { code: 'ERR_DATA_ROLE_BUILTIN' });
    await t.rejects(deleteRole(db, admin.id, bi.id), { code: 'ERR_DATA_ROLE_BUILTIN' });
    await t.rejects(putPolicy(db, admin.id, bi.id, 't', ['*'], {}), { code: 'ERR_DATA_ROLE_BUILTIN' });
    await t.rejects(updateRole(db, admin.id, 99999, { description: 'x' }), { code: 'ERR_DATA_ROLE_NOT_FOUND' });
    const log = await db
      .selectFrom('action_log')
      .select('data')
      .where('event', '=', 'data.role.updated')
      .executeTakeFirstOrThrow();
    t.same(JSON.parse(log.data), { role_id: sales.id, role: 'sales2', previous_name: 'Sales' });
  },
);

t.test(`grants: create then replace, listed by table, counted per role (${TEST_ENGINE})`, async (t) => {
  const { db, admin } = await setup(t);
  const role = await createRole(db, admin.id, 'r');
  const a = await putPolicy(db, admin.id, role.id, 'orders', ['id'], { column: 'owner', op: 'eq', value: '$user_id' });
  t.equal(a.created, true);
  const b = await putPolicy(db, admin.id, role.id, 'orders', ['id', 'total'], {});
  t.equal(b.created, false, 'the second put replaces');
  t.equal(b.policy.id, a.policy.id);
  t.same(b.policy.allowed_columns, ['id', 'total']);
  t.same(b.policy.row_filter, {});
  await putPolicy(db, admin.id, role.id, 'Accounts', ['*'], {});
  await putPolicy(db, admin.id, role.id, '*', ['id'], {});
  t.same(
    (await listPolicies(db, role.id)).map((p) => p.table),
    ['*', 'Accounts', 'orders'],
    'byte order',
  );
  t.equal((await listRoles(db)).find((r) => r.id === role.id)?.policy_count, 3);
  await deletePolicy(db, admin.id, role.id, 'Accounts');
  await t.rejects(deletePolicy(db, admin.id, role.id, 'Accounts'), { code: 'ERR_DATA_POLICY_NOT_FOUND' });
  await t.rejects(listPolicies(db, 99999), { code: 'ERR_DATA_ROLE_NOT_FOUND' });
  const evs = (await events(db)).map((e) => e[0]).filter((e) => String(e).startsWith('data.policy'));
  t.same(evs, [
    'data.policy.created',
    'data.policy.updated',
    'data.policy.created',
    'data.policy.created',
    'data.policy.deleted',
  ]);
});

t.test(`assignments and the bi bit: set with the first role, cleared with the last (${TEST_ENGINE})`, async (t) => {
  const { db, admin, ann, bob } = await setup(t);
  const r1 = await createRole(db, admin.id, 'r1');
  const r2 = await createRole(db, admin.id, 'r2');
  await putPolicy(db, admin.id, r1.id, 'orders', ['id'], { column: 'owner', op: 'eq', value: '$username' });
  await putPolicy(db, admin.id, r2.id, 'orders', ['total'], {});
  const since = await lastLogId(db);
  const a1 = await assign(db, admin.id, ann.id, r1.id);
  t.match(a1, { user_id: ann.id, username: 'ann', role_id: r1.id, role: 'r1', assigned_by: admin.id });
  const a2 = await assign(db, admin.id, ann.id, r2.id);
  await t.rejects(assign(db, admin.id, ann.id, r2.id), {
    code: 'ERR_DATA_ASSIGNMENT_EXISTS',
    details: { assignment_id: a2.id },
  });
  await t.rejects(assign(db, admin.id, 99999, r2.id), { code: 'ERR_DATA_USER_NOT_FOUND' });
  t.equal(await hasEntitlement(db, ann.id), true);
  t.same(
    await events(db, since),
    [
      ['data.assignment.created', ann.id],
      ['bi.entitlement.granted', ann.id],
      ['data.assignment.created', ann.id],
    ],
    'the bit is granted once',
  );
  t.same(
    (await grantsOf(db, ann.id)).map((g) => [g.role, g.policies.map((p) => p.table)]),
    [
      ['r1', ['orders']],
      ['r2', ['orders']],
    ],
  );
  const eff = await effectivePolicyOf(db, ann.id);
  t.same(eff.tables[0].columns, ['id', 'total']);
  t.equal(eff.tables[0].all_rows, true, 'the empty filter dominates');
  await assign(db, admin.id, bob.id, r1.id);
  const page = await listAssignments(db, { roleId: r1.id, limit: 1 });
  t.equal(page.total, 2);
  t.same(
    page.items.map((a) => a.username),
    ['ann'],
  );
  t.equal((await listAssignments(db, { userId: ann.id })).total, 2);

  await unassign(db, admin.id, a1.id);
  t.equal(await hasEntitlement(db, ann.id), true, 'still has r2');
  await unassign(db, admin.id, a2.id);
  t.equal(await hasEntitlement(db, ann.id), false, 'no role left: no bit');
  await t.rejects(unassign(db, admin.id, a2.id), { code: 'ERR_DATA_ASSIGNMENT_NOT_FOUND' });
  t.same(
    (await events(db)).filter((e) => e[0] === 'bi.entitlement.revoked'),
    [['bi.entitlement.revoked', ann.id]],
  );
});

t.test(
  `deleting a role takes its grants and assignments, and the bit of users left without a role (${TEST_ENGINE})`,
  async (t) => {
    const { db, admin, ann, bob } = await setup(t);
    const r1 = await createRole(db, admin.id, 'r1');
    const r2 = await createRole(db, admin.id, 'r2');
    await putPolicy(db, admin.id, r1.id, 'orders', ['id'], {});
    await assign(db, admin.id, ann.id, r1.id);
    await assign(db, admin.id, bob.id, r1.id);
    await assign(db, admin.id, bob.id, r2.id);
    const since = await lastLogId(db);
    await deleteRole(db, admin.id, r1.id);
    t.same(await events(db, since), [
      ['data.role.deleted', null],
      ['bi.entitlement.revoked', ann.id],
    ]);
    t.equal(await hasEntitlement(db, ann.id), false);
    t.equal(await hasEntitlement(db, bob.id), true, 'bob keeps r2');
    t.equal(
      Number(
        (
          await db
            .selectFrom('data_policies')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('role_id', '=', r1.id)
            .executeTakeFirstOrThrow()
        ).n,
      ),
      0,
    );
    t.same(
      (await listAssignments(db)).items.map((a) => [a.username, a.role]),
      [['bob', 'r2']],
      "only the other role's assignment is left",
    );
  },
);

t.test(`a failure half-way leaves nothing half-written (${TEST_ENGINE})`, async (t) => {
  const { database, db, admin, ann, bob } = await setup(t);
  const r1 = await createRole(db, admin.id, 'r1');
  await putPolicy(db, admin.id, r1.id, 'orders', ['id'], {});
  const a = await assign(db, admin.id, ann.id, r1.id);
  await assign(db, admin.id, bob.id, r1.id);
  const before = await lastLogId(db);

  // Role delete: the role row is gone and the first bit revoked before the log entry fails.
  await failOn(database, 'bi.entitlement.revoked');
  await t.rejects(deleteRole(db, admin.id, r1.id), /injected failure/);
  t.ok(await getRoleByName(db, 'r1'), 'the role is still there');
  t.equal((await listPolicies(db, r1.id)).length, 1, 'its grant too');
  t.equal((await listAssignments(db, { roleId: r1.id })).total, 2, 'and its assignments');
  t.equal(await hasEntitlement(db, ann.id), true, 'ann keeps the bit');
  t.equal(await hasEntitlement(db, bob.id), true, 'bob keeps the bit');
  await t.rejects(unassign(db, admin.id, a.id), /injected failure/);
  t.equal((await listAssignments(db, { userId: ann.id })).total, 1, 'the assignment is still there');
  t.equal(await lastLogId(db), before, 'nothing was logged');

  // A caller's transaction carries the store's writes: rolled back with it.
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await createRole(trx, admin.id, 'inner');
      await putPolicy(trx, admin.id, r1.id, 'more', ['id'], {});
      throw new Error('caller gave up');
    }),
    /caller gave up/,
  );
  t.equal(await getRoleByName(db, 'inner'), undefined);
  t.equal((await listPolicies(db, r1.id)).length, 1);
});

t.test(`audit page: filters, prefix, keyset paging, names of actor and subject (${TEST_ENGINE})`, async (t) => {
  const { db, admin, ann } = await setup(t);
  const role = await createRole(db, admin.id, 'r');
  await assign(db, admin.id, ann.id, role.id);
  for (let i = 0; i < 5; i++) await createRole(db, admin.id, `p${i}`);
  const bi = await auditPage(db, { event: 'bi.*', limit: 10 });
  t.same(
    bi.events.map((e) => e.event),
    ['bi.entitlement.granted'],
  );
  t.same(bi.events[0].subject, { id: ann.id, username: 'ann', display_name: null });
  t.same(bi.events[0].actor, { id: admin.id, username: 'root', display_name: null });
  t.equal(bi.next_before, null);
  const none = await auditPage(db, { event: 'bi_*', limit: 10 });
  t.same(none.events, [], '_ is literal in an exact name');
  const p1 = await auditPage(db, { event: 'data.role.created', limit: 4 });
  t.equal(p1.events.length, 4);
  const p2 = await auditPage(db, { event: 'data.role.created', limit: 4, before: p1.next_before! });
  t.equal(p2.events.length, 2);
  t.equal(p2.next_before, null);
  const ids = [...p1.events, ...p2.events].map((e) => e.id);
  t.same(
    ids,
    [...ids].sort((x, y) => y - x),
    'newest first',
  );
  t.equal(
    (await auditPage(db, { subjectId: ann.id, actorId: admin.id, severity: 'info', limit: 50 })).events.length,
    2,
  );
  t.equal((await auditPage(db, { severity: 'critical', limit: 50 })).events.length, 0);
});
