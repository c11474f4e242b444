/**
 * Data-access policies govern data tables only: a grant naming a system catalogue of either
 * engine (sqlite_master, sqlite_schema, sqlite_*, pragma_*, pg_catalog.*, information_schema.*,
 * pg_*) is refused with 400 ERR_DATA_SYSTEM_TABLE, over HTTP and in the store, and no grant —
 * not even "*" — covers one in the effective policy the BI tool reads. Real app, real database.
 */
import t from 'tap';
import {
  createRole,
  isSystemCatalogue,
  putPolicy,
  assign,
  effectivePolicyOf,
  tableAccess,
} from '../../domain/data-access/index.js';
import { addUser, startTestApp, TEST_SECRETS } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

const BASE = '/api/data-authorization';
const PW = 'system-tables-password-01';
const SYSTEM = [
  'sqlite_master',
  'sqlite_schema',
  'SQLITE_MASTER',
  'sqlite_sequence',
  'sqlite_temp_master',
  'main.sqlite_master',
  'temp.sqlite_schema',
  'pragma_table_info',
  'pg_catalog.pg_authid',
  'PG_CATALOG.pg_user',
  'pg_authid',
  'pg_shadow',
  'information_schema.tables',
  'information_schema.columns',
  'pg_toast.pg_toast_2619',
  'pg_temp_1.x',
];
const DATA = ['orders', 'public.orders', 'sales.pg_like_name_ok', 'sqlitemaster', 'information', 'catalog.pgx'];

t.test('which names are system catalogues', async (t) => {
  for (const n of SYSTEM) t.ok(isSystemCatalogue(n), `${n}: a system catalogue`);
  for (const n of DATA.filter((x) => x !== 'sales.pg_like_name_ok'))
    t.notOk(isSystemCatalogue(n), `${n}: a data table`);
  t.ok(
    isSystemCatalogue('sales.pg_like_name_ok'),
    'a pg_ name in any schema is refused too (clear rule over a clever one)',
  );
});

t.test(`${TEST_ENGINE}: grants on system catalogues are refused; "*" does not cover them`, async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', PW, { superuser: true });
  const ursula = await addUser(app.database, 'ursula', PW);
  const admin = app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const role = await admin.json('POST', `${BASE}/roles`, { name: 'analysts' });
  t.equal(role.status, 201);
  for (const table of SYSTEM) {
    const r = await admin.json('PUT', `${BASE}/roles/${role.body.id}/policies/${encodeURIComponent(table)}`, {
      allowed_columns: ['*'],
    });
    t.equal(r.status, 400, `PUT ${table}: 400`);
    t.equal(r.body.error?.code, 'ERR_DATA_SYSTEM_TABLE', `PUT ${table}: ERR_DATA_SYSTEM_TABLE`);
  }
  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${role.body.id}/policies/orders`, { allowed_columns: ['id'] })).status,
    201,
    'a data table: granted',
  );
  t.equal(
    (await admin.json('PUT', `${BASE}/roles/${role.body.id}/policies/*`, { allowed_columns: ['*'] })).status,
    201,
    '"*": granted',
  );
  const listed = await admin.json('GET', `${BASE}/roles/${role.body.id}/policies`);
  t.same(
    listed.body.policies.map((p: { table: string }) => p.table),
    ['*', 'orders'],
    'no catalogue was stored',
  );

  // The store refuses on its own (a caller other than the route).
  const db = app.database.sql;
  const direct = await createRole(db, null, 'direct');
  await t.rejects(
    putPolicy(db, null, direct.id, 'sqlite_master', ['*'], {}),
    { code: 'ERR_DATA_SYSTEM_TABLE', status: 400 },
    'putPolicy refuses sqlite_master',
  );
  await t.rejects(
    putPolicy(db, null, direct.id, 'pg_catalog.pg_class', ['*'], {}),
    { code: 'ERR_DATA_SYSTEM_TABLE' },
    'putPolicy refuses pg_catalog.pg_class',
  );

  // A user with "*": every data table, no catalogue (what the BI tool asks the internal API).
  await assign(db, null, ursula.id, role.body.id);
  const eff = await effectivePolicyOf(db, ursula.id);
  t.ok(tableAccess(eff, 'invoices').policy, '"*" covers a data table');
  for (const table of ['sqlite_master', 'pg_catalog.pg_authid', 'information_schema.tables'])
    t.equal(tableAccess(eff, table).policy, null, `"*" does not cover ${table}`);
  const internal = await fetch(`${app.url}/api/internal/bi-policy/${ursula.id}?table=sqlite_master`, {
    headers: { authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}` },
  });
  const body = (await internal.json()) as { table?: { policy: unknown; sqlite: unknown } };
  t.equal(internal.status, 200);
  t.same(
    [body.table?.policy, body.table?.sqlite],
    [null, null],
    'the internal API: no policy and no query for sqlite_master',
  );
});
