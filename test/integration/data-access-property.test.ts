import t, { type Test } from 'tap';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import {
  applyPolicy,
  compileTablePolicy,
  COLUMN_RE,
  policyForTable,
  resolveEffectivePolicy,
  type Node,
  type RoleGrants,
  type RowFilter,
  type Scalar,
} from '../../domain/data-access/index.js';
import { isAppError } from '../../core/index.js';

/**
 * Property: in a real SQLite database, the compiled SQL of a user's effective policy returns
 * exactly the rows and columns the reference evaluator allows. Columns c0..c4 have no declared
 * type (no affinity), so values of every kind are stored and compared as they are.
 */
const COLS = ['c0', 'c1', 'c2', 'c3', 'c4'];
const HOSTILE = ["x'y", '"', "'; DROP TABLE t; --", '/* c */', 'é', '😀', 'Ω', '\u0000z', 'a\nb', '$user_id', '1'];
const VALUE_POOL: Scalar[] = [-2, -1, 0, 1, 2, 2.5, 'a', 'b', 'A', '', ...HOSTILE];
const USERNAMES = ['alice', "o'brien", 'bob"; --', 'zoë', '😀'];

const scalar: fc.Arbitrary<Scalar> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...VALUE_POOL) },
  { weight: 1, arbitrary: fc.constantFrom<Scalar>(true, false, '$user_id', '$username') },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.integer({ min: -1000, max: 1000 }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }) },
);
const cell: fc.Arbitrary<Scalar | null> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: fc.constantFrom<Scalar>(...VALUE_POOL, 1, 2, 3, 4, 5, ...USERNAMES) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
);
const column = fc.constantFrom(...COLS);

const leaf: fc.Arbitrary<Node> = fc.oneof(
  fc.record({
    column,
    op: fc.constantFrom('eq', 'neq', 'lt', 'lte', 'gt', 'gte' as const),
    value: scalar,
  }) as fc.Arbitrary<Node>,
  fc.record({
    column,
    op: fc.constantFrom('in', 'not_in' as const),
    value: fc.array(scalar, { minLength: 1, maxLength: 4 }),
  }) as fc.Arbitrary<Node>,
  fc.record({ column, op: fc.constant('is_null' as const), value: fc.boolean() }) as fc.Arbitrary<Node>,
);
/** Roles with grants on t, '*' or another table, whose row filters nest the given leaves. */
function rolesOf(leafArb: fc.Arbitrary<Node>, cols: readonly string[]): fc.Arbitrary<RoleGrants[]> {
  const node: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leafArb,
      fc.record({ all: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ any: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
    ),
  })).node;
  const filter: fc.Arbitrary<RowFilter> = fc.oneof(
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 4, arbitrary: node },
  );
  const columns = fc.oneof(
    { weight: 1, arbitrary: fc.constant<string[]>(['*']) },
    { weight: 3, arbitrary: fc.uniqueArray(fc.constantFrom('id', ...cols), { minLength: 1, maxLength: 4 }) },
  );
  const policy = fc.record({ table: fc.constantFrom('t', '*', 'other'), allowed_columns: columns, row_filter: filter });
  return fc
    .array(fc.uniqueArray(policy, { maxLength: 3, selector: (p) => p.table }), { maxLength: 4 })
    .map((rs) => rs.map((policies, i) => ({ role_id: i + 1, role: `r${i + 1}`, policies })));
}
const roles = rolesOf(leaf, COLS);
const user = fc.record({
  id: fc.integer({ min: 1, max: 5 }),
  username: fc.constantFrom(...USERNAMES),
  is_active: fc.constant(true),
});

function canon(rows: Record<string, unknown>[]): string[] {
  return rows
    .map((r) =>
      JSON.stringify(
        Object.keys(r)
          .sort()
          .map((k) => [k, r[k]]),
      ),
    )
    .sort();
}

/**
 * Run the property on table t of `db` (columns id + `cols`): random rows from `rowArb`, the
 * compiled SQL's rows and columns must equal the reference evaluator's.
 */
