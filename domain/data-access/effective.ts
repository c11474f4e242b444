import type {
  EffectivePolicyView as EffectivePolicy,
  GrantView as GrantSource,
  TablePolicyView as TablePolicy,
} from '../../core/api-types-data-access.js';
import {
  isEmptyFilter,
  isSystemCatalogue,
  substitute,
  type FilterSubject,
  type Node,
  type RowFilter,
} from './predicate.js';
import type { DataPolicy } from './store.js';

/** A grant as it reaches a table, what a user may read from one table, and a user's whole policy: the API's shapes (core/api-types-data-access.ts). */
export type { EffectivePolicy, GrantSource, TablePolicy };

export interface RoleGrants {
  role_id: number;
  role: string;
  policies: (Pick<DataPolicy, 'table' | 'allowed_columns' | 'row_filter'> & { filter_key?: string })[];
}

export interface PolicyUser extends FilterSubject {
  is_active: boolean;
}

// Explanations name columns and how rows are limited; the filters themselves sit beside them
// in the structured answer (stringifying every filter here would dominate resolution time).
function describe(columns: string[], filter: RowFilter): string {
  const cols = columns.includes('*') ? 'all columns' : `columns ${columns.join(', ')}`;
  if (isEmptyFilter(filter)) return `${cols}; all rows`;
  const n = 'any' in filter && Array.isArray(filter.any) ? filter.any.length : 1;
  return `${cols}; rows matching ${n > 1 ? `any of ${n} row filters` : 'the row filter'}`;
}

/** Merge grants on one table: columns union, rows OR, an empty filter dominates. */
export function mergeGrants(table: string, grants: GrantSource[]): TablePolicy {
  let star = false;
  const cols = new Set<string>();
  let allRows = false;
  const filters: Node[] = [];
  const seen = new Set<string>();
  for (const g of grants) {
    if (g.allowed_columns.includes('*')) star = true;
    else g.allowed_columns.forEach((c) => cols.add(c));
    if (isEmptyFilter(g.row_filter)) allRows = true;
    else if (!allRows) {
      // The same filter from two roles is ORed once.
      const key = g.filter_key ?? JSON.stringify(g.row_filter);
      if (!seen.has(key)) {
        seen.add(key);
        filters.push(g.row_filter as Node);
      }
    }
  }
  const columns = star ? ['*'] : [...cols].sort();
  const row_filter: RowFilter = allRows ? {} : filters.length === 1 ? filters[0] : { any: filters };
  const by = grants.map((g) => `${g.role}${g.granted_on === '*' ? ' (via "*")' : ''}`).join(', ');
  return {
    table,
    columns,
    all_rows: allRows,
    row_filter,
    grants,
    explanation: `${table}: ${describe(columns, row_filter)} — from ${by}`,
  };
}

/**
 * Resolve a user's effective policy from their roles' grants (docs/rules.md#data-access-rules, rules 2 and 3).
 * An inactive user gets nothing. A table no grant names, with no wildcard grant, has no policy.
 */
export function resolveEffectivePolicy(user: PolicyUser, roles: RoleGrants[], bi: boolean): EffectivePolicy {
  const who = { id: user.id, username: user.username };
  const base = {
    user: { id: user.id, username: user.username, is_active: user.is_active },
    bi,
    roles: roles.map((r) => ({ id: r.role_id, name: r.role })),
  };
  if (!user.is_active) {
    return { ...base, tables: [], any_table: null, explanation: ['user is inactive: no data access'] };
  }
  const named = new Map<string, GrantSource[]>();
  const wildcard: GrantSource[] = [];
  for (const r of roles) {
    for (const p of r.policies) {
      const row_filter = substitute(p.row_filter, who);
      const g: GrantSource = {
        role_id: r.role_id,
        role: r.role,
        granted_on: p.table,
        allowed_columns: p.allowed_columns,
        row_filter,
        gives: `role ${r.role} grants ${describe(p.allowed_columns, row_filter)} on ${p.table === '*' ? 'every table' : p.table}`,
      };
      // The stored JSON text identifies the filter before substitution, which is the same per user.
      if (p.filter_key !== undefined)
        Object.defineProperty(g, 'filter_key', { value: p.filter_key, enumerable: false });
      if (p.table === '*') wildcard.push(g);
      else {
        let list = named.get(p.table);
        if (!list) named.set(p.table, (list = []));
        list.push(g);
      }
    }
  }
  const tables = [...named.keys()].sort().map((t) => mergeGrants(t, [...named.get(t)!, ...wildcard]));
  const any_table = wildcard.length ? mergeGrants('*', wildcard) : null;
  const explanation = [
    ...(roles.length ? [] : ['no data role: no table is readable']),
    ...roles.filter((r) => r.policies.length === 0).map((r) => `role ${r.role} has no grants`),
    ...tables.map((t) => t.explanation),
    ...(any_table
      ? [
          `any other table: ${describe(any_table.columns, any_table.row_filter)} — from ${any_table.grants.map((g) => g.role).join(', ')}`,
        ]
      : []),
    ...(roles.length && !any_table ? ['tables not listed: no access (no grant)'] : []),
  ];
  return { ...base, tables, any_table, explanation };
}

/** The policy for one table, or null when the user has no grant that reaches it (docs/rules.md#data-access-rules, rule 2). */
export function policyForTable(eff: EffectivePolicy, table: string): TablePolicy | null {
  // A system catalogue is never data: no grant, not even "*", covers it (isSystemCatalogue).
  if (isSystemCatalogue(table)) return null;
  const t = eff.tables.find((x) => x.table === table);
  if (t) return t;
  if (eff.any_table) return { ...eff.any_table, table };
  return null;
}
