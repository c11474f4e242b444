// Row filters on the data-access pages: shown as a sentence (JSON behind a disclosure), read from
// the editor's JSON text, and the builder's conditions.
import type { FilterLeaf, FilterNode, FilterScalar, RowFilterView } from '../../../admin-api.js';
import { Json } from './common.js';

export const OPERATORS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'is_null'] as const;
export type Operator = (typeof OPERATORS)[number];

const SYMBOLS: Record<string, string> = {
  eq: '=',
  neq: '≠',
  lt: '<',
  lte: '≤',
  gt: '>',
  gte: '≥',
  in: 'in',
  not_in: 'not in',
};

const isEmpty = (f: unknown): boolean => !f || typeof f !== 'object' || Object.keys(f).length === 0;

const isLeaf = (f: object): f is FilterLeaf => 'column' in f && 'op' in f;

/** A row filter as a sentence: region = "EU" AND (owner_id = 7 OR …). */
export function filterText(f: RowFilterView | FilterNode, depth = 0): string {
  if (isEmpty(f)) return 'all rows';
  const group = (list: FilterNode[], word: string) => {
    const inner = list.map((x) => filterText(x, depth + 1)).join(` ${word} `);
    return depth && list.length > 1 ? `(${inner})` : inner;
  };
  if ('all' in f) return group(f.all, 'AND');
  if ('any' in f) return group(f.any, 'OR');
  if (!isLeaf(f)) return 'all rows';
  const leaf = f;
  if (leaf.op === 'is_null') return `${leaf.column} ${leaf.value === false ? 'is not null' : 'is null'}`;
  const v = Array.isArray(leaf.value)
    ? `[${leaf.value.map((x) => JSON.stringify(x)).join(', ')}]`
    : JSON.stringify(leaf.value);
  return `${leaf.column} ${SYMBOLS[leaf.op] ?? leaf.op} ${v}`;
}

export function FilterView({ filter }: { filter: RowFilterView }) {
  if (isEmpty(filter)) return <span class="muted">all rows</span>;
  return (
    <div class="filter">
      <code>{filterText(filter)}</code>
      <details>
        <summary>JSON</summary>
        <Json value={filter} />
      </details>
    </div>
  );
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The editor's text as a JSON object, or a plain reason it is not one. The server checks the rest. */
export function parseFilter(text: string): { value: Record<string, unknown> } | { error: string } {
  const s = text.trim();
  if (!s) return { value: {} };
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch (e) {
    return { error: `Row filter is not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!isRecord(v))
    return { error: 'Row filter: must be a JSON object, e.g. {} or {"column":"region","op":"eq","value":"EU"}.' };
  return { value: v };
}

function scalar(s: string): FilterScalar {
  const t = s.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t !== '' && /^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}

/** The builder's condition: a list for in / not_in, a yes/no for is_null, else one value. */
export function leafOf(column: string, op: Operator, text: string): FilterLeaf {
  if (op === 'in' || op === 'not_in')
    return {
      column,
      op,
      value: text
        .split(',')
        .map(scalar)
        .filter((v) => v !== ''),
    };
  if (op === 'is_null') return { column, op, value: text.trim() !== 'false' };
  return { column, op, value: scalar(text) };
}

/** `leaf` ANDed to what the editor holds. */
export function andLeaf(current: Record<string, unknown>, leaf: FilterLeaf): Record<string, unknown> {
  if (!Object.keys(current).length) return leaf;
  if (Array.isArray(current.all)) return { all: [...current.all, leaf] };
  return { all: [current, leaf] };
}
