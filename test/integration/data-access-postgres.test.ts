import t from 'tap';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  applyPolicy,
  compileTablePolicy,
  policyForTable,
  resolveEffectivePolicy,
  type Node,
  type RoleGrants,
  type RowFilter,
  type Scalar,
} from '../../domain/data-access/index.js';
import { tempDir } from '../helpers/app.js';

/**
 * The PostgreSQL dialect against a real PostgreSQL server (started here on a unix socket only):
 * the compiled `$n` SQL, PREPAREd as is, returns exactly what the reference evaluator allows.
 * Columns are typed (PostgreSQL refuses cross-type comparisons), text is COLLATE "C".
 * The harness passes the bound values to EXECUTE as quoted literals, as a driver would bind them.
 */
function pgBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  for (const v of readdirSync(root).sort().reverse()) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'psql'))) return bin;
  }
  return null;
}

const bin = pgBin();
const isRoot = process.getuid?.() === 0;
let pgUid: number | null = null;
if (isRoot) {
  try {
    pgUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  } catch {
    // No postgres account: PostgreSQL will not run as root, so the test skips (reason below).
  }
}
const skip = !bin
  ? 'no PostgreSQL binaries under /usr/lib/postgresql'
  : isRoot && pgUid === null
    ? 'running as root without a postgres account'
    : false;

const USERNAMES = ['alice', "o'brien", 'bob"; --', 'zoë', '😀'];
const STRINGS = [
  'a',
  'b',
  'A',
  '',
  "x'y",
  '"',
  "'; DROP TABLE t; --",
  '/* c */',
  'é',
  '😀',
  'Ω',
  'a\nb',
  '$$',
  '\\',
  ...USERNAMES,
];
const INTS = [-2, -1, 0, 1, 2, 3, 4, 5, 100];
const DOUBLES = [-1.5, 0, 2.25, 1e10, 3.14159];

type Col = 'n' | 's' | 'b' | 'x';
const valueFor: Record<Col, fc.Arbitrary<Scalar>> = {
  n: fc.oneof(fc.constantFrom<Scalar>(...INTS, '$user_id'), fc.integer({ min: -50, max: 50 })),
  s: fc.oneof(
    fc.constantFrom<Scalar>(...STRINGS, '$username'),
    fc.string({ unit: 'grapheme', maxLength: 5 }).filter((s) => !s.includes('\u0000')),
  ),
  b: fc.boolean(),
  x: fc.constantFrom<Scalar>(...DOUBLES),
};
const leafFor = (c: Col): fc.Arbitrary<Node> =>
  fc.oneof(
    fc.record({
      column: fc.constant(c),
      op: fc.constantFrom('eq', 'neq', 'lt', 'lte', 'gt', 'gte' as const),
      value: valueFor[c],
    }) as fc.Arbitrary<Node>,
    fc.record({
      column: fc.constant(c),
      op: fc.constantFrom('in', 'not_in' as const),
      value: fc.array(valueFor[c], { minLength: 1, maxLength: 3 }),
    }) as fc.Arbitrary<Node>,
    fc.record({
      column: fc.constant(c),
      op: fc.constant('is_null' as const),
      value: fc.boolean(),
    }) as fc.Arbitrary<Node>,
  );
const leaf = fc.constantFrom<Col>('n', 's', 'b', 'x').chain(leafFor);
const node: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.record({ all: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ any: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
  ),
})).node;
const filter: fc.Arbitrary<RowFilter> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 4, arbitrary: node },
);
const columns = fc.oneof(
  fc.constant<string[]>(['*']),
  fc.uniqueArray(fc.constantFrom('id', 'n', 's', 'b', 'x'), { minLength: 1, maxLength: 4 }),
);
const policy = fc.record({ table: fc.constantFrom('t', '*', 'other'), allowed_columns: columns, row_filter: filter });
const roles: fc.Arbitrary<RoleGrants[]> = fc
  .array(fc.uniqueArray(policy, { maxLength: 2, selector: (p) => p.table }), { minLength: 1, maxLength: 3 })
  .map((rs) => rs.map((policies, i) => ({ role_id: i + 1, role: `r${i + 1}`, policies })));