function equivalence(
  t: Test,
  db: Database.Database,
  cols: readonly string[],
  rolesArb: fc.Arbitrary<RoleGrants[]>,
  rowArb: fc.Arbitrary<(Scalar | null)[]>,
): void {
  const insert = db.prepare(`INSERT INTO t (id, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
  const store = (v: Scalar | null) => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
  let nonEmpty = 0;
  let checked = 0;
  fc.assert(
    fc.property(user, rolesArb, fc.array(rowArb, { maxLength: 12 }), (u, rs, data) => {
      db.exec('DELETE FROM t');
      for (const [i, cells] of data.entries()) insert.run(i + 1, ...cells.map(store));
      // The rows as the database holds them (a REAL column gives back 2 for 2.0, TEXT keeps text).
      const rows = db.prepare('SELECT * FROM t ORDER BY id').all() as Record<string, unknown>[];
      const eff = resolveEffectivePolicy(u, rs, rs.length > 0);
      const p = policyForTable(eff, 't');
      const expected = applyPolicy(p, rows);
      if (!p) {
        // No grant reaches t: no policy at all (docs/rules.md#data-access-rules, rule 2), and the evaluator allows nothing.
        const reaches = rs.some((r) => r.policies.some((x) => x.table === 't' || x.table === '*'));
        if (reaches) throw new Error('a grant reaches t but there is no policy');
        return expected.length === 0;
      }
      const q = compileTablePolicy(p, 'sqlite');
      const got = db.prepare(q.sql).all(...q.params) as Record<string, unknown>[];
      checked++;
      if (got.length) nonEmpty++;
      const a = canon(got);
      const b = canon(expected);
      if (JSON.stringify(a) !== JSON.stringify(b)) {
        throw new Error(
          `mismatch\nsql: ${q.sql}\nparams: ${JSON.stringify(q.params)}\nsql rows: ${a.join('\n')}\nref rows: ${b.join('\n')}`,
        );
      }
      return true;
    }),
    { numRuns: 400, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) },
  );
  t.ok(checked > 50, `compiled and ran ${checked} policies`);
  t.ok(nonEmpty > 10, `${nonEmpty} returned rows (the property is not vacuous)`);
}

t.test('compiled SQL on SQLite returns exactly what the reference evaluator allows', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, ${COLS.join(', ')}); CREATE TABLE sentinel (x)`);
  equivalence(t, db, COLS, roles, fc.tuple(cell, cell, cell, cell, cell));
  t.ok(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sentinel'").get(), 'nothing was dropped');
});

t.test(
  "typed columns (INTEGER, TEXT, REAL), filters with values of each column's type: the same equivalence",
  async (t) => {
    // docs/data-access.md: "write filters with values of the column's type". Under that contract the
    // property holds on typed tables too, where SQLite's affinity would otherwise coerce ('1' = 1).
    const db = new Database(':memory:');
    t.teardown(() => db.close());
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, owner INTEGER, region TEXT, amount REAL)');
    const int = fc.oneof(fc.integer({ min: -3, max: 6 }), fc.constant<Scalar>('$user_id'));
    const text = fc.oneof(
      fc.constantFrom<Scalar>('EU', 'US', 'eu', '', "o'brien", ...USERNAMES),
      fc.constant<Scalar>('$username'),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
    );
    const real = fc.oneof(
      fc.constantFrom<Scalar>(-1.5, 0, 2, 2.5, 10),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -100, max: 100 }),
    );
    const typedLeaf = (col: string, v: fc.Arbitrary<Scalar>): fc.Arbitrary<Node> =>
      fc.oneof(
        fc.record({
          column: fc.constant(col),
          op: fc.constantFrom('eq', 'neq', 'lt', 'lte', 'gt', 'gte' as const),
          value: v,
        }) as fc.Arbitrary<Node>,
        fc.record({
          column: fc.constant(col),
          op: fc.constantFrom('in', 'not_in' as const),
          value: fc.array(v, { minLength: 1, maxLength: 4 }),
        }) as fc.Arbitrary<Node>,
        fc.record({
          column: fc.constant(col),
          op: fc.constant('is_null' as const),
          value: fc.boolean(),
        }) as fc.Arbitrary<Node>,
      );
    const cols = ['owner', 'region', 'amount'];
    const typedRoles = rolesOf(
      fc.oneof(typedLeaf('owner', int), typedLeaf('region', text), typedLeaf('amount', real)),
      cols,
    );
    const orNull = <T>(a: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 4, arbitrary: a });
    const row = fc.tuple(
      orNull(fc.integer({ min: -3, max: 6 })),
      orNull(fc.constantFrom<Scalar>('EU', 'US', 'eu', '', "o'brien", ...USERNAMES)),
      orNull(fc.constantFrom<Scalar>(-1.5, 0, 2, 2.5, 10, 99.25)),
    );
    equivalence(t, db, cols, typedRoles, row);
  },
);

