import t from 'tap';
import {
  applyPolicy,
  compileTablePolicy,
  policyForTable,
  resolveEffectivePolicy,
  type RoleGrants,
  type RowFilter,
} from '../../domain/data-access/index.js';

const user = { id: 7, username: 'alice', is_active: true };
const grant = (table: string, allowed_columns: string[], row_filter: RowFilter = {}) => ({
  table,
  allowed_columns,
  row_filter,
});
const role = (id: number, name: string, ...policies: ReturnType<typeof grant>[]): RoleGrants => ({
  role_id: id,
  role: name,
  policies,
});

const regionEu = { column: 'region', op: 'eq', value: 'eu' } as const;
const ownerMe = { column: 'owner_id', op: 'eq', value: '$user_id' } as const;

interface Case {
  name: string;
  roles: RoleGrants[];
  table: string;
  /** null: no policy for the table. */
  expect: null | { columns: string[]; all_rows: boolean; row_filter: RowFilter; from: string[] };
}

const cases: Case[] = [
  {
    name: 'no role: no policy',
    roles: [],
    table: 'orders',
    expect: null,
  },
  {
    name: 'grant on another table only: no policy for this one (rule 2)',
    roles: [role(1, 'sales', grant('customers', ['id']))],
    table: 'orders',
    expect: null,
  },
  {
    name: 'one role, restricted columns and rows; $user_id substituted',
    roles: [role(1, 'sales', grant('orders', ['id', 'amount'], ownerMe))],
    table: 'orders',
    expect: {
      columns: ['amount', 'id'],
      all_rows: false,
      row_filter: { column: 'owner_id', op: 'eq', value: 7 },
      from: ['sales'],
    },
  },
  {
    name: 'two roles with different columns and filters: columns union, rows OR',
    roles: [
      role(1, 'sales', grant('orders', ['id', 'amount'], ownerMe)),
      role(2, 'eu', grant('orders', ['id', 'region'], regionEu)),
    ],
    table: 'orders',
    expect: {
      columns: ['amount', 'id', 'region'],
      all_rows: false,
      row_filter: { any: [{ column: 'owner_id', op: 'eq', value: 7 }, regionEu] },
      from: ['sales', 'eu'],
    },
  },
  {
    name: 'restricted + unrestricted rows on one table: unrestricted dominates (rule 3)',
    roles: [role(1, 'sales', grant('orders', ['id'], ownerMe)), role(2, 'auditor', grant('orders', ['id', 'amount']))],
    table: 'orders',
    expect: { columns: ['amount', 'id'], all_rows: true, row_filter: {}, from: ['sales', 'auditor'] },
  },
  {
    name: 'wildcard table grant applies to a table nobody names',
    roles: [role(1, 'reader', grant('*', ['id'], regionEu))],
    table: 'anything',
    expect: { columns: ['id'], all_rows: false, row_filter: regionEu, from: ['reader'] },
  },
  {
    name: 'wildcard grant adds to a named grant on the same table',
    roles: [role(1, 'reader', grant('*', ['id'], regionEu)), role(2, 'sales', grant('orders', ['amount'], ownerMe))],
    table: 'orders',
    expect: {
      columns: ['amount', 'id'],
      all_rows: false,
      row_filter: { any: [{ column: 'owner_id', op: 'eq', value: 7 }, regionEu] },
      from: ['sales', 'reader'],
    },
  },
  {
    name: 'bi_admin wildcard: all columns, all rows, everywhere',
    roles: [role(1, 'bi_admin', grant('*', ['*'])), role(2, 'sales', grant('orders', ['id'], ownerMe))],
    table: 'orders',
    expect: { columns: ['*'], all_rows: true, row_filter: {}, from: ['sales', 'bi_admin'] },
  },
  {
    name: 'same filter from two roles is not repeated',
    roles: [role(1, 'a', grant('orders', ['id'], regionEu)), role(2, 'b', grant('orders', ['id'], regionEu))],
    table: 'orders',
    expect: { columns: ['id'], all_rows: false, row_filter: regionEu, from: ['a', 'b'] },
  },
  {
    name: '$username inside an in-list is substituted',
    roles: [role(1, 'a', grant('orders', ['id'], { column: 'owner', op: 'in', value: ['$username', 'shared'] }))],
    table: 'orders',
    expect: {
      columns: ['id'],
      all_rows: false,
      row_filter: { column: 'owner', op: 'in', value: ['alice', 'shared'] },
      from: ['a'],
    },
  },
];

t.test('union semantics', async (t) => {
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const eff = resolveEffectivePolicy(user, c.roles, c.roles.length > 0);
      const p = policyForTable(eff, c.table);
      if (c.expect === null) {
        t.equal(p, null);
        return;
      }
      t.ok(p);
      t.same(p!.columns, c.expect.columns, 'columns');
      t.equal(p!.all_rows, c.expect.all_rows, 'all_rows');
      t.same(p!.row_filter, c.expect.row_filter, 'row filter');
      t.same(
        p!.grants.map((g) => g.role),
        c.expect.from,
        'explanation names the roles',
      );
      t.ok(
        p!.grants.every((g) => typeof g.gives === 'string' && g.gives.includes(g.role)),
        'each grant says what it gives',
      );
    });
  }
});

t.test('rows through the evaluator: the union lets through what either role allows', async (t) => {
  const rows = [
    { id: 1, owner_id: 7, region: 'us', amount: 10 },
    { id: 2, owner_id: 8, region: 'eu', amount: 20 },
    { id: 3, owner_id: 8, region: 'us', amount: 30 },
  ];
  const eff = resolveEffectivePolicy(user, cases[3].roles, true);
  t.same(applyPolicy(policyForTable(eff, 'orders'), rows), [
    { amount: 10, id: 1, region: 'us' },
    { amount: 20, id: 2, region: 'eu' },
  ]);
  t.same(applyPolicy(policyForTable(eff, 'payroll'), rows), [], 'no grant: nothing');
});

t.test('inactive users get nothing', async (t) => {
  const eff = resolveEffectivePolicy({ ...user, is_active: false }, [role(1, 'bi_admin', grant('*', ['*']))], true);
  t.equal(policyForTable(eff, 'orders'), null);
  t.match(eff.explanation.join(' '), /inactive/);
});

t.test('compiled forms for both dialects', async (t) => {
  const eff = resolveEffectivePolicy(user, cases[3].roles, true);
  const p = policyForTable(eff, 'orders')!;
  const lite = compileTablePolicy(p, 'sqlite');
  t.equal(lite.sql, 'SELECT "amount", "id", "region" FROM "orders" WHERE ("owner_id" = ? OR "region" = ?)');
  t.same(lite.params, [7, 'eu']);
  const pg = compileTablePolicy(p, 'postgres');
  t.equal(pg.sql, 'SELECT "amount", "id", "region" FROM "orders" WHERE ("owner_id" = $1 OR "region" = $2)');
  t.same(pg.params, [7, 'eu']);
  const all = compileTablePolicy(
    {
      table: 'x',
      columns: ['a'],
      all_rows: false,
      grants: [],
      explanation: '',
      row_filter: {
        all: [
          { column: 'a', op: 'not_in', value: [true, 'z'] },
          { column: 'b', op: 'is_null', value: false },
        ],
      },
    },
    'sqlite',
  );
  t.equal(all.sql, 'SELECT "a" FROM "x" WHERE ("a" NOT IN (?, ?) AND "b" IS NOT NULL)');
  t.same(all.params, [1, 'z'], 'booleans bind as 1/0 on SQLite');
});
