import { AppError } from '../../core/index.js';
import { COLUMN_RE, TABLE_RE, isEmptyFilter, type Node, type RowFilter, type Scalar } from './predicate.js';
import type { TablePolicy } from './effective.js';

export type Dialect = 'sqlite' | 'postgres';

/** A parameterised query: values only ever travel in `params`. */
export interface CompiledQuery {
  dialect: Dialect;
  table: string;
  /** Quoted column list, or "*". */
  columns: string;
  /** The WHERE condition without the keyword, or null for all rows. */
  where: string | null;
  sql: string;
  params: (string | number | boolean)[];
}

function badIdent(what: string): AppError {
  return new AppError('ERR_DATA_IDENTIFIER', `${what} is not a valid identifier`);
}

/**
 * Quote an identifier for SQLite and PostgreSQL alike. Identifiers are checked against
 * COLUMN_RE first (ASCII letters, digits, underscore), so no quote can reach the SQL text;
 * doubling `"` is a second line of defence, not the first.
 */
export function quoteIdent(name: string): string {
  if (typeof name !== 'string' || !COLUMN_RE.test(name)) throw badIdent('column');
  return `"${name.replace(/"/g, '""')}"`;
}

export function quoteTable(name: string): string {
  if (typeof name !== 'string' || !TABLE_RE.test(name)) throw badIdent('table');
  return name
    .split('.')
    .map((p) => `"${p.replace(/"/g, '""')}"`)
    .join('.');
}

class Params {
  readonly values: (string | number | boolean)[] = [];
  constructor(readonly dialect: Dialect) {}
  add(v: Scalar): string {
    if (typeof v === 'number' && !Number.isFinite(v))
      throw new AppError('ERR_DATA_VALUE', 'row_filter value is not a finite number');
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw new AppError('ERR_DATA_VALUE', 'row_filter value must be a string, number or boolean');
    }
    // better-sqlite3 binds no booleans; SQLite stores them as 1/0 anyway.
    this.values.push(this.dialect === 'sqlite' && typeof v === 'boolean' ? (v ? 1 : 0) : v);
    return this.dialect === 'sqlite' ? '?' : `$${this.values.length}`;
  }
}

const CMP: Record<string, string> = { eq: '=', neq: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' };

function compileNode(n: Node, p: Params): string {
  if ('all' in n || 'any' in n) {
    const kids = 'all' in n ? n.all : n.any;
    if (!Array.isArray(kids) || kids.length === 0) throw new AppError('ERR_DATA_FILTER', 'empty all/any group');
    return `(${kids.map((k) => compileNode(k, p)).join('all' in n ? ' AND ' : ' OR ')})`;
  }
  const col = quoteIdent(n.column);
  switch (n.op) {
    case 'eq':
    case 'neq':
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      return `${col} ${CMP[n.op]} ${p.add(n.value)}`;
    case 'in':
    case 'not_in': {
      if (!Array.isArray(n.value) || n.value.length === 0)
        throw new AppError('ERR_DATA_FILTER', `${n.op} needs a non-empty list`);
      return `${col} ${n.op === 'in' ? 'IN' : 'NOT IN'} (${n.value.map((v) => p.add(v)).join(', ')})`;
    }
    case 'is_null':
      return `${col} IS ${n.value === true ? '' : 'NOT '}NULL`;
    default:
      throw new AppError('ERR_DATA_FILTER', 'unknown row_filter operator');
  }
}

/** Compile a row filter into a WHERE condition (null for all rows) and its bound parameters. */
export function compileFilter(
  filter: RowFilter,
  dialect: Dialect,
): { where: string | null; params: (string | number | boolean)[] } {
  const p = new Params(dialect);
  if (isEmptyFilter(filter)) return { where: null, params: [] };
  return { where: compileNode(filter as Node, p), params: p.values };
}

/**
 * Compile one table's effective policy to `SELECT <allowed columns> FROM <table> [WHERE …]`.
 * `table` overrides the policy's (needed for a wildcard policy, whose table is "*").
 */
export function compileTablePolicy(policy: TablePolicy, dialect: Dialect, table = policy.table): CompiledQuery {
  const qt = quoteTable(table);
  const columns = policy.columns.includes('*') ? '*' : policy.columns.map(quoteIdent).join(', ');
  if (!columns) throw new AppError('ERR_DATA_FILTER', 'policy allows no column');
  const { where, params } = compileFilter(policy.all_rows ? {} : policy.row_filter, dialect);
  return {
    dialect,
    table,
    columns,
    where,
    sql: `SELECT ${columns} FROM ${qt}${where ? ` WHERE ${where}` : ''}`,
    params,
  };
}
