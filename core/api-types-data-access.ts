/**
 * The data-access admin API's shapes (/api/data-authorization): roles, policies, row filters,
 * assignments, a user's effective policy and the audit (the action log, a turn's requests). Each
 * answer is a zod schema and a type of the same name: the route definitions (web/routes/) name the
 * schema, domain/data-access/, domain/action-log.ts and domain/db/schema-egress.ts alias or extend
 * the type, web/admin-api.ts re-exports the types to the pages (which import types only, so no zod
 * reaches the page bundle).
 */
import { z } from 'zod';

export type FilterScalar = string | number | boolean;
export type FilterLeaf =
  | { column: string; op: 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte'; value: FilterScalar }
  | { column: string; op: 'in' | 'not_in'; value: FilterScalar[] }
  | { column: string; op: 'is_null'; value: boolean };
export type FilterNode = FilterLeaf | { all: FilterNode[] } | { any: FilterNode[] };
/** `{}` (all rows) or one node. */
export type RowFilterView = Record<string, never> | FilterNode;
/** A stored row filter (checked when it was written, domain/data-access/filter.ts): an object here. */
export const RowFilterView = z.custom<RowFilterView>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));

export const DataRoleView = z.strictObject({
  id: z.number(),
  name: z.string(),
  description: z.string(),
  builtin: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DataRoleView = z.infer<typeof DataRoleView>;

export const DataRoleSummaryView = DataRoleView.extend({ policy_count: z.number(), assignment_count: z.number() });
export type DataRoleSummaryView = z.infer<typeof DataRoleSummaryView>;

export const DataRoleList = z.strictObject({ roles: z.array(DataRoleSummaryView) });
export type DataRoleList = z.infer<typeof DataRoleList>;

/** POST /roles body (PATCH: either field). */
export interface DataRoleRequest {
  name: string;
  description?: string;
}

export const DataPolicyView = z.strictObject({
  id: z.number(),
  role_id: z.number(),
  table: z.string(),
  allowed_columns: z.array(z.string()),
  row_filter: RowFilterView,
  created_at: z.string(),
  updated_at: z.string(),
});
export type DataPolicyView = z.infer<typeof DataPolicyView>;

/** GET /roles/:id/policies. */
export const DataPolicyList = z.strictObject({ role: DataRoleView, policies: z.array(DataPolicyView) });
export type DataPolicyList = z.infer<typeof DataPolicyList>;

/** PUT /roles/:id/policies/:table body. */
export interface DataPolicyRequest {
  allowed_columns: string[];
  row_filter?: unknown;
}

export const AssignmentView = z.strictObject({
  id: z.number(),
  user_id: z.number(),
  username: z.string(),
  role_id: z.number(),
  role: z.string(),
  assigned_by: z.number().nullable(),
  created_at: z.string(),
});
export type AssignmentView = z.infer<typeof AssignmentView>;

export const AssignmentList = z.strictObject({
  assignments: z.array(AssignmentView),
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
});
export type AssignmentList = z.infer<typeof AssignmentList>;

/** POST /assignments body. */
export interface AssignmentRequest {
  user_id: number;
  role_id: number;
}

/** One role's grant as it reaches a table, with the user's variables already substituted. */
export const GrantView = z.strictObject({
  role_id: z.number(),
  role: z.string(),
  /** The grant's own table: the name, or "*" when it came from a wildcard grant. */
  granted_on: z.string(),
  allowed_columns: z.array(z.string()),
  row_filter: RowFilterView,
  /** Human-readable: what this grant gives on this table. */
  gives: z.string(),
  /** Identity of the stored filter, for de-duplication. */
  filter_key: z.string().optional(),
});
export type GrantView = z.infer<typeof GrantView>;

/** What a user may read from one table (or, for table "*", from any table not named). */
export const TablePolicyView = z.strictObject({
  table: z.string(),
  /** ["*"] for every column, else the sorted union of the grants' columns. */
  columns: z.array(z.string()),
  /** True when some grant has an empty row filter (it dominates, docs/rules.md#data-access-rules, rule 3). */
  all_rows: z.boolean(),
  /** `{}` when all_rows; otherwise one grant's filter or `{"any":[…]}` of them (OR). */
  row_filter: RowFilterView,
  grants: z.array(GrantView),
  explanation: z.string(),
});
export type TablePolicyView = z.infer<typeof TablePolicyView>;

/** GET /users/:id/effective-policy (domain/data-access/effective.ts resolves it). */
export const EffectivePolicyView = z.strictObject({
  user: z.strictObject({ id: z.number(), username: z.string(), is_active: z.boolean() }),
  /** The `bi` entitlement bit (docs/rules.md#data-access-rules, rule 6). */
  bi: z.boolean(),
  roles: z.array(z.strictObject({ id: z.number(), name: z.string() })),
  /** Named tables; each already includes what wildcard grants add. */
  tables: z.array(TablePolicyView),
  /** From grants on "*": applies to every table not in `tables`. Null when no wildcard grant. */
  any_table: TablePolicyView.nullable(),
  explanation: z.array(z.string()),
});
export type EffectivePolicyView = z.infer<typeof EffectivePolicyView>;

const SqlParams = z.array(z.union([z.string(), z.number(), z.boolean()]));
/** One table's SELECT in one dialect (domain/data-access/compile.ts). */
export const CompiledQueryView = z.strictObject({
  dialect: z.enum(['sqlite', 'postgres']),
  table: z.string(),
  columns: z.string(),
  where: z.string().nullable(),
  sql: z.string(),
  params: SqlParams,
});
/** A whole effective policy compiled for one dialect (domain/data-access/service.ts). */
export const CompiledPolicyView = z.strictObject({
  dialect: z.enum(['sqlite', 'postgres']),
  tables: z.record(z.string(), CompiledQueryView),
  any_table: z.strictObject({ columns: z.string(), where: z.string().nullable(), params: SqlParams }).nullable(),
});

/** GET /api/internal/bi-policy/{user_id}: the effective policy, compiled; `?table=` adds that table's. */
export const BiPolicyView = z.strictObject({
  user_id: z.number(),
  username: z.string(),
  bi: z.boolean(),
  policy: EffectivePolicyView,
  compiled: z.strictObject({ sqlite: CompiledPolicyView, postgres: CompiledPolicyView }),
  table: z
    .strictObject({
      table: z.string(),
      policy: TablePolicyView.nullable(),
      sqlite: CompiledQueryView.nullable(),
      postgres: CompiledQueryView.nullable(),
    })
    .optional(),
});
export type BiPolicyView = z.infer<typeof BiPolicyView>;

export const LogSeverity = z.enum(['info', 'warning', 'critical']);
export type LogSeverity = z.infer<typeof LogSeverity>;

/** POST /api/internal/bi-audit: the receipt of one recorded decision. */
export const BiAuditReceipt = z.strictObject({ id: z.number(), event: z.string(), severity: LogSeverity });

/** An account named in the action log; username null when the account is gone. */
export const LogAccount = z.strictObject({
  id: z.number(),
  username: z.string().nullable(),
  display_name: z.string().nullable(),
});
export type LogAccount = z.infer<typeof LogAccount>;

/** One row of the action log (domain/action-log.ts), its `data` parsed. */
export const LogRecord = z.strictObject({
  id: z.number(),
  event: z.string(),
  severity: LogSeverity,
  actor_id: z.number().nullable(),
  subject_id: z.number().nullable(),
  /** Structured details; never secrets, SQL or result values. */
  data: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});
export type LogRecord = z.infer<typeof LogRecord>;

/** An action-log entry with its accounts by name (null when there is none; the id stays in actor_id / subject_id). */
export const LogEntry = LogRecord.extend({ actor: LogAccount.nullable(), subject: LogAccount.nullable() });
export type LogEntry = z.infer<typeof LogEntry>;

/** GET /audit: newest first; `next_before` is the cursor of the next (older) page, null on the last. */
export const LogPage = z.strictObject({
  events: z.array(LogEntry),
  next_before: z.number().nullable(),
  limit: z.number(),
});
export type LogPage = z.infer<typeof LogPage>;

export type { TurnAudit, AuditedRequest, ProxyRequestFields } from './api-types-audit.js';
