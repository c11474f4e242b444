import { AppError, nowIso } from '../../core/index.js';
import type {
  AssignmentView as Assignment,
  DataPolicyView as DataPolicy,
  DataRoleSummaryView as DataRoleSummary,
  DataRoleView as DataRole,
} from '../../core/api-types-data-access.js';
import { logAction } from '../action-log.js';
import { inTransaction, type Row, type Sql } from '../db/index.js';
import { getUserById } from '../users.js';
import { isSystemCatalogue, type RowFilter } from './predicate.js';

/** A grant on a system catalogue is refused (isSystemCatalogue): it would expose the schema or the engine. */
export function systemTableError(table: string): AppError {
  return new AppError(
    'ERR_DATA_SYSTEM_TABLE',
    `table_name: ${table} is a system catalogue of the database, not a table a policy may grant`,
    { details: { field: 'table_name' } },
  );
}

/** The built-in unrestricted role (docs/rules.md#data-access-rules, rule 1). */
export const BI_ADMIN = 'bi_admin';
/** The entitlement bit a user holds while they have any data role. */
export const BI_ENTITLEMENT = 'bi';

/** A data role, a role with its counts, a role's grant on one table, a user's role: the admin API's shapes (core/api-types-data-access.ts). */
export type { Assignment, DataPolicy, DataRole, DataRoleSummary };

/** One role of a user with its grants (the input of effective-policy resolution). */
export interface GrantRole {
  role_id: number;
  role: string;
  policies: { table: string; allowed_columns: string[]; row_filter: RowFilter; filter_key: string }[];
}

