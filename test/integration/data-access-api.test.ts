import t from 'tap';
import type { Test } from 'tap';
import { addUser, startTestApp, TEST_SECRETS, type TestApp } from '../helpers/app.js';
import type { Client } from '../helpers/client.js';

const PW = 'correct horse battery staple';
const BASE = '/api/data-authorization';

async function setup(t: Test): Promise<{ app: TestApp; admin: Client; user: Client; adminId: number; userId: number }> {
  const app = await startTestApp(t);
  const a = await addUser(app.database, 'root', PW, { superuser: true });
  const u = await addUser(app.database, 'ursula', PW);
  const admin = app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const user = app.client();
  t.equal((await user.login('ursula', PW)).status, 200);
  return { app, admin, user, adminId: a.id, userId: u.id };
}

t.test('auth matrix: every management endpoint', async (t) => {
  const { app, admin, user, userId } = await setup(t);
  let n = 0;
  // Each row makes what it needs with the superuser, so a successful call never depends on another.
  const fresh = async () => {
    const r = await admin.json('POST', `${BASE}/roles`, { name: `role${++n}` });
    return r.body.id as number;
  };
  const rows: { name: string; method: string; path: () => Promise<string>; body?: unknown; ok: number }[] = [
    { name: 'list roles', method: 'GET', path: async () => `${BASE}/roles`, ok: 200 },
    {
      name: 'create role',
      method: 'POST',
      path: async () => `${BASE}/roles`,
      body: () => ({ name: `made${++n}` }),
      ok: 201,
    },
    {
      name: 'patch role',
      method: 'PATCH',
      path: async () => `${BASE}/roles/${await fresh()}`,
      body: { description: 'x' },
      ok: 200,
    },
    { name: 'delete role', method: 'DELETE', path: async () => `${BASE}/roles/${await fresh()}`, ok: 204 },
    { name: 'list policies', method: 'GET', path: async () => `${BASE}/roles/${await fresh()}/policies`, ok: 200 },
    {
      name: 'put policy',
      method: 'PUT',
      path: async () => `${BASE}/roles/${await fresh()}/policies/orders`,
      body: { allowed_columns: ['id'] },
      ok: 201,
    },
    {
      name: 'delete policy',
      method: 'DELETE',
      path: async () => {
        const id = await fresh();
        await admin.json('PUT', `${BASE}/roles/${id}/policies/orders`, { allowed_columns: ['id'] });
        return `${BASE}/roles/${id}/policies/orders`;
      },
      ok: 204,
    },
    { name: 'list assignments', method: 'GET', path: async () => `${BASE}/assignments`, ok: 200 },
    {
      name: 'create assignment',
      method: 'POST',
      path: async () => `${BASE}/assignments`,
      body: async () => ({ user_id: userId, role_id: await fresh() }),
      ok: 201,
    },
    {
      name: 'delete assignment',
      method: 'DELETE',
      path: async () => {
        const r = await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: await fresh() });
        return `${BASE}/assignments/${r.body.id}`;
      },
      ok: 204,
    },
    { name: 'effective policy', method: 'GET', path: async () => `${BASE}/users/${userId}/effective-policy`, ok: 200 },
    { name: 'audit log', method: 'GET', path: async () => `${BASE}/audit`, ok: 200 },
  ];
  const bodyOf = async (b: unknown) => (typeof b === 'function' ? await (b as () => unknown)() : b);
  for (const row of rows) {
    t.test(`${row.method} ${row.name}`, async (t) => {
      const anon = app.client();
      await anon.fetchCsrf();
      const a = await anon.json(row.method, await row.path(), await bodyOf(row.body));
      t.equal(a.status, 401, 'anonymous');
      t.equal(a.body.error.code, 'ERR_AUTH_REQUIRED');
      const u = await user.json(row.method, await row.path(), await bodyOf(row.body));
      t.equal(u.status, 403, 'non-superuser');
      t.equal(u.body.error.code, 'ERR_AUTH_FORBIDDEN');
      if (row.method !== 'GET') {
        const c = await admin.json(row.method, await row.path(), await bodyOf(row.body), { 'x-csrf-token': '' });
        t.equal(c.status, 403, 'superuser without CSRF token');
        t.equal(c.body.error.code, 'ERR_AUTH_CSRF');
      }
      const s = await admin.json(row.method, await row.path(), await bodyOf(row.body));
      t.equal(s.status, row.ok, `superuser: ${JSON.stringify(s.body)}`);
    });
  }
});

