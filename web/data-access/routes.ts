import { Router, type Request } from 'express';
import { AppError, ValidationError, type Severity } from '../../core/index.js';
import type {
  AssignmentList,
  AssignmentView,
  DataPolicyList,
  DataPolicyView,
  DataRoleList,
  DataRoleView,
  EffectivePolicyView,
  LogPage,
} from '../admin-api.js';
import { asyncHandler, requireSuperuser, type WebContext } from '../context.js';
import { compiled, pickProblems, problemsError, type Problem } from '../validate.js';
import { COLUMN_RE, FILTER_LIMITS, TABLE_RE, checkFilterSize, rowFilterProblems, type RowFilter } from './predicate.js';
import { effectivePolicyOf } from './service.js';
import { DataAccessStore, parseId } from './store.js';

const ROLE_NAME = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z][A-Za-z0-9_.-]*$',
  description: 'letters, digits, _ . and - only, starting with a letter',
};
/** Longest role description; the admin page clamps long ones to three lines with the full text as a tooltip. */
export const DESCRIPTION_MAX = 500;
const DESCRIPTION = { type: 'string', maxLength: DESCRIPTION_MAX };

export const ROLE_CREATE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: ROLE_NAME, description: DESCRIPTION },
} as const;

export const ROLE_PATCH_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: ROLE_NAME, description: DESCRIPTION },
} as const;

/** The body of a policy PUT; the row filter is checked by rowFilterProblems (its messages name the condition). */
export const POLICY_PUT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['allowed_columns'],
  properties: {
    allowed_columns: {
      type: 'array',
      minItems: 1,
      maxItems: FILTER_LIMITS.maxColumns,
      uniqueItems: true,
      items: { type: 'string', pattern: `(^\\*$)|(${COLUMN_RE.source})`, description: 'each column must be a column name (letters, digits and _) or "*"' },
    },
    row_filter: {},
  },
};

export const ASSIGN_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['user_id', 'role_id'],
  properties: { user_id: { type: 'integer', minimum: 1 }, role_id: { type: 'integer', minimum: 1 } },
} as const;

/** Validate with ajv, answering 400 ERR_DATA_INVALID (details as ERR_VALIDATION: field, problems). */
export function validateData<T>(schema: object, data: unknown, extra?: (data: T) => Problem[]): T {
  const fn = compiled(schema);
  const problems: Problem[] = fn(data) ? [] : pickProblems(fn.errors ?? []);
  if (extra && data !== null && typeof data === 'object' && !Array.isArray(data)) problems.push(...extra(data as T));
  if (problems.length) {
    const err = problemsError(problems);
    throw new AppError('ERR_DATA_INVALID', err.message, { status: 400, details: err.details });
  }
  return data as T;
}

/** The row filter's problems of a policy body (none when there is no filter). */
function policyProblems(b: { row_filter?: unknown }): Problem[] {
  return b.row_filter === undefined ? [] : rowFilterProblems(b.row_filter);
}

/** A table name in a path: an identifier (optionally schema-qualified) or "*". */
export function parseTableName(raw: unknown): string {
  const s = String(raw ?? '');
  if (s !== '*' && !TABLE_RE.test(s)) {
    throw new AppError('ERR_DATA_INVALID', 'table_name: must be an identifier or "*"', { status: 400, details: { field: 'table_name' } });
  }
  return s;
}

function intQuery(req: Request, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const v = req.query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !/^[0-9]{1,15}$/.test(v) || Number(v) > max) {
    throw new AppError('ERR_DATA_INVALID', `${name}: not a number in range`, { status: 400, details: { field: name } });
  }
  return Number(v);
}

const SEVERITIES: Severity[] = ['info', 'warning', 'critical'];
const EVENT_RE = /^[a-z0-9_.-]{1,100}(\.\*)?$/;

interface LogRow {
  id: number;
  event: string;
  severity: Severity;
  actor_id: number | null;
  subject_id: number | null;
  data: string;
  created_at: string;
  actor_username: string | null;
  actor_display_name: string | null;
  subject_username: string | null;
  subject_display_name: string | null;
}

/**
 * /api/data-authorization/* — session + CSRF (app-wide), superuser only.
 * Also serves the action log to the admin pages: GET /audit.
 */