function toRole(r: Row<'data_roles'>): DataRole {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    builtin: r.builtin === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function toPolicy(r: Row<'data_policies'>): DataPolicy {
  return {
    id: r.id,
    role_id: r.role_id,
    table: r.table_name,
    allowed_columns: JSON.parse(r.allowed_columns) as string[],
    row_filter: JSON.parse(r.row_filter) as RowFilter,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** Code-unit order (= byte order for the ASCII names roles and tables have), the same on both engines. */
const byText =
  <T>(key: (x: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/** Kept here for the modules that import it from this store (domain/db/transaction.ts). */
export { inTransaction };

/** A unique index refused the row (SQLite or PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

const roleNotFound = (id: number) => new AppError('ERR_DATA_ROLE_NOT_FOUND', `no data role ${id}`);
const roleExists = (name: string) => new AppError('ERR_DATA_ROLE_EXISTS', `a data role named ${name} exists`);
const fixedGrants = (role: DataRole) => new AppError('ERR_DATA_ROLE_BUILTIN', `the grants of ${role.name} are fixed`);

/** Every role with its number of grants and assignments, by name (case-insensitive). */
export async function listRoles(db: Sql): Promise<DataRoleSummary[]> {
  const rows = await db
    .selectFrom('data_roles as r')
    .selectAll('r')
    .select((eb) => [
      eb
        .selectFrom('data_policies as p')
        .whereRef('p.role_id', '=', 'r.id')
        .select((e) => e.fn.countAll<number>().as('n'))
        .as('policy_count'),
      eb
        .selectFrom('user_data_roles as a')
        .whereRef('a.role_id', '=', 'r.id')
        .select((e) => e.fn.countAll<number>().as('n'))
        .as('assignment_count'),
    ])
    .execute();
  return rows
    .map((r) => ({
      ...toRole(r),
      policy_count: Number(r.policy_count ?? 0),
      assignment_count: Number(r.assignment_count ?? 0),
    }))
    .sort(byText((r) => r.name.toLowerCase()));
}

export async function getRole(db: Sql, id: number): Promise<DataRole> {
  const r = await db.selectFrom('data_roles').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw roleNotFound(id);
  return toRole(r);
}

/** By name, whatever its case (names are unique regardless of case). */
export async function getRoleByName(db: Sql, name: string): Promise<DataRole | undefined> {
  const r = await db
    .selectFrom('data_roles')
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['name']), '=', name.toLowerCase()))
    .executeTakeFirst();
  return r && toRole(r);
}

export async function createRole(db: Sql, actorId: number | null, name: string, description = ''): Promise<DataRole> {
  try {
    return await inTransaction(db, async (trx) => {
      if (await getRoleByName(trx, name)) throw roleExists(name);
      const r = await trx
        .insertInto('data_roles')
        .values({ name, description })
        .returningAll()
        .executeTakeFirstOrThrow();
      const role = toRole(r);
      await logAction(trx, { event: 'data.role.created', actorId, data: { role_id: role.id, role: role.name } });
      return role;
    });
  } catch (err) {
    // Another request created the name between the check and the insert.
    if (isUniqueViolation(err)) throw roleExists(name);
    throw err;
  }
}

export async function updateRole(
  db: Sql,
  actorId: number | null,
  id: number,
  patch: { name?: string; description?: string },
): Promise<DataRole> {
  try {
    return await inTransaction(db, async (trx) => {
      const role = await getRole(trx, id);
      if (patch.name !== undefined && patch.name !== role.name) {
        if (role.builtin) throw new AppError('ERR_DATA_ROLE_BUILTIN', `${role.name} is built in and cannot be renamed`);
        const other = await getRoleByName(trx, patch.name);
        if (other && other.id !== id) throw roleExists(patch.name);
      }
      const r = await trx
        .updateTable('data_roles')
        .set({
          name: patch.name ?? role.name,
          description: patch.description ?? role.description,
          updated_at: nowIso(),
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      if (!r) throw roleNotFound(id);
      const after = toRole(r);
      await logAction(trx, {
        event: 'data.role.updated',
        actorId,
        data: { role_id: id, role: after.name, ...(after.name !== role.name ? { previous_name: role.name } : {}) },
      });
      return after;
    });
  } catch (err) {
    if (isUniqueViolation(err) && patch.name !== undefined) throw roleExists(patch.name);
    throw err;
  }
}

/**
 * Deletes the role, its grants and its assignments (one transaction, with the action-log
 * entries); users left without a role lose the `bi` bit.
 */
export async function deleteRole(db: Sql, actorId: number | null, id: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const role = await getRole(trx, id);
    if (role.builtin) throw new AppError('ERR_DATA_ROLE_BUILTIN', `${role.name} is built in and cannot be deleted`);
    const users = (
      await trx.selectFrom('user_data_roles').select('user_id').where('role_id', '=', id).orderBy('user_id').execute()
    ).map((r) => r.user_id);
    // The grants and assignments go with it (ON DELETE CASCADE).
    await trx.deleteFrom('data_roles').where('id', '=', id).execute();
    await logAction(trx, {
      event: 'data.role.deleted',
      actorId,
      data: { role_id: id, role: role.name, unassigned_users: users.length },
    });
    for (const u of users) await syncEntitlement(trx, actorId, u);
  });
}

/** The role's grants by table name. 404 when the role does not exist. */
export async function listPolicies(db: Sql, roleId: number): Promise<DataPolicy[]> {
  await getRole(db, roleId);
  const rows = await db.selectFrom('data_policies').selectAll().where('role_id', '=', roleId).execute();
  return rows.map(toPolicy).sort(byText((p) => p.table));
}

/** Create or replace the role's grant on one table; returns it and whether it is new. */
export async function putPolicy(
  db: Sql,
  actorId: number | null,
  roleId: number,
  table: string,
  columns: string[],
  rowFilter: RowFilter,
): Promise<{ policy: DataPolicy; created: boolean }> {
  if (isSystemCatalogue(table)) throw systemTableError(table);
  return inTransaction(db, async (trx) => {
    const role = await getRole(trx, roleId);
    if (role.builtin) throw fixedGrants(role);
    const cols = JSON.stringify(columns);
    const filter = JSON.stringify(rowFilter);
    const inserted = await trx
      .insertInto('data_policies')
      .values({ role_id: roleId, table_name: table, allowed_columns: cols, row_filter: filter })
      .onConflict((oc) => oc.columns(['role_id', 'table_name']).doNothing())
      .returningAll()
      .executeTakeFirst();
    const row =
      inserted ??
      (await trx
        .updateTable('data_policies')
        .set({ allowed_columns: cols, row_filter: filter, updated_at: nowIso() })
        .where('role_id', '=', roleId)
        .where('table_name', '=', table)
        .returningAll()
        .executeTakeFirstOrThrow());
    // The grant itself is configuration, not query data: it is logged in full for the audit trail.
    await logAction(trx, {
      event: inserted ? 'data.policy.created' : 'data.policy.updated',
      actorId,
      data: { role_id: roleId, role: role.name, table, allowed_columns: columns, row_filter: rowFilter },
    });
    return { policy: toPolicy(row), created: !!inserted };
  });
}

export async function deletePolicy(db: Sql, actorId: number | null, roleId: number, table: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const role = await getRole(trx, roleId);
    if (role.builtin) throw fixedGrants(role);
    const r = await trx
      .deleteFrom('data_policies')
      .where('role_id', '=', roleId)
      .where('table_name', '=', table)
      .executeTakeFirst();
    if (Number(r.numDeletedRows) === 0)
      throw new AppError('ERR_DATA_POLICY_NOT_FOUND', `role ${roleId} has no grant on ${table}`);
    await logAction(trx, { event: 'data.policy.deleted', actorId, data: { role_id: roleId, role: role.name, table } });
  });
}

