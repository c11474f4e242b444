import { AppError, ConflictError, NotFoundError, getUserById, logAction, nowIso, type Db } from '../../core/index.js';
import type { RowFilter } from './predicate.js';

/** The built-in unrestricted role (docs/rules.md#data-access-rules, rule 1). */
export const BI_ADMIN = 'bi_admin';
/** The entitlement bit a user holds while they have any data role. */
export const BI_ENTITLEMENT = 'bi';

export interface DataRole {
  id: number;
  name: string;
  description: string;
  builtin: boolean;
  created_at: string;
  updated_at: string;
}

export interface DataRoleSummary extends DataRole {
  policy_count: number;
  assignment_count: number;
}

export interface DataPolicy {
  id: number;
  role_id: number;
  table: string;
  allowed_columns: string[];
  row_filter: RowFilter;
  created_at: string;
  updated_at: string;
}

/** One role of a user with its grants (the input of effective-policy resolution). */
export interface GrantRole {
  role_id: number;
  role: string;
  policies: { table: string; allowed_columns: string[]; row_filter: RowFilter; filter_key: string }[];
}

export interface Assignment {
  id: number;
  user_id: number;
  username: string;
  role_id: number;
  role: string;
  assigned_by: number | null;
  created_at: string;
}

interface RoleRow {
  id: number;
  name: string;
  description: string;
  builtin: number;
  created_at: string;
  updated_at: string;
  policy_count?: number;
  assignment_count?: number;
}

interface PolicyRow {
  id: number;
  role_id: number;
  table_name: string;
  allowed_columns: string;
  row_filter: string;
  created_at: string;
  updated_at: string;
}

function toRole(r: RoleRow): DataRole {
  return { id: r.id, name: r.name, description: r.description, builtin: r.builtin === 1, created_at: r.created_at, updated_at: r.updated_at };
}