export function dataAuthorizationRoutes(ctx: WebContext): Router {
  const r = Router();
  const store = new DataAccessStore(ctx.db);
  r.use(requireSuperuser);

  r.get('/roles', (_req, res) => {
    res.json({ roles: store.listRoles() } satisfies DataRoleList);
  });

  r.post('/roles', (req, res) => {
    const b = validateData<{ name: string; description?: string }>(ROLE_CREATE_SCHEMA, req.body);
    res.status(201).json(store.createRole(req.user!.id, b.name, b.description ?? '') satisfies DataRoleView);
  });

  r.patch('/roles/:role_id', (req, res) => {
    const id = parseId(req.params.role_id, 'role_id');
    const b = validateData<{ name?: string; description?: string }>(ROLE_PATCH_SCHEMA, req.body);
    res.json(store.updateRole(req.user!.id, id, b) satisfies DataRoleView);
  });

  r.delete('/roles/:role_id', (req, res) => {
    store.deleteRole(req.user!.id, parseId(req.params.role_id, 'role_id'));
    res.status(204).end();
  });

  r.get('/roles/:role_id/policies', (req, res) => {
    const id = parseId(req.params.role_id, 'role_id');
    const role = store.getRole(id);
    res.json({ role, policies: store.listPolicies(id) } satisfies DataPolicyList);
  });

  r.put('/roles/:role_id/policies/:table_name', (req, res) => {
    const id = parseId(req.params.role_id, 'role_id');
    const table = parseTableName(req.params.table_name);
    const b = validateData<{ allowed_columns: string[]; row_filter?: RowFilter }>(POLICY_PUT_SCHEMA, req.body, policyProblems);
    if (b.allowed_columns.includes('*') && b.allowed_columns.length > 1) {
      throw new AppError('ERR_DATA_INVALID', 'allowed_columns: "*" stands alone', { status: 400, details: { field: 'allowed_columns' } });
    }
    const filter = b.row_filter ?? {};
    checkFilterSize(filter);
    const { policy, created } = store.putPolicy(req.user!.id, id, table, b.allowed_columns, filter);
    res.status(created ? 201 : 200).json(policy satisfies DataPolicyView);
  });

  r.delete('/roles/:role_id/policies/:table_name', (req, res) => {
    store.deletePolicy(req.user!.id, parseId(req.params.role_id, 'role_id'), parseTableName(req.params.table_name));
    res.status(204).end();
  });

  r.get('/assignments', (req, res) => {
    const limit = intQuery(req, 'limit', 500) ?? 100;
    const offset = intQuery(req, 'offset') ?? 0;
    const { items, total } = store.listAssignments({ userId: intQuery(req, 'user_id'), roleId: intQuery(req, 'role_id'), limit, offset });
    res.json({ assignments: items, total, limit, offset } satisfies AssignmentList);
  });

  r.post('/assignments', (req, res) => {
    const b = validateData<{ user_id: number; role_id: number }>(ASSIGN_SCHEMA, req.body);
    res.status(201).json(store.assign(req.user!.id, b.user_id, b.role_id) satisfies AssignmentView);
  });

  r.delete('/assignments/:assignment_id', (req, res) => {
    store.unassign(req.user!.id, parseId(req.params.assignment_id, 'assignment_id'));
    res.status(204).end();
  });

  r.get('/users/:user_id/effective-policy', (req, res) => {
    res.json(effectivePolicyOf(store, parseId(req.params.user_id, 'user_id')) satisfies EffectivePolicyView);
  });

  // The action log, newest first. Filters: event (exact, or a prefix as `bi.*`), severity,
  // subject_id, actor_id; paging with `before` (an id) and `limit` (≤ 500).
  r.get(
    '/audit',
    asyncHandler(async (req, res) => {
      const where: string[] = [];
      const args: unknown[] = [];
      const event = req.query.event;
      if (event !== undefined && event !== '') {
        if (typeof event !== 'string' || !EVENT_RE.test(event)) {
          throw new AppError('ERR_DATA_INVALID', 'event: an event name, or a prefix ending in .*', { status: 400, details: { field: 'event' } });
        }
        if (event.endsWith('.*')) (where.push("substr(l.event, 1, ?) = ?"), args.push(event.length - 1, event.slice(0, -1)));
        else (where.push('l.event = ?'), args.push(event));
      }
      const severity = req.query.severity;
      if (severity !== undefined && severity !== '') {
        if (typeof severity !== 'string' || !SEVERITIES.includes(severity as Severity)) {
          throw new AppError('ERR_DATA_INVALID', 'severity: info, warning or critical', { status: 400, details: { field: 'severity' } });
        }
        where.push('l.severity = ?'), args.push(severity);
      }
      const subject = intQuery(req, 'subject_id');
      if (subject !== undefined) (where.push('l.subject_id = ?'), args.push(subject));
      const actor = intQuery(req, 'actor_id');
      if (actor !== undefined) (where.push('l.actor_id = ?'), args.push(actor));
      const before = intQuery(req, 'before');
      if (before !== undefined) (where.push('l.id < ?'), args.push(before));
      const limit = Math.max(intQuery(req, 'limit', 500) ?? 50, 1);
      const rows = ctx.db
        .prepare(
          `SELECT l.*, a.username AS actor_username, a.display_name AS actor_display_name,
                  s.username AS subject_username, s.display_name AS subject_display_name
           FROM action_log l LEFT JOIN users a ON a.id = l.actor_id LEFT JOIN users s ON s.id = l.subject_id
           ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY l.id DESC LIMIT ?`,
        )
        .all(...args, limit + 1) as LogRow[];
      const more = rows.length > limit;
      const who = (id: number | null, username: string | null, display: string | null) =>
        id === null ? null : { id, username, display_name: display };
      const page = rows.slice(0, limit).map(({ actor_username, actor_display_name, subject_username, subject_display_name, ...x }) => ({
        ...x,
        // The accounts by name (null when the account is gone; the id stays in actor_id / subject_id).
        actor: who(x.actor_id, actor_username, actor_display_name),
        subject: who(x.subject_id, subject_username, subject_display_name),
        data: JSON.parse(x.data) as Record<string, unknown>,
      }));
      // Keyset paging: `next_before` is the cursor for the next (older) page, null on the last page.
      res.json({ events: page, next_before: more ? page[page.length - 1].id : null, limit } satisfies LogPage);
    }),
  );

  return r;
}