t.test('auth matrix: internal endpoints', async (t) => {
  const { app, userId } = await setup(t);
  const rows = [
    { method: 'GET', path: `/api/internal/bi-policy/${userId}`, body: undefined, ok: 200 },
    {
      method: 'POST',
      path: '/api/internal/bi-audit',
      body: { user_id: userId, table: 'orders', decision: 'allowed' },
      ok: 200,
    },
  ];
  for (const row of rows) {
    t.test(`${row.method} ${row.path}`, async (t) => {
      const c = app.client();
      const none = await c.json(row.method, row.path, row.body);
      t.equal(none.status, 401, 'no secret');
      t.equal(none.body.error.code, 'ERR_AUTH_SECRET_REQUIRED');
      const basic = await c.json(row.method, row.path, row.body, {
        authorization: `Basic ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
      });
      t.equal(basic.status, 401, 'not a bearer');
      const wrong = await c.json(row.method, row.path, row.body, {
        authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}x`,
      });
      t.equal(wrong.status, 403, 'wrong secret');
      t.equal(wrong.body.error.code, 'ERR_AUTH_SECRET_INVALID');
      const prefix = await c.json(row.method, row.path, row.body, {
        authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET.slice(0, -1)}`,
      });
      t.equal(prefix.status, 403, 'a prefix of the secret');
      const ok = await c.json(row.method, row.path, row.body, {
        authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
      });
      t.equal(ok.status, row.ok, 'right secret');
    });
  }
  // A browser session is not the secret.
  const admin = app.client();
  await addUser(app.database, 'root2', PW, { superuser: true });
  await admin.login('root2', PW);
  t.equal(
    (await admin.json('GET', `/api/internal/bi-policy/${userId}`)).status,
    401,
    'a superuser session does not pass',
  );
  t.notOk(app.logs.text().includes(TEST_SECRETS.MCP_INTERNAL_SECRET), 'secret never logged');
});

t.test('roles, policies, assignments, effective policy, bi bit', async (t) => {
  const { app, admin, userId, adminId } = await setup(t);
  const roles0 = await admin.json('GET', `${BASE}/roles`);
  const biAdmin = roles0.body.roles.find((r: { name: string }) => r.name === 'bi_admin');
  t.ok(biAdmin?.builtin, 'bi_admin exists and is built in');
  t.equal(biAdmin.assignment_count, 0, 'a superuser created after the initial setup gets no data role');

  const sales = await admin.json('POST', `${BASE}/roles`, { name: 'sales', description: 'Sales team' });
  t.equal(sales.status, 201);
  const dup = await admin.json('POST', `${BASE}/roles`, { name: 'SALES' });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'ERR_DATA_ROLE_EXISTS');
  t.equal((await admin.json('POST', `${BASE}/roles`, { name: 'x', extra: 1 })).body.error.code, 'ERR_DATA_INVALID');
  t.equal((await admin.json('POST', `${BASE}/roles`, { name: 'bad name;' })).status, 400);
  t.equal(
    (await admin.json('PATCH', `${BASE}/roles/${biAdmin.id}`, { name: 'root_role' })).body.error.code,
    'ERR_DATA_ROLE_BUILTIN',
  );
  t.equal((await admin.json('DELETE', `${BASE}/roles/${biAdmin.id}`)).status, 409);
  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${biAdmin.id}/policies/orders`, { allowed_columns: ['id'] })).status,
    409,
  );
  t.equal((await admin.json('PATCH', `${BASE}/roles/99999`, { name: 'y' })).body.error.code, 'ERR_DATA_ROLE_NOT_FOUND');
  t.equal((await admin.json('PATCH', `${BASE}/roles/abc`, { name: 'y' })).status, 400);

  const sid = sales.body.id;
  const put = await admin.json('PUT', `${BASE}/roles/${sid}/policies/orders`, {
    allowed_columns: ['id', 'amount'],
    row_filter: { column: 'owner', op: 'eq', value: '$username' },
  });
  t.equal(put.status, 201);
  t.same(put.body.allowed_columns, ['id', 'amount']);
  const put2 = await admin.json('PUT', `${BASE}/roles/${sid}/policies/orders`, {
    allowed_columns: ['id', 'amount', 'region'],
    row_filter: { column: 'owner', op: 'eq', value: '$username' },
  });
  t.equal(put2.status, 200, 'replace answers 200');
  const bad = [
    { allowed_columns: ['id'], row_filter: "owner = 'x' OR 1=1" },
    { allowed_columns: ['id'], row_filter: { sql: '1=1' } },
    { allowed_columns: ['id'], row_filter: { column: 'a', op: 'like', value: '%' } },
    { allowed_columns: ['id'], row_filter: { column: 'a"--', op: 'eq', value: 1 } },
    { allowed_columns: ['id'], row_filter: { column: 'a', op: 'in', value: [] } },
    { allowed_columns: ['id'], row_filter: { column: 'a', op: 'is_null', value: 'yes' } },
    { allowed_columns: ['id; DROP TABLE users'] },
    { allowed_columns: ['*', 'id'] },
    { allowed_columns: [] },
  ];
  for (const b of bad) {
    const r = await admin.json('PUT', `${BASE}/roles/${sid}/policies/orders`, b);
    t.equal(r.status, 400, JSON.stringify(b));
    t.equal(r.body.error.code, 'ERR_DATA_INVALID');
  }
  let deep: unknown = { column: 'a', op: 'eq', value: 1 };
  for (let i = 0; i < 6; i++) deep = { all: [deep] };
  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${sid}/policies/orders`, { allowed_columns: ['id'], row_filter: deep }))
      .status,
    400,
    'too deep',
  );
  const wide = {
    any: Array.from({ length: 50 }, () => ({
      all: [
        { column: 'a', op: 'eq', value: 1 },
        { column: 'b', op: 'eq', value: 2 },
      ],
    })),
  };
  const big = await admin.json('PUT', `${BASE}/roles/${sid}/policies/orders`, {
    allowed_columns: ['id'],
    row_filter: wide,
  });
  t.equal(big.body.error.code, 'ERR_DATA_FILTER_TOO_LARGE', 'too many nodes');
  t.equal(
    (
      await admin.json('PUT', `${BASE}/roles/${sid}/policies/${encodeURIComponent('x"; drop')}`, {
        allowed_columns: ['id'],
      })
    ).status,
    400,
    'hostile table name',
  );
  t.equal(
    (await admin.json('DELETE', `${BASE}/roles/${sid}/policies/nothing`)).body.error.code,
    'ERR_DATA_POLICY_NOT_FOUND',
  );
  t.equal(
    (
      await admin.json('PUT', `${BASE}/roles/${sid}/policies/*`, {
        allowed_columns: ['id'],
        row_filter: { column: 'region', op: 'eq', value: 'eu' },
      })
    ).status,
    201,
    'wildcard table',
  );

  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${sid}/policies/public.invoices`, { allowed_columns: ['*'] })).status,
    201,
    'schema-qualified table',
  );
  t.equal((await admin.json('DELETE', `${BASE}/roles/${sid}/policies/public.invoices`)).status, 204);
  const pol = await admin.json('GET', `${BASE}/roles/${sid}/policies`);
  t.same(
    pol.body.policies.map((p: { table: string }) => p.table),
    ['*', 'orders'],
  );
  const counted = (await admin.json('GET', `${BASE}/roles`)).body.roles.find((r: { id: number }) => r.id === sid);
  t.equal(counted.policy_count, 2);

  // Rule 1: a login alone gives nothing.
  const none = await admin.json('GET', `${BASE}/users/${userId}/effective-policy`);
  t.same(none.body.tables, []);
  t.equal(none.body.any_table, null);
  t.equal(none.body.bi, false);

  const asg = await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: sid });
  t.equal(asg.status, 201);
  t.equal(asg.body.username, 'ursula');
  t.equal(
    (await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: sid })).body.error.code,
    'ERR_DATA_ASSIGNMENT_EXISTS',
  );
  t.equal(
    (await admin.json('POST', `${BASE}/assignments`, { user_id: 9999, role_id: sid })).body.error.code,
    'ERR_DATA_USER_NOT_FOUND',
  );
  t.equal((await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: 9999 })).status, 404);
  const eff = await admin.json('GET', `${BASE}/users/${userId}/effective-policy`);
  t.equal(eff.body.bi, true, 'bi bit set with the first role');
  const orders = eff.body.tables.find((x: { table: string }) => x.table === 'orders');
  t.same(orders.columns, ['amount', 'id', 'region']);
  t.same(orders.row_filter, {
    any: [
      { column: 'owner', op: 'eq', value: 'ursula' },
      { column: 'region', op: 'eq', value: 'eu' },
    ],
  });
  t.ok(
    eff.body.explanation.some((l: string) => l.includes('sales')),
    'explanation names the role',
  );

  const list = await admin.json('GET', `${BASE}/assignments?user_id=${userId}`);
  t.equal(list.body.total, 1);
  const internal = await app.client().json('GET', `/api/internal/bi-policy/${userId}?table=orders`, undefined, {
    authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
  });
  t.equal(internal.status, 200);
  t.equal(
    internal.body.table.sqlite.sql,
    'SELECT "amount", "id", "region" FROM "orders" WHERE ("owner" = ? OR "region" = ?)',
  );
  t.same(internal.body.table.postgres.params, ['ursula', 'eu']);
  t.ok(internal.body.compiled.sqlite.any_table, 'wildcard grant compiled for other tables');

  // Removing the last role clears the bit; both changes are in the action log.
  t.equal((await admin.json('DELETE', `${BASE}/assignments/${asg.body.id}`)).status, 204);
  t.equal(
    (await admin.json('DELETE', `${BASE}/assignments/${asg.body.id}`)).body.error.code,
    'ERR_DATA_ASSIGNMENT_NOT_FOUND',
  );
  t.equal((await admin.json('GET', `${BASE}/users/${userId}/effective-policy`)).body.bi, false);
  const bits = await admin.json('GET', `${BASE}/audit?event=bi.entitlement.*&subject_id=${userId}`);
  t.same(
    bits.body.events.map((e: { event: string }) => e.event),
    ['bi.entitlement.revoked', 'bi.entitlement.granted'],
  );
  t.equal(bits.body.events[0].actor_id, adminId);

  // Deleting a role clears the bit of users who held only it.
  await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: sid });
  t.equal((await admin.json('DELETE', `${BASE}/roles/${sid}`)).status, 204);
  const after = await admin.json('GET', `${BASE}/users/${userId}/effective-policy`);
  t.equal(after.body.bi, false);
  t.same(after.body.roles, []);
  const changes = await admin.json('GET', `${BASE}/audit?event=data.*`);
  t.ok(changes.body.events.some((e: { event: string }) => e.event === 'data.role.deleted'));
  t.ok(changes.body.events.some((e: { event: string }) => e.event === 'data.policy.updated'));
});

t.test('rule 1: logging in and organisation membership, even as a manager, grant no data access', async (t) => {
  const { app, admin, user, userId } = await setup(t);
  const internal = (path: string) =>
    app.client().json('GET', path, undefined, { authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}` });
  // Grants exist and a colleague in the same organisation holds them: none of it reaches Ursula.
  const payroll = (await admin.json('POST', `${BASE}/roles`, { name: 'payroll' })).body.id;
  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${payroll}/policies/payroll`, { allowed_columns: ['*'] })).status,
    201,
  );
  t.equal((await admin.json('PUT', `${BASE}/roles/${payroll}/policies/*`, { allowed_columns: ['*'] })).status, 201);
  const carl = await addUser(app.database, 'carl', PW);
  t.equal((await admin.json('POST', `${BASE}/assignments`, { user_id: carl.id, role_id: payroll })).status, 201);
  const org = (await admin.json('POST', '/api/identity/organisations', { name: 'Payroll department' })).body.id;
  t.equal((await admin.json('PUT', `/api/identity/organisations/${org}/members/${carl.id}`)).status, 200);

  const nothing = async (why: string) => {
    const eff = await admin.json('GET', `${BASE}/users/${userId}/effective-policy`);
    t.equal(eff.status, 200);
    t.same(eff.body.roles, [], `${why}: no data role`);
    t.same(eff.body.tables, [], `${why}: no table`);
    t.equal(eff.body.any_table, null, `${why}: no wildcard`);
    t.equal(eff.body.bi, false, `${why}: no bi bit`);
    const pol = await internal(`/api/internal/bi-policy/${userId}?table=payroll`);
    t.equal(pol.status, 200);
    t.equal(pol.body.bi, false);
    t.same(pol.body.policy.tables, [], `${why}: the internal endpoint grants no table`);
    t.equal(pol.body.policy.any_table, null);
    t.same(pol.body.compiled.sqlite, { dialect: 'sqlite', tables: {}, any_table: null }, `${why}: nothing compiled`);
    t.same(pol.body.compiled.postgres, { dialect: 'postgres', tables: {}, any_table: null });
    t.same(
      pol.body.table,
      { table: 'payroll', policy: null, sqlite: null, postgres: null },
      `${why}: no SELECT for payroll`,
    );
    t.notOk(
      await app.database.sql
        .selectFrom('user_entitlements')
        .select('name')
        .where('user_id', '=', userId)
        .executeTakeFirst(),
      `${why}: no entitlement row`,
    );
  };

  t.equal((await user.json('GET', '/api/auth/me')).status, 200, 'Ursula is logged in');
  await nothing('logged in');
  t.equal((await admin.json('PUT', `/api/identity/organisations/${org}/members/${userId}`)).status, 200);
  await nothing('organisation member');
  t.equal(
    (await admin.json('PUT', `/api/identity/organisations/${org}/members/${userId}`, { role: 'manager' })).status,
    200,
  );
  await nothing('organisation manager');
  // What a manager can do in the organisation (teams, an unrestricted agent policy) adds no data either.
  const team = await user.json('POST', `/api/identity/organisations/${org}/teams`, { name: 'Payroll' });
  t.equal(team.status, 201);
  t.equal((await user.json('PUT', `/api/identity/teams/${team.body.id}/members/${userId}`)).status, 200);
  t.equal((await user.json('PUT', `/api/identity/teams/${team.body.id}/members/${carl.id}`)).status, 200);
  t.equal(
    (
      await user.json('POST', `/api/identity/organisations/${org}/agent-policies`, {
        name: 'all tools',
        applies_to: 'all',
      })
    ).status,
    201,
  );
  await nothing('manager with a team and an agent policy');
  // Nor can a manager give themselves a data role.
  const self = await user.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: payroll });
  t.equal(self.status, 403);
  t.equal(self.body.error.code, 'ERR_AUTH_FORBIDDEN');
  t.equal((await user.json('GET', `${BASE}/users/${userId}/effective-policy`)).status, 403);
  await nothing('after trying');
  // The colleague's grant is untouched: access comes from the data role only.
  t.same(
    (await admin.json('GET', `${BASE}/users/${carl.id}/effective-policy`)).body.roles.map(
      (r: { name: string }) => r.name,
    ),
    ['payroll'],
  );
  const bits = await admin.json('GET', `${BASE}/audit?event=bi.entitlement.*&subject_id=${userId}`);
  t.same(bits.body.events, [], 'no bi entitlement ever granted to Ursula');
});

t.test('bi-audit keeps only known fields; bi.denied is critical', async (t) => {
  const { app, admin, userId } = await setup(t);
  const SQL = 'SELECT salary FROM payroll WHERE ssn = 123456789';
  const VALUE = 'row-value-zz9-secret';
  const r = await app.client().json(
    'POST',
    '/api/internal/bi-audit',
    {
      user_id: userId,
      table: 'payroll',
      decision: 'denied',
      columns: ['salary', 'x; DROP'],
      reason: 'no grant on payroll',
      sql: SQL,
      query: SQL,
      rows: [{ salary: VALUE }],
      values: [VALUE],
    },
    { authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}` },
  );
  t.equal(r.status, 200, 'unknown fields are dropped, not rejected');
  t.equal(r.body.event, 'bi.denied');
  t.equal(r.body.severity, 'critical');
  const row = await app.database.sql
    .selectFrom('action_log')
    .selectAll()
    .where('id', '=', r.body.id)
    .executeTakeFirstOrThrow();
  t.equal(row.event, 'bi.denied');
  t.equal(row.severity, 'critical');
  t.equal(row.subject_id, userId);
  const data = JSON.parse(row.data);
  t.same(Object.keys(data).sort(), ['columns', 'columns_dropped', 'decision', 'reason', 'table']);
  t.same(data.columns, ['salary']);
  // Nowhere in the database or the logs.
  const dump = JSON.stringify(await app.database.sql.selectFrom('action_log').selectAll().execute());
  for (const s of [SQL, VALUE, 'ssn', 'DROP']) {
    t.notOk(dump.includes(s), `db holds no ${s}`);
    t.notOk(app.logs.text().includes(s), `logs hold no ${s}`);
  }
  const crit = await admin.json('GET', `${BASE}/audit?severity=critical`);
  t.same(
    crit.body.events.map((e: { event: string }) => e.event),
    ['bi.denied'],
  );

  const allowed = await app.client().json(
    'POST',
    '/api/internal/bi-audit',
    { user_id: userId, table: 'orders', decision: 'allowed' },
    {
      authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
    },
  );
  t.equal(allowed.body.severity, 'info');
  const bad = await app.client().json(
    'POST',
    '/api/internal/bi-audit',
    { user_id: userId, table: 'orders', decision: 'maybe', sql: SQL },
    {
      authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
    },
  );
  t.equal(bad.status, 400);
  t.notOk(JSON.stringify(bad.body).includes(SQL), 'the error does not echo dropped fields');
  const ghost = await app.client().json(
    'POST',
    '/api/internal/bi-audit',
    { user_id: 99999, table: 'orders', decision: 'denied' },
    {
      authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
    },
  );
  t.equal(ghost.body.error.code, 'ERR_DATA_USER_NOT_FOUND');
  t.notOk(app.logs.text().includes(SQL), 'logs still clean');
});

t.test('hostile values are stored and compiled as bound parameters; hostile names are refused', async (t) => {
  const { app, admin, userId } = await setup(t);
  const role = (await admin.json('POST', `${BASE}/roles`, { name: 'h' })).body.id;
  const HOSTILE = ["x' OR '1'='1", 'a; DROP TABLE users; --', '/* c */', 'zoë 😀', '"quoted"'];
  const put = await admin.json('PUT', `${BASE}/roles/${role}/policies/orders`, {
    allowed_columns: ['id'],
    row_filter: {
      any: [
        { column: 'note', op: 'in', value: HOSTILE },
        { column: 'owner', op: 'eq', value: HOSTILE[1] },
      ],
    },
  });
  t.equal(put.status, 201);
  await admin.json('POST', `${BASE}/assignments`, { user_id: userId, role_id: role });
  const r = await app.client().json('GET', `/api/internal/bi-policy/${userId}?table=orders`, undefined, {
    authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`,
  });
  for (const d of ['sqlite', 'postgres'] as const) {
    const q = r.body.table[d];
    t.same(q.params, [...HOSTILE, HOSTILE[1]], `${d}: every value bound`);
    for (const h of HOSTILE) t.notOk(q.sql.includes(h), `${d}: ${h} not in the SQL text`);
  }
  t.equal(
    r.body.table.postgres.sql,
    'SELECT "id" FROM "orders" WHERE ("note" IN ($1, $2, $3, $4, $5) OR "owner" = $6)',
  );
  t.ok(
    await app.database.sql.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst(),
    'users table intact',
  );
  for (const name of ['tä', 'ta ble', 'orders;', 'o"rders', 'orders--', 'a.b.c', '１２']) {
    const bad = await admin.json('PUT', `${BASE}/roles/${role}/policies/${encodeURIComponent(name)}`, {
      allowed_columns: ['id'],
    });
    t.equal(bad.status, 400, `table ${name}`);
    const col = await admin.json('PUT', `${BASE}/roles/${role}/policies/orders`, { allowed_columns: [name] });
    t.equal(col.status, 400, `column ${name}`);
    const fcol = await admin.json('PUT', `${BASE}/roles/${role}/policies/orders`, {
      allowed_columns: ['id'],
      row_filter: { column: name, op: 'eq', value: 1 },
    });
    t.equal(fcol.status, 400, `filter column ${name}`);
  }
});

t.test('audit listing pages newest first and filters', async (t) => {
  const { admin } = await setup(t);
  for (let i = 0; i < 7; i++) await admin.json('POST', `${BASE}/roles`, { name: `p${i}` });
  const seen: number[] = [];
  let before: number | null = null;
  for (let page = 0; page < 10; page++) {
    const q: string = `${BASE}/audit?event=data.role.created&limit=3${before ? `&before=${before}` : ''}`;
    const r: { body: { events: { id: number }[]; next_before: number | null } } = await admin.json('GET', q);
    seen.push(...r.body.events.map((e) => e.id));
    before = r.body.next_before;
    if (!before) break;
  }
  t.equal(seen.length, 7);
  t.same(
    seen,
    [...seen].sort((a, b) => b - a),
    'newest first',
  );
  t.equal((await admin.json('GET', `${BASE}/audit?severity=loud`)).status, 400);
  t.equal((await admin.json('GET', `${BASE}/audit?limit=100000`)).status, 400);
  t.equal((await admin.json('GET', `${BASE}/audit?event=${encodeURIComponent("x' OR 1=1")}`)).status, 400);
});

t.test('internal endpoints with no MCP_INTERNAL_SECRET configured: every call is refused', async (t) => {
  const app = await startTestApp(t, { env: { MCP_INTERNAL_SECRET: '' } });
  t.equal(app.config.mcpInternalSecret, undefined, 'no secret configured');
  for (const bearer of ['', 'undefined', 'null', 'test-mcp-internal-secret-0123456789abcdef']) {
    const r = await app
      .client()
      .json('GET', '/api/internal/bi-policy/1', undefined, { authorization: `Bearer ${bearer}` });
    t.equal(r.status, bearer ? 403 : 401, `Bearer "${bearer}"`);
    t.equal(r.body.error.code, bearer ? 'ERR_AUTH_SECRET_INVALID' : 'ERR_AUTH_SECRET_REQUIRED');
  }
  const audit = await app
    .client()
    .json(
      'POST',
      '/api/internal/bi-audit',
      { user_id: 1, table: 't', decision: 'denied' },
      { authorization: 'Bearer anything-at-all' },
    );
  t.equal(audit.status, 403);
  const bi = await app.database.sql.selectFrom('action_log').select('event').where('event', 'like', 'bi.%').execute();
  t.same(bi, [], 'nothing recorded');
});