function assignments(db: Sql) {
  return db
    .selectFrom('user_data_roles as a')
    .innerJoin('users as u', 'u.id', 'a.user_id')
    .innerJoin('data_roles as r', 'r.id', 'a.role_id')
    .select(['a.id', 'a.user_id', 'u.username', 'a.role_id', 'r.name as role', 'a.assigned_by', 'a.created_at']);
}

export async function listAssignments(
  db: Sql,
  q: { userId?: number; roleId?: number; limit?: number; offset?: number } = {},
): Promise<{ items: Assignment[]; total: number }> {
  let count = db.selectFrom('user_data_roles as a').select((eb) => eb.fn.countAll<number>().as('n'));
  let page = assignments(db);
  if (q.userId !== undefined) {
    count = count.where('a.user_id', '=', q.userId);
    page = page.where('a.user_id', '=', q.userId);
  }
  if (q.roleId !== undefined) {
    count = count.where('a.role_id', '=', q.roleId);
    page = page.where('a.role_id', '=', q.roleId);
  }
  const total = Number((await count.executeTakeFirstOrThrow()).n);
  const items = await page
    .orderBy('a.id')
    .limit(q.limit ?? 100)
    .offset(q.offset ?? 0)
    .execute();
  return { items, total };
}

export async function getAssignment(db: Sql, id: number): Promise<Assignment> {
  const a = await assignments(db).where('a.id', '=', id).executeTakeFirst();
  if (!a) throw new AppError('ERR_DATA_ASSIGNMENT_NOT_FOUND', `no assignment ${id}`);
  return a;
}

