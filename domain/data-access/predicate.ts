import { AppError } from '../../core/index.js';

/** Leaf operators of the row-filter predicate (docs/data-access.md "Row filter"). */
export const COMPARE_OPS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte'] as const;
export const LIST_OPS = ['in', 'not_in'] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];
export type ListOp = (typeof LIST_OPS)[number];
export type Op = CompareOp | ListOp | 'is_null';

/** A literal a leaf may compare with, or the variables `$user_id` / `$username`. */
export type Scalar = string | number | boolean;

export type Leaf =
  | { column: string; op: CompareOp; value: Scalar }
  | { column: string; op: ListOp; value: Scalar[] }
  | { column: string; op: 'is_null'; value: boolean };
export type Node = Leaf | { all: Node[] } | { any: Node[] };
/** `{}` (all rows) or one node. */
export type RowFilter = Record<string, never> | Node;

/** Limits on a stored row filter: nesting depth of all/any, nodes in total, list and string sizes. */
export const FILTER_LIMITS = {
  /** Levels of all/any nesting above the leaves. */
  maxDepth: 5,
  maxNodes: 100,
  maxChildren: 50,
  maxListItems: 100,
  maxStringLength: 256,
  maxColumns: 200,
} as const;

/** Table and column names: ASCII identifiers; tables may carry one `schema.` qualifier. */
export const IDENT_SOURCE = '[A-Za-z_][A-Za-z0-9_]{0,62}';
export const COLUMN_RE = new RegExp(`^${IDENT_SOURCE}$`);
export const TABLE_RE = new RegExp(`^${IDENT_SOURCE}(?:\\.${IDENT_SOURCE})?$`);
export const VARIABLES = ['$user_id', '$username'] as const;

/**
 * A table name that names a system catalogue of either engine, never a table of the data a
 * policy governs: on SQLite `sqlite_*` (sqlite_master, sqlite_schema, sqlite_sequence,
 * sqlite_temp_master, also as main./temp.) and the table-valued `pragma_*` functions; on
 * PostgreSQL the `pg_catalog`, `information_schema` and other `pg_*` schemas (pg_toast,
 * pg_temp_…), and unqualified `pg_*` names (pg_catalog is searched first). Compared without case.
 */
export function isSystemCatalogue(table: string): boolean {
  const parts = table.toLowerCase().split('.');
  const name = parts[parts.length - 1];
  const schema = parts.length > 1 ? parts[0] : undefined;
  if (schema !== undefined && (schema === 'information_schema' || schema.startsWith('pg_'))) return true;
  return name.startsWith('sqlite_') || name.startsWith('pragma_') || name.startsWith('pg_');
}

const scalar = {
  oneOf: [{ type: 'string', maxLength: FILTER_LIMITS.maxStringLength }, { type: 'number' }, { type: 'boolean' }],
};

const column = { type: 'string', pattern: COLUMN_RE.source };

function leafSchema(): object {
  return {
    oneOf: [
      {
        type: 'object',
        additionalProperties: false,
        required: ['column', 'op', 'value'],
        properties: { column, op: { enum: [...COMPARE_OPS] }, value: scalar },
      },
      {
        type: 'object',
        additionalProperties: false,
        required: ['column', 'op', 'value'],
        properties: {
          column,
          op: { enum: [...LIST_OPS] },
          value: { type: 'array', minItems: 1, maxItems: FILTER_LIMITS.maxListItems, items: scalar },
        },
      },
      {
        type: 'object',
        additionalProperties: false,
        required: ['column', 'op', 'value'],
        properties: { column, op: { const: 'is_null' }, value: { type: 'boolean' } },
      },
    ],
  };
}

function buildRowFilterDefs(): Record<string, object> {
  const defs: Record<string, object> = { rf_leaf: leafSchema() };
  for (let d = FILTER_LIMITS.maxDepth; d >= 0; d--) {
    if (d === FILTER_LIMITS.maxDepth) {
      defs[`rf_node${d}`] = { $ref: '#/$defs/rf_leaf' };
      continue;
    }
    const children = {
      type: 'array',
      minItems: 1,
      maxItems: FILTER_LIMITS.maxChildren,
      items: { $ref: `#/$defs/rf_node${d + 1}` },
    };
    defs[`rf_node${d}`] = {
      oneOf: [
        { $ref: '#/$defs/rf_leaf' },
        { type: 'object', additionalProperties: false, required: ['all'], properties: { all: children } },
        { type: 'object', additionalProperties: false, required: ['any'], properties: { any: children } },
      ],
    };
  }
  return defs;
}