const user = fc.record({
  id: fc.integer({ min: 1, max: 5 }),
  username: fc.constantFrom(...USERNAMES),
  is_active: fc.constant(true),
});
const row = fc.record({
  n: fc.option(fc.constantFrom(...INTS), { freq: 5 }),
  s: fc.option(fc.constantFrom(...STRINGS), { freq: 5 }),
  b: fc.option(fc.boolean(), { freq: 5 }),
  x: fc.option(fc.constantFrom(...DOUBLES), { freq: 5 }),
});

function literal(v: string | number | boolean): string {
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toExponential();
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return `'${v.replace(/'/g, "''")}'`;
}

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

t.test(
  'compiled PostgreSQL SQL on a real server returns exactly what the reference evaluator allows',
  { skip },
  async (t) => {
    const dir = tempDir(t, 'airlock-pg-');
    const asPg = (file: string, args: string[]) =>
      isRoot
        ? execFileSync(
            'su',
            ['postgres', '-s', '/bin/sh', '-c', [file, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')],
            { encoding: 'utf8' },
          )
        : execFileSync(file, args, { encoding: 'utf8' });
    if (isRoot) chownSync(dir, pgUid!, pgUid!);
    const data = join(dir, 'data');
    asPg(join(bin!, 'initdb'), [
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale',
      'C',
    ]);
    asPg(join(bin!, 'pg_ctl'), [
      '-D',
      data,
      '-o',
      `-k ${dir} -c listen_addresses= -F`,
      '-w',
      '-l',
      join(dir, 'log'),
      'start',
    ]);
    t.teardown(() => {
      try {
        asPg(join(bin!, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped: nothing to do.
      }
    });
    const psql = (file: string) =>
      execFileSync(
        join(bin!, 'psql'),
        ['-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-U', 'postgres', '-f', file],
        { encoding: 'utf8', maxBuffer: 64 << 20 },
      );

    const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
    const rows = fc.sample(row, { numRuns: 40, seed }).map((r, i) => ({ id: i + 1, ...r }));
    const cases = fc.sample(fc.tuple(user, roles), { numRuns: 250, seed: seed + 1 });
    const script: string[] = [
      'CREATE TABLE t (id int PRIMARY KEY, n int, s text COLLATE "C", b boolean, x double precision);',
      'CREATE TABLE sentinel (x int);',
      ...rows.map(
        (r) =>
          `INSERT INTO t VALUES (${r.id}, ${[r.n, r.s, r.b, r.x].map((v) => (v === null ? 'NULL' : literal(v))).join(', ')});`,
      ),
    ];
    const expected: { sql: string; params: unknown[]; rows: string[] }[] = [];
    for (const [u, rs] of cases) {
      const p = policyForTable(resolveEffectivePolicy(u, rs, true), 't');
      if (!p) continue;
      const q = compileTablePolicy(p, 'postgres', 't');
      const k = expected.length;
      script.push(`PREPARE q${k} AS SELECT coalesce(jsonb_agg(r), '[]'::jsonb)::text FROM (${q.sql}) r;`);
      script.push(`EXECUTE q${k}${q.params.length ? `(${q.params.map(literal).join(', ')})` : ''};`);
      script.push(`DEALLOCATE q${k};`);
      expected.push({ sql: q.sql, params: q.params, rows: canon(applyPolicy(p, rows)) });
    }
    script.push("SELECT count(*) FROM pg_tables WHERE tablename = 'sentinel';");
    const file = join(dir, 'script.sql');
    writeFileSync(file, script.join('\n'));
    const out = psql(file)
      .split('\n')
      .filter((l) => l !== '');
    t.equal(out.length, expected.length + 1, 'one answer per query');
    let mismatches = 0;
    let nonEmpty = 0;
    expected.forEach((e, i) => {
      const got = canon(JSON.parse(out[i]) as Record<string, unknown>[]);
      if (got.length) nonEmpty++;
      if (JSON.stringify(got) !== JSON.stringify(e.rows)) {
        mismatches++;
        if (mismatches <= 3) t.fail(`mismatch (seed ${seed})`, { sql: e.sql, params: e.params, got, want: e.rows });
      }
    });
    t.equal(mismatches, 0, `${expected.length} compiled queries agree with the evaluator (seed ${seed})`);
    t.ok(nonEmpty > 20, `${nonEmpty} returned rows (not vacuous)`);
    t.equal(out[out.length - 1], '1', 'sentinel table survives');
  },
);