export function toPolicy(r: PolicyRow): DataPolicy {
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

const roleNotFound = (id: number) => new NotFoundError('ERR_DATA_ROLE_NOT_FOUND', `no data role ${id}`);

/** Data-access models over SQLite. Every change is written to the action log by the caller's actor. */
export class DataAccessStore {
  constructor(readonly db: Db) {}

  listRoles(): DataRoleSummary[] {
    const rows = this.db
      .prepare(
        `SELECT r.*,
           (SELECT COUNT(*) FROM data_policies p WHERE p.role_id = r.id) AS policy_count,
           (SELECT COUNT(*) FROM user_data_roles a WHERE a.role_id = r.id) AS assignment_count
         FROM data_roles r ORDER BY r.name`,
      )
      .all() as RoleRow[];
    return rows.map((r) => ({ ...toRole(r), policy_count: r.policy_count ?? 0, assignment_count: r.assignment_count ?? 0 }));
  }

  getRole(id: number): DataRole {
    const r = this.db.prepare('SELECT * FROM data_roles WHERE id = ?').get(id) as RoleRow | undefined;
    if (!r) throw roleNotFound(id);
    return toRole(r);
  }

  getRoleByName(name: string): DataRole | undefined {
    const r = this.db.prepare('SELECT * FROM data_roles WHERE name = ?').get(name) as RoleRow | undefined;
    return r && toRole(r);
  }

  createRole(actorId: number | null, name: string, description = ''): DataRole {
    return this.db.transaction(() => {
      if (this.getRoleByName(name)) throw new ConflictError('ERR_DATA_ROLE_EXISTS', `a data role named ${name} exists`);
      const info = this.db.prepare('INSERT INTO data_roles (name, description) VALUES (?, ?)').run(name, description);
      const role = this.getRole(Number(info.lastInsertRowid));
      logAction(this.db, { event: 'data.role.created', actorId, data: { role_id: role.id, role: role.name } });
      return role;
    })();
  }

  updateRole(actorId: number | null, id: number, patch: { name?: string; description?: string }): DataRole {
    return this.db.transaction(() => {
      const role = this.getRole(id);
      if (patch.name !== undefined && patch.name !== role.name) {
        if (role.builtin) throw new ConflictError('ERR_DATA_ROLE_BUILTIN', `${role.name} is built in and cannot be renamed`);
        const other = this.getRoleByName(patch.name);
        if (other && other.id !== id) throw new ConflictError('ERR_DATA_ROLE_EXISTS', `a data role named ${patch.name} exists`);
      }
      this.db
        .prepare('UPDATE data_roles SET name = ?, description = ?, updated_at = ? WHERE id = ?')
        .run(patch.name ?? role.name, patch.description ?? role.description, nowIso(), id);
      const after = this.getRole(id);
      logAction(this.db, {
        event: 'data.role.updated',
        actorId,
        data: { role_id: id, role: after.name, ...(after.name !== role.name ? { previous_name: role.name } : {}) },
      });
      return after;
    })();
  }

  /** Deletes the role, its grants and its assignments; users left without a role lose the `bi` bit. */
  deleteRole(actorId: number | null, id: number): void {
    this.db.transaction(() => {
      const role = this.getRole(id);
      if (role.builtin) throw new ConflictError('ERR_DATA_ROLE_BUILTIN', `${role.name} is built in and cannot be deleted`);
      const users = (this.db.prepare('SELECT user_id FROM user_data_roles WHERE role_id = ?').all(id) as { user_id: number }[]).map(
        (r) => r.user_id,
      );
      this.db.prepare('DELETE FROM data_roles WHERE id = ?').run(id);
      logAction(this.db, { event: 'data.role.deleted', actorId, data: { role_id: id, role: role.name, unassigned_users: users.length } });
      for (const u of users) this.syncEntitlement(actorId, u);
    })();
  }

  listPolicies(roleId: number): DataPolicy[] {
    this.getRole(roleId);
    return (this.db.prepare('SELECT * FROM data_policies WHERE role_id = ? ORDER BY table_name').all(roleId) as PolicyRow[]).map(toPolicy);
  }

  /** Create or replace the role's grant on one table; returns it and whether it is new. */
  putPolicy(
    actorId: number | null,
    roleId: number,
    table: string,
    columns: string[],
    rowFilter: RowFilter,
  ): { policy: DataPolicy; created: boolean } {
    return this.db.transaction(() => {
      const role = this.getRole(roleId);
      if (role.builtin) throw new ConflictError('ERR_DATA_ROLE_BUILTIN', `the grants of ${role.name} are fixed`);
      const existing = this.db.prepare('SELECT id FROM data_policies WHERE role_id = ? AND table_name = ?').get(roleId, table) as
        | { id: number }
        | undefined;
      const cols = JSON.stringify(columns);
      const filter = JSON.stringify(rowFilter);
      if (existing) {
        this.db
          .prepare('UPDATE data_policies SET allowed_columns = ?, row_filter = ?, updated_at = ? WHERE id = ?')
          .run(cols, filter, nowIso(), existing.id);
      } else {
        this.db.prepare('INSERT INTO data_policies (role_id, table_name, allowed_columns, row_filter) VALUES (?, ?, ?, ?)').run(roleId, table, cols, filter);
      }
      const row = this.db.prepare('SELECT * FROM data_policies WHERE role_id = ? AND table_name = ?').get(roleId, table) as PolicyRow;
      // The grant itself is configuration, not query data: it is logged in full for the audit trail.
      logAction(this.db, {
        event: existing ? 'data.policy.updated' : 'data.policy.created',
        actorId,
        data: { role_id: roleId, role: role.name, table, allowed_columns: columns, row_filter: rowFilter },
      });
      return { policy: toPolicy(row), created: !existing };
    })();
  }

  deletePolicy(actorId: number | null, roleId: number, table: string): void {
    this.db.transaction(() => {
      const role = this.getRole(roleId);
      if (role.builtin) throw new ConflictError('ERR_DATA_ROLE_BUILTIN', `the grants of ${role.name} are fixed`);
      const info = this.db.prepare('DELETE FROM data_policies WHERE role_id = ? AND table_name = ?').run(roleId, table);
      if (info.changes === 0) throw new NotFoundError('ERR_DATA_POLICY_NOT_FOUND', `role ${roleId} has no grant on ${table}`);
      logAction(this.db, { event: 'data.policy.deleted', actorId, data: { role_id: roleId, role: role.name, table } });
    })();
  }

  listAssignments(q: { userId?: number; roleId?: number; limit?: number; offset?: number } = {}): { items: Assignment[]; total: number } {
    const where: string[] = [];
    const args: unknown[] = [];
    if (q.userId !== undefined) (where.push('a.user_id = ?'), args.push(q.userId));
    if (q.roleId !== undefined) (where.push('a.role_id = ?'), args.push(q.roleId));
    const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = (this.db.prepare(`SELECT COUNT(*) AS n FROM user_data_roles a ${w}`).get(...args) as { n: number }).n;
    const items = this.db
      .prepare(
        `SELECT a.id, a.user_id, u.username, a.role_id, r.name AS role, a.assigned_by, a.created_at
         FROM user_data_roles a JOIN users u ON u.id = a.user_id JOIN data_roles r ON r.id = a.role_id
         ${w} ORDER BY a.id LIMIT ? OFFSET ?`,
      )
      .all(...args, q.limit ?? 100, q.offset ?? 0) as Assignment[];
    return { items, total };
  }

  getAssignment(id: number): Assignment {
    const a = this.db
      .prepare(
        `SELECT a.id, a.user_id, u.username, a.role_id, r.name AS role, a.assigned_by, a.created_at
         FROM user_data_roles a JOIN users u ON u.id = a.user_id JOIN data_roles r ON r.id = a.role_id WHERE a.id = ?`,
      )
      .get(id) as Assignment | undefined;
    if (!a) throw new NotFoundError('ERR_DATA_ASSIGNMENT_NOT_FOUND', `no assignment ${id}`);
    return a;
  }

  assign(actorId: number | null, userId: number, roleId: number): Assignment {
    return this.db.transaction(() => {
      if (!getUserById(this.db, userId)) throw new NotFoundError('ERR_DATA_USER_NOT_FOUND', `no user ${userId}`);
      const role = this.getRole(roleId);
      const dup = this.db.prepare('SELECT id FROM user_data_roles WHERE user_id = ? AND role_id = ?').get(userId, roleId) as { id: number } | undefined;
      if (dup) throw new ConflictError('ERR_DATA_ASSIGNMENT_EXISTS', `user ${userId} already has ${role.name}`, { assignment_id: dup.id });
      const info = this.db.prepare('INSERT INTO user_data_roles (user_id, role_id, assigned_by) VALUES (?, ?, ?)').run(userId, roleId, actorId);
      const id = Number(info.lastInsertRowid);
      logAction(this.db, { event: 'data.assignment.created', actorId, subjectId: userId, data: { assignment_id: id, role_id: roleId, role: role.name } });
      this.syncEntitlement(actorId, userId);
      return this.getAssignment(id);
    })();
  }

  unassign(actorId: number | null, assignmentId: number): void {
    this.db.transaction(() => {
      const a = this.getAssignment(assignmentId);
      this.db.prepare('DELETE FROM user_data_roles WHERE id = ?').run(assignmentId);
      logAction(this.db, {
        event: 'data.assignment.deleted',
        actorId,
        subjectId: a.user_id,
        data: { assignment_id: a.id, role_id: a.role_id, role: a.role },
      });
      this.syncEntitlement(actorId, a.user_id);
    })();
  }

  /**
   * Roles of a user (sorted by name) with their grants, as effective-policy resolution needs
   * them. Narrow raw rows: this read dominates resolution time for users with many grants.
   */
  grantsOf(userId: number): GrantRole[] {
    const rows = this.grantsStmt.all(userId) as [number, string, string | null, string | null, string | null][];
    const byRole = new Map<number, GrantRole>();
    for (const [rid, rname, table, cols, filter] of rows) {
      let g = byRole.get(rid);
      if (!g) byRole.set(rid, (g = { role_id: rid, role: rname, policies: [] }));
      if (table !== null) {
        g.policies.push({
          table,
          allowed_columns: JSON.parse(cols!) as string[],
          row_filter: JSON.parse(filter!) as RowFilter,
          filter_key: filter!,
        });
      }
    }
    return [...byRole.values()].sort((a, b) => (a.role < b.role ? -1 : a.role > b.role ? 1 : 0));
  }

  private get grantsStmt() {
    // Index order on (role_id, table_name) gives each role's grants sorted by table.
    return (this.#grants ??= this.db
      .prepare(
        `SELECT a.role_id, r.name, p.table_name, p.allowed_columns, p.row_filter
         FROM user_data_roles a JOIN data_roles r ON r.id = a.role_id
         LEFT JOIN data_policies p ON p.role_id = a.role_id
         WHERE a.user_id = ?`,
      )
      .raw(true));
  }
  #grants?: ReturnType<Db['prepare']>;

  hasEntitlement(userId: number, name = BI_ENTITLEMENT): boolean {
    return !!this.db.prepare('SELECT 1 FROM user_entitlements WHERE user_id = ? AND name = ?').get(userId, name);
  }

  /**
   * docs/rules.md#data-access-rules, rule 6: the `bi` bit is set while the user has any data role and cleared when
   * they have none; each change is written to the action log.
   */
  syncEntitlement(actorId: number | null, userId: number): void {
    const has = !!this.db.prepare('SELECT 1 FROM user_data_roles WHERE user_id = ? LIMIT 1').get(userId);
    const bit = this.hasEntitlement(userId);
    if (has && !bit) {
      this.db.prepare('INSERT INTO user_entitlements (user_id, name) VALUES (?, ?)').run(userId, BI_ENTITLEMENT);
      logAction(this.db, { event: 'bi.entitlement.granted', actorId, subjectId: userId, data: { entitlement: BI_ENTITLEMENT, bi: true } });
    } else if (!has && bit) {
      this.db.prepare('DELETE FROM user_entitlements WHERE user_id = ? AND name = ?').run(userId, BI_ENTITLEMENT);
      logAction(this.db, { event: 'bi.entitlement.revoked', actorId, subjectId: userId, data: { entitlement: BI_ENTITLEMENT, bi: false } });
    }
  }
}

/** Parse a positive integer path id; 400 otherwise. */
export function parseId(raw: unknown, what: string): number {
  const s = String(raw ?? '');
  if (!/^[1-9][0-9]{0,15}$/.test(s)) throw new AppError('ERR_DATA_INVALID', `${what}: not an id`, { status: 400, details: { field: what } });
  return Number(s);
}
