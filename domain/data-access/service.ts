import { AppError } from '../../core/index.js';
import type { Sql } from '../db/index.js';
import { getUserById } from '../users.js';
import { compileFilter, compileTablePolicy, type CompiledQuery, type Dialect } from './compile.js';
import { policyForTable, resolveEffectivePolicy, type EffectivePolicy, type TablePolicy } from './effective.js';
import { grantsOf, hasEntitlement } from './store.js';

/** The effective policy of a user, read from the database. 404 ERR_DATA_USER_NOT_FOUND. */
export async function effectivePolicyOf(db: Sql, userId: number): Promise<EffectivePolicy> {
  const u = await getUserById(db, userId);
  if (!u) throw new AppError('ERR_DATA_USER_NOT_FOUND', `no user ${userId}`);
  const [grants, bi] = await Promise.all([grantsOf(db, userId), hasEntitlement(db, userId)]);
  return resolveEffectivePolicy({ id: u.id, username: u.username, is_active: u.is_active }, grants, bi);
}

export interface CompiledPolicy {
  dialect: Dialect;
  /** One SELECT per named table. */
  tables: Record<string, CompiledQuery>;
  /** For any other table: the column list and WHERE condition to put after `FROM <table>`. */
  any_table: { columns: string; where: string | null; params: (string | number | boolean)[] } | null;
}

/** Compile every table of an effective policy for one dialect. */
export function compilePolicy(eff: EffectivePolicy, dialect: Dialect): CompiledPolicy {
  const tables: Record<string, CompiledQuery> = {};
  for (const t of eff.tables) tables[t.table] = compileTablePolicy(t, dialect);
  let any_table: CompiledPolicy['any_table'] = null;
  if (eff.any_table) {
    const q = compileTablePolicy(eff.any_table, dialect, 'any_table');
    const f = compileFilter(eff.any_table.all_rows ? {} : eff.any_table.row_filter, dialect);
    any_table = { columns: q.columns, where: f.where, params: f.params };
  }
  return { dialect, tables, any_table };
}

/** One table's policy and its compiled queries, or nulls when the user has no grant for it. */
export function tableAccess(
  eff: EffectivePolicy,
  table: string,
): { table: string; policy: TablePolicy | null; sqlite: CompiledQuery | null; postgres: CompiledQuery | null } {
  const policy = policyForTable(eff, table);
  return {
    table,
    policy,
    sqlite: policy && compileTablePolicy(policy, 'sqlite', table),
    postgres: policy && compileTablePolicy(policy, 'postgres', table),
  };
}