t.test('hostile identifiers are refused, hostile values are bound and never reach the SQL text', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.exec('CREATE TABLE t (c0, c1); CREATE TABLE sentinel (x); INSERT INTO t VALUES (1, 2)');
  // Only ASCII identifiers, double-quoted, placeholders, keywords and operators may appear.
  const SAFE_SQL = /^(?:"[A-Za-z_][A-Za-z0-9_]*"|[A-Za-z0-9_*(),?=<>. ]|\$[0-9]+)*$/;
  let refused = 0;
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        fc.constantFrom('c0"; DROP TABLE sentinel; --', 'c0 --', 'c0;', "c'0", 'ç', 'c0/**/', 'c0', 'c1', 'nope'),
      ),
      fc.oneof(fc.string({ unit: 'grapheme', maxLength: 20 }), fc.constantFrom(...HOSTILE)),
      fc.constantFrom('sqlite', 'postgres' as const),
      (col, value, dialect) => {
        const tp = {
          table: 't',
          columns: [col],
          all_rows: false,
          row_filter: {
            any: [
              { column: col, op: 'eq', value },
              { column: 'c0', op: 'in', value: [value, 1] },
            ],
          } as RowFilter,
          grants: [],
          explanation: '',
        };
        let q;
        try {
          q = compileTablePolicy(tp, dialect);
        } catch (err) {
          if (!isAppError(err, 'ERR_DATA_IDENTIFIER')) throw err;
          if (COLUMN_RE.test(col)) throw new Error(`valid identifier ${col} refused`, { cause: err });
          refused++;
          return true;
        }
        if (!COLUMN_RE.test(col)) throw new Error(`invalid identifier compiled: ${JSON.stringify(col)}`);
        if (!SAFE_SQL.test(q.sql)) throw new Error(`unexpected SQL text: ${q.sql}`);
        if (!q.params.includes(value)) throw new Error('value not bound as a parameter');
        if (dialect === 'sqlite') {
          try {
            db.prepare(q.sql).all(...q.params);
          } catch (err) {
            // A well-formed name that is not a column of t: SQLite says so; nothing runs.
            if (!/no such column/.test((err as Error).message)) throw err;
          }
        }
        return true;
      },
    ),
    { numRuns: 300 },
  );
  t.ok(refused > 0, `${refused} hostile identifiers refused`);
  t.ok(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sentinel'").get(), 'sentinel table survives');
  t.same(db.prepare('SELECT * FROM t').all(), [{ c0: 1, c1: 2 }], 'data untouched');
});

t.test('hostile table names are refused by the compiler', async (t) => {
  const base = { columns: ['*'], all_rows: true, row_filter: {}, grants: [], explanation: '' };
  for (const table of ['t; DROP TABLE x', 't"', 'a.b.c', 'ta ble', 'tä', '', 't--', '*']) {
    t.throws(
      () => compileTablePolicy({ ...base, table }, 'sqlite'),
      { code: 'ERR_DATA_IDENTIFIER' },
      JSON.stringify(table),
    );
  }
  t.equal(compileTablePolicy({ ...base, table: 'public.orders' }, 'postgres').sql, 'SELECT * FROM "public"."orders"');
});
