import t from 'tap';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { FILTER_LIMITS, ROW_FILTER_SCHEMA, rowFilterProblems } from '../../domain/data-access/predicate.js';

/**
 * The policy PUT checks row filters with rowFilterProblems (messages for people) instead of the
 * JSON schema. Property: both accept exactly the same filters, over valid filters and filters
 * broken in every way the walker names (bad keys, operators, values, columns, nesting, sizes).
 */
const ajv = new Ajv({ allErrors: false, strict: true });
const schemaAccepts = ajv.compile(ROW_FILTER_SCHEMA);

const columnName = fc.oneof(
  fc.constantFrom('region', 'owner_id', '_x', 'a1'),
  fc.constantFrom('', ' ', '1a', 'a b', 'é', 'x'.repeat(64), 'x'.repeat(63)),
);
const scalarValue = fc.oneof(
  fc.constantFrom(
    'EU',
    '$user_id',
    '',
    'x'.repeat(FILTER_LIMITS.maxStringLength),
    'x'.repeat(FILTER_LIMITS.maxStringLength + 1),
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
);
const anyValue = fc.oneof(
  scalarValue,
  fc.constant(null),
  fc.array(scalarValue, { maxLength: 3 }),
  fc.array(fc.oneof(scalarValue, fc.constant(null), fc.constant({})), { minLength: 1, maxLength: 3 }),
  fc.constant({}),
);
const op = fc.constantFrom('eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'is_null', 'like', '', 'EQ');

const leaf = fc.record(
  { column: columnName, op, value: anyValue, extra: fc.constantFrom('colour', 'all') },
  { requiredKeys: [] },
);

const tree = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('group'),
    tie('group'),
    fc.constant({}),
    fc.constant([]),
    fc.constant(null),
    fc.constant('x'),
  ),
  group: fc
    .record({
      key: fc.constantFrom('all', 'any'),
      children: fc.array(tie('node'), { maxLength: 4 }),
      extra: fc.option(fc.constantFrom('column', 'any'), { nil: undefined }),
    })
    .map(({ key, children, extra }) =>
      extra && extra !== key ? { [key]: children, [extra]: [] } : { [key]: children },
    ),
}));

t.test('rowFilterProblems accepts exactly what the row-filter JSON schema accepts', async (t) => {
  let valid = 0;
  fc.assert(
    fc.property(fc.oneof(tree.node, tree.group), (f) => {
      const schema = schemaAccepts(f);
      const problems = rowFilterProblems(f);
      if (schema) valid++;
      if (schema !== (problems.length === 0))
        throw new Error(`schema ${schema}, walker ${JSON.stringify(problems)} for ${JSON.stringify(f)}`);
      // Every problem names a place under row_filter and reads as a sentence, never the schema's wording.
      for (const p of problems) {
        if (
          !p.field.startsWith('row_filter') ||
          !/^Row filter/.test(p.message) ||
          /must NOT|must match/.test(p.message)
        )
          throw new Error(JSON.stringify(p));
      }
    }),
    { numRuns: 3000, seed: 18 },
  );
  t.ok(valid > 100, `the property is not vacuous: ${valid} of 3000 filters valid`);
  // Depth: the deepest allowed nesting passes, one more level is refused by both.
  const nest = (d: number): unknown => (d === 0 ? { column: 'a', op: 'eq', value: 1 } : { all: [nest(d - 1)] });
  t.same(rowFilterProblems(nest(FILTER_LIMITS.maxDepth)), []);
  t.ok(schemaAccepts(nest(FILTER_LIMITS.maxDepth)));
  t.equal(rowFilterProblems(nest(FILTER_LIMITS.maxDepth + 1)).length, 1);
  t.notOk(schemaAccepts(nest(FILTER_LIMITS.maxDepth + 1)));
});