/**
 * The row-filter JSON schema pieces. JSON schema cannot count recursion, so the depth limit
 * is built in: level d nests all/any only down to level maxDepth, where only leaves remain.
 * Put ROW_FILTER_DEFS under the root schema's `$defs` and use ROW_FILTER where a filter goes.
 */
export const ROW_FILTER_DEFS = buildRowFilterDefs();
export const ROW_FILTER = {
  oneOf: [{ type: 'object', additionalProperties: false, maxProperties: 0 }, { $ref: '#/$defs/rf_node0' }],
};
/** A standalone schema for one row filter. */
export const ROW_FILTER_SCHEMA = { $defs: ROW_FILTER_DEFS, ...ROW_FILTER };

export function isEmptyFilter(f: RowFilter | null | undefined): f is Record<string, never> {
  return !f || Object.keys(f).length === 0;
}

/** Count nodes (leaves and all/any groups). */
export function countNodes(f: RowFilter): number {
  if (isEmptyFilter(f)) return 0;
  const n = f as Node;
  if ('all' in n) return 1 + n.all.reduce((s, c) => s + countNodes(c), 0);
  if ('any' in n) return 1 + n.any.reduce((s, c) => s + countNodes(c), 0);
  return 1;
}

/** Throws 400 ERR_DATA_FILTER_TOO_LARGE past FILTER_LIMITS.maxNodes (the schema bounds depth). */
export function checkFilterSize(f: RowFilter): void {
  const n = countNodes(f);
  if (n > FILTER_LIMITS.maxNodes) {
    throw new AppError('ERR_DATA_FILTER_TOO_LARGE', `row_filter has ${n} nodes; at most ${FILTER_LIMITS.maxNodes}`);
  }
}

/** Columns a filter refers to. */
export function filterColumns(f: RowFilter, out = new Set<string>()): Set<string> {
  if (isEmptyFilter(f)) return out;
  const n = f as Node;
  if ('all' in n) n.all.forEach((c) => filterColumns(c, out));
  else if ('any' in n) n.any.forEach((c) => filterColumns(c, out));
  else out.add(n.column);
  return out;
}

/** The user a filter's variables stand for. */
export interface FilterSubject {
  id: number;
  username: string;
}

function substValue(v: Scalar, who: FilterSubject): Scalar {
  if (v === '$user_id') return who.id;
  if (v === '$username') return who.username;
  return v;
}

/** Replace `$user_id` / `$username` (also inside in/not_in lists) with the user's values. */
export function substitute(f: RowFilter, who: FilterSubject): RowFilter {
  if (isEmptyFilter(f)) return {};
  const n = f as Node;
  if ('all' in n) return { all: n.all.map((c) => substitute(c, who) as Node) };
  if ('any' in n) return { any: n.any.map((c) => substitute(c, who) as Node) };
  if (n.op === 'in' || n.op === 'not_in')
    return { column: n.column, op: n.op, value: n.value.map((v) => substValue(v, who)) };
  if (n.op === 'is_null') return { ...n };
  return { column: n.column, op: n.op, value: substValue(n.value as Scalar, who) };
}

/** One problem of a row filter, for people: `field` is a dotted path under `row_filter`. */
export interface FilterProblem {
  field: string;
  message: string;
}

const ALL_OPS: readonly string[] = [...COMPARE_OPS, ...LIST_OPS, 'is_null'];
const LEAF_KEYS = ['column', 'op', 'value'];

function where(field: string): string {
  // row_filter.all.1.any.0 → "Row filter, condition 2, condition 1"
  const parts = field.split('.').slice(1);
  const words = ['Row filter'];
  for (let i = 0; i < parts.length; i++) {
    if ((parts[i] === 'all' || parts[i] === 'any') && /^[0-9]+$/.test(parts[i + 1] ?? '')) {
      words.push(`condition ${Number(parts[i + 1]) + 1}`);
      i++;
    }
  }
  return words.join(', ');
}

function scalarProblem(v: unknown): string | null {
  if (typeof v === 'string')
    return v.length > FILTER_LIMITS.maxStringLength
      ? `is longer than ${FILTER_LIMITS.maxStringLength} characters`
      : null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : 'is not a finite number';
  if (typeof v === 'boolean') return null;
  return 'must be a text, a number or true/false';
}

/**
 * Check a row filter and say what is wrong in words a person acts on, one problem per bad
 * spot: "Row filter, condition 2: the column is empty." rather than the schema's eight
 * "must NOT have additional properties" for one `oneOf`. The same rules as ROW_FILTER_SCHEMA
 * (which stays the filter's documented shape); the node count is checkFilterSize's.
 */
