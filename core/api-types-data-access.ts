/**
 * The data-access admin API's shapes (/api/data-authorization): roles, policies, row filters,
 * assignments, a user's effective policy and the audit (the action log, a turn's requests).
 * Defined once: domain/data-access/, domain/action-log.ts and domain/db/schema-egress.ts alias or
 * extend them, web/admin-api.ts re-exports them to the pages. Types only, importing nothing (no
 * node types: the page bundle's `tsc` reads this file).
 */
export type FilterScalar = string | number | boolean;
export type FilterLeaf =
  | { column: string; op: 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte'; value: FilterScalar }
  | { column: string; op: 'in' | 'not_in'; value: FilterScalar[] }
  | { column: string; op: 'is_null'; value: boolean };
export type FilterNode = FilterLeaf | { all: FilterNode[] } | { any: FilterNode[] };
/** `{}` (all rows) or one node. */
export type RowFilterView = Record<string, never> | FilterNode;

export interface DataRoleView {
  id: number;
  name: string;
  description: string;
  builtin: boolean;
  created_at: string;
  updated_at: string;
}

export interface DataRoleSummaryView extends DataRoleView {
  policy_count: number;
  assignment_count: number;
}

export interface DataRoleList {
  roles: DataRoleSummaryView[];
}

/** POST /roles body (PATCH: either field). */
export interface DataRoleRequest {
  name: string;
  description?: string;
}

export interface DataPolicyView {
  id: number;
  role_id: number;
  table: string;
  allowed_columns: string[];
  row_filter: RowFilterView;
  created_at: string;
  updated_at: string;
}

/** GET /roles/:id/policies. */
export interface DataPolicyList {
  role: DataRoleView;
  policies: DataPolicyView[];
}

/** PUT /roles/:id/policies/:table body. */
export interface DataPolicyRequest {
  allowed_columns: string[];
  row_filter?: unknown;
}

export interface AssignmentView {
  id: number;
  user_id: number;
  username: string;
  role_id: number;
  role: string;
  assigned_by: number | null;
  created_at: string;
}

export interface AssignmentList {
  assignments: AssignmentView[];
  total: number;
  limit: number;
  offset: number;
}

/** POST /assignments body. */
export interface AssignmentRequest {
  user_id: number;
  role_id: number;
}

/** One role's grant as it reaches a table, with the user's variables already substituted. */
export interface GrantView {
  role_id: number;
  role: string;
  /** The grant's own table: the name, or "*" when it came from a wildcard grant. */
  granted_on: string;
  allowed_columns: string[];
  row_filter: RowFilterView;
  /** Human-readable: what this grant gives on this table. */
  gives: string;
  /** Identity of the stored filter, for de-duplication. */
  filter_key?: string;
}

/** What a user may read from one table (or, for table "*", from any table not named). */
export interface TablePolicyView {
  table: string;
  /** ["*"] for every column, else the sorted union of the grants' columns. */
  columns: string[];
  /** True when some grant has an empty row filter (it dominates, docs/rules.md#data-access-rules, rule 3). */
  all_rows: boolean;
  /** `{}` when all_rows; otherwise one grant's filter or `{"any":[…]}` of them (OR). */
  row_filter: RowFilterView;
  grants: GrantView[];
  explanation: string;
}

/** GET /users/:id/effective-policy (domain/data-access/effective.ts resolves it). */
export interface EffectivePolicyView {
  user: { id: number; username: string; is_active: boolean };
  /** The `bi` entitlement bit (docs/rules.md#data-access-rules, rule 6). */
  bi: boolean;
  roles: { id: number; name: string }[];
  /** Named tables; each already includes what wildcard grants add. */
  tables: TablePolicyView[];
  /** From grants on "*": applies to every table not in `tables`. Null when no wildcard grant. */
  any_table: TablePolicyView | null;
  explanation: string[];
}

export type LogSeverity = 'info' | 'warning' | 'critical';

/** An account named in the action log; username null when the account is gone. */
export interface LogAccount {
  id: number;
  username: string | null;
  display_name: string | null;
}

/** One row of the action log (domain/action-log.ts), its `data` parsed. */
export interface LogRecord {
  id: number;
  event: string;
  severity: LogSeverity;
  actor_id: number | null;
  subject_id: number | null;
  /** Structured details; never secrets, SQL or result values. */
  data: Record<string, unknown>;
  created_at: string;
}

/** An action-log entry with its accounts by name (null when there is none; the id stays in actor_id / subject_id). */
export interface LogEntry extends LogRecord {
  actor: LogAccount | null;
  subject: LogAccount | null;
}

/** GET /audit: newest first; `next_before` is the cursor of the next (older) page, null on the last. */
export interface LogPage {
  events: LogEntry[];
  next_before: number | null;
  limit: number;
}

/** What is recorded of one request the in-sandbox proxy decided on (the proxy_requests row, domain/db/schema-egress.ts). */
export interface ProxyRequestFields {
  route: string | null;
  method: string | null;
  /** The allow-list template the path matched, never the path's values. */
  template: string | null;
  outcome: 'forwarded' | 'refused' | 'upstream_error';
  status: number;
  code: string | null;
  req_bytes: number | null;
  res_bytes: number | null;
  ms: number | null;
  recipients: number | null;
  node_id: string;
}

/** One request the in-sandbox proxy decided on (GET /api/admin/turns/:turnId). */
export interface AuditedRequest extends ProxyRequestFields {
  id: number;
  at: string;
}

/** GET /api/admin/turns/:turnId: one turn, its tool calls with their upstream requests, and its held sends. */
export interface TurnAudit {
  turn_id: string;
  session_id: string;
  title: string;
  user: { id: number; username: string | null };
  prompt: string;
  status: string;
  stop_reason: string | null;
  started_at: string;
  ended_at: string | null;
  /** Tokens the turn's model calls used, as the provider reported them (null: none reported). */
  usage: { input_tokens: number; output_tokens: number } | null;
  tool_calls: {
    call_id: string;
    tool: string;
    status: string;
    duration_ms: number | null;
    requests: AuditedRequest[];
  }[];
  /** Requests of no tool call: the model's, and those the child made itself. */
  other_requests: AuditedRequest[];
  mail_holds: {
    id: string;
    call_id: string | null;
    recipients: string[];
    /** The recipients by header; absent for sends held before they were kept apart. */
    fields?: { to: string[]; cc: string[]; bcc: string[] };
    asked: string[];
    subject: string;
    attachments: { name: string; size: number }[];
    state: string;
    scope: string | null;
    code: string | null;
    at: string;
    decided_at: string | null;
  }[];
  /** Feedback users gave the answer (docs/chat.md "Feedback on answers"), oldest change first. */
  feedback: { user: { id: number; username: string | null }; rating: 'up' | 'down'; note: string | null; at: string }[];
}