/** Assign a role to a user (409 when they have it); the user gets the `bi` bit in the same transaction. */
export async function assign(db: Sql, actorId: number | null, userId: number, roleId: number): Promise<Assignment> {
  return inTransaction(db, async (trx) => {
    if (!(await getUserById(trx, userId))) throw new AppError('ERR_DATA_USER_NOT_FOUND', `no user ${userId}`);
    const role = await getRole(trx, roleId);
    const row = await trx
      .insertInto('user_data_roles')
      .values({ user_id: userId, role_id: roleId, assigned_by: actorId })
      .onConflict((oc) => oc.columns(['user_id', 'role_id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!row) {
      const dup = await trx
        .selectFrom('user_data_roles')
        .select('id')
        .where('user_id', '=', userId)
        .where('role_id', '=', roleId)
        .executeTakeFirst();
      throw new AppError('ERR_DATA_ASSIGNMENT_EXISTS', `user ${userId} already has ${role.name}`, {
        details: { assignment_id: dup?.id },
      });
    }
    await logAction(trx, {
      event: 'data.assignment.created',
      actorId,
      subjectId: userId,
      data: { assignment_id: row.id, role_id: roleId, role: role.name },
    });
    await syncEntitlement(trx, actorId, userId);
    return getAssignment(trx, row.id);
  });
}

/** Remove an assignment; a user left without a role loses the `bi` bit in the same transaction. */
export async function unassign(db: Sql, actorId: number | null, assignmentId: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const a = await getAssignment(trx, assignmentId);
    const r = await trx.deleteFrom('user_data_roles').where('id', '=', assignmentId).executeTakeFirst();
    if (Number(r.numDeletedRows) === 0)
      throw new AppError('ERR_DATA_ASSIGNMENT_NOT_FOUND', `no assignment ${assignmentId}`);
    await logAction(trx, {
      event: 'data.assignment.deleted',
      actorId,
      subjectId: a.user_id,
      data: { assignment_id: a.id, role_id: a.role_id, role: a.role },
    });
    await syncEntitlement(trx, actorId, a.user_id);
  });
}

/**
 * Roles of a user (sorted by name) with their grants, as effective-policy resolution needs
 * them: one query for the roles and their grants together.
 */
export async function grantsOf(db: Sql, userId: number): Promise<GrantRole[]> {
  const rows = await db
    .selectFrom('user_data_roles as a')
    .innerJoin('data_roles as r', 'r.id', 'a.role_id')
    .leftJoin('data_policies as p', 'p.role_id', 'a.role_id')
    .select(['a.role_id', 'r.name', 'p.table_name', 'p.allowed_columns', 'p.row_filter'])
    .where('a.user_id', '=', userId)
    .execute();
  const byRole = new Map<number, GrantRole>();
  for (const { role_id, name, table_name, allowed_columns, row_filter } of rows) {
    let g = byRole.get(role_id);
    if (!g) byRole.set(role_id, (g = { role_id, role: name, policies: [] }));
    if (table_name !== null && allowed_columns !== null && row_filter !== null) {
      g.policies.push({
        table: table_name,
        allowed_columns: JSON.parse(allowed_columns) as string[],
        row_filter: JSON.parse(row_filter) as RowFilter,
        filter_key: row_filter,
      });
    }
  }
  for (const g of byRole.values()) g.policies.sort(byText((p) => p.table));
  return [...byRole.values()].sort(byText((g) => g.role));
}

export async function hasEntitlement(db: Sql, userId: number, name = BI_ENTITLEMENT): Promise<boolean> {
  return !!(await db
    .selectFrom('user_entitlements')
    .select('user_id')
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst());
}

/**
 * docs/rules.md#data-access-rules, rule 6: the `bi` bit is set while the user has any data role and cleared when
 * they have none; each change is written to the action log (in the caller's transaction).
 */
export async function syncEntitlement(db: Sql, actorId: number | null, userId: number): Promise<void> {
  const has = !!(await db
    .selectFrom('user_data_roles')
    .select('id')
    .where('user_id', '=', userId)
    .limit(1)
    .executeTakeFirst());
  if (has) {
    const added = await db
      .insertInto('user_entitlements')
      .values({ user_id: userId, name: BI_ENTITLEMENT })
      .onConflict((oc) => oc.columns(['user_id', 'name']).doNothing())
      .returning('user_id')
      .executeTakeFirst();
    if (added)
      await logAction(db, {
        event: 'bi.entitlement.granted',
        actorId,
        subjectId: userId,
        data: { entitlement: BI_ENTITLEMENT, bi: true },
      });
  } else {
    const r = await db
      .deleteFrom('user_entitlements')
      .where('user_id', '=', userId)
      .where('name', '=', BI_ENTITLEMENT)
      .executeTakeFirst();
    if (Number(r.numDeletedRows) > 0) {
      await logAction(db, {
        event: 'bi.entitlement.revoked',
        actorId,
        subjectId: userId,
        data: { entitlement: BI_ENTITLEMENT, bi: false },
      });
    }
  }
}
