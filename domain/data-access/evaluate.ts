import { isEmptyFilter, type Node, type RowFilter, type Scalar } from './predicate.js';
import type { TablePolicy } from './effective.js';

export type Row = Record<string, unknown>;
type Value = number | string | null;

/**
 * The reference semantics of a row filter over plain rows, mirroring what the compiled SQL
 * does in SQLite (binary collation, columns without type affinity):
 * - booleans count as 1 / 0; a missing column is NULL;
 * - any comparison with NULL is false (so `neq` and `not_in` never match NULL);
 * - numbers sort before strings; strings compare by code point (= UTF-8 byte order).
 */
function norm(v: unknown): Value {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return Number(v);
  return String(v);
}

function cmpStrings(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/** Compare two non-null values; numbers before strings. */
export function compareValues(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return cmpStrings(a, b);
}

function leaf(row: Row, column: string, op: string, value: Scalar | Scalar[]): boolean {
  const v = norm(row[column]);
  if (op === 'is_null') return (v === null) === (value === true);
  if (v === null) return false;
  if (op === 'in' || op === 'not_in') {
    const hit = (value as Scalar[]).some((x) => compareValues(v, norm(x) as number | string) === 0);
    return op === 'in' ? hit : !hit;
  }
  const c = compareValues(v, norm(value as Scalar) as number | string);
  switch (op) {
    case 'eq':
      return c === 0;
    case 'neq':
      return c !== 0;
    case 'lt':
      return c < 0;
    case 'lte':
      return c <= 0;
    case 'gt':
      return c > 0;
    case 'gte':
      return c >= 0;
    default:
      return false;
  }
}

/** Does the row pass the (already substituted) filter? `{}` passes every row. */
export function matches(filter: RowFilter, row: Row): boolean {
  if (isEmptyFilter(filter)) return true;
  const n = filter as Node;
  if ('all' in n) return n.all.every((c) => matches(c, row));
  if ('any' in n) return n.any.some((c) => matches(c, row));
  return leaf(row, n.column, n.op, n.value);
}

/** Apply a table policy to plain rows: keep the rows it allows, project to its columns. */
export function applyPolicy(policy: TablePolicy | null, rows: Row[]): Row[] {
  if (!policy) return [];
  const keep = rows.filter((r) => policy.all_rows || matches(policy.row_filter, r));
  if (policy.columns.includes('*')) return keep.map((r) => ({ ...r }));
  return keep.map((r) => Object.fromEntries(policy.columns.map((c) => [c, r[c] ?? null])));
}