export function rowFilterProblems(
  f: unknown,
  field = 'row_filter',
  depth = 0,
  out: FilterProblem[] = [],
): FilterProblem[] {
  const at = where(field);
  if (f === null || typeof f !== 'object' || Array.isArray(f)) {
    out.push({
      field,
      message: `${at} must be an object: {} for all rows, a condition {column, op, value}, or {all: […]} / {any: […]}.`,
    });
    return out;
  }
  const o = f as Record<string, unknown>;
  const keys = Object.keys(o);
  if (!keys.length) {
    if (depth > 0) out.push({ field, message: `${at} is empty: a condition needs a column, an operator and a value.` });
    return out;
  }
  const group = keys.find((k) => k === 'all' || k === 'any');
  if (group) {
    if (keys.length > 1)
      out.push({
        field,
        message: `${at}: a group has only "${group}", not also ${keys
          .filter((k) => k !== group)
          .map((k) => `"${k}"`)
          .join(', ')}.`,
      });
    if (depth >= FILTER_LIMITS.maxDepth) {
      out.push({ field: `${field}.${group}`, message: `${at}: groups nest at most ${FILTER_LIMITS.maxDepth} deep.` });
      return out;
    }
    const list = o[group];
    if (!Array.isArray(list) || list.length === 0) {
      out.push({ field: `${field}.${group}`, message: `${at}: "${group}" needs a list of at least one condition.` });
      return out;
    }
    if (list.length > FILTER_LIMITS.maxChildren)
      out.push({
        field: `${field}.${group}`,
        message: `${at}: "${group}" has ${list.length} conditions; at most ${FILTER_LIMITS.maxChildren}.`,
      });
    list
      .slice(0, FILTER_LIMITS.maxChildren)
      .forEach((c, i) => rowFilterProblems(c, `${field}.${group}.${i}`, depth + 1, out));
    return out;
  }
  const unknown = keys.filter((k) => !LEAF_KEYS.includes(k));
  if (unknown.length) {
    out.push({
      field: `${field}.${unknown[0]}`,
      message: `${at}: ${unknown.map((k) => `"${k}"`).join(', ')} ${unknown.length > 1 ? 'are not known fields' : 'is not a known field'} of a condition (it takes column, op and value; groups take all or any).`,
    });
  }
  const col = o.column;
  if (col === undefined) out.push({ field: `${field}.column`, message: `${at}: the column is missing.` });
  else if (typeof col !== 'string')
    out.push({ field: `${field}.column`, message: `${at}: the column must be a column name (text).` });
  else if (col.trim() === '') out.push({ field: `${field}.column`, message: `${at}: the column is empty.` });
  else if (!COLUMN_RE.test(col))
    out.push({
      field: `${field}.column`,
      message: `${at}: "${col.slice(0, 80)}" is not a column name (letters, digits and _, not starting with a digit, at most 63).`,
    });
  const op = o.op;
  if (op === undefined) out.push({ field: `${field}.op`, message: `${at}: the operator (op) is missing.` });
  else if (typeof op !== 'string' || !ALL_OPS.includes(op)) {
    out.push({
      field: `${field}.op`,
      message: `${at}: ${JSON.stringify(op).slice(0, 40)} is not an operator; use one of ${ALL_OPS.join(', ')}.`,
    });
    return out;
  }
  if (!('value' in o)) {
    out.push({ field: `${field}.value`, message: `${at}: the value is missing.` });
    return out;
  }
  if (op === undefined) return out;
  valueProblems(op, o.value, field, at, out);
  return out;
}

/** What is wrong with a condition's value for its operator (is_null: a boolean; in/not_in: a list of scalars; else one scalar). */
function valueProblems(op: string, v: unknown, field: string, at: string, out: FilterProblem[]): void {
  if (op === 'is_null') {
    if (typeof v !== 'boolean')
      out.push({ field: `${field}.value`, message: `${at}: is_null takes true (is null) or false (is not null).` });
  } else if (op === 'in' || op === 'not_in') {
    if (!Array.isArray(v) || v.length === 0)
      out.push({ field: `${field}.value`, message: `${at}: ${op} takes a list of at least one value.` });
    else if (v.length > FILTER_LIMITS.maxListItems)
      out.push({
        field: `${field}.value`,
        message: `${at}: ${op} takes at most ${FILTER_LIMITS.maxListItems} values.`,
      });
    else {
      const bad = v.findIndex((x) => scalarProblem(x) !== null);
      if (bad >= 0)
        out.push({
          field: `${field}.value.${bad}`,
          message: `${at}: value ${bad + 1} of the list ${scalarProblem(v[bad])}.`,
        });
    }
  } else {
    const p = scalarProblem(v);
    if (p) out.push({ field: `${field}.value`, message: `${at}: the value ${p}.` });
  }
}
