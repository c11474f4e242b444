import { Router, type Request } from 'express';
import { AppError } from '../../core/index.js';
import type { Severity } from '../../domain/action-log.js';
import type { Sql } from '../../domain/db/index.js';
import {
  COLUMN_RE,
  FILTER_LIMITS,
  TABLE_RE,
  assign,
  auditPage,
  checkFilterSize,
  createRole,
  deletePolicy,
  deleteRole,
  effectivePolicyOf,
  getRole,
  listAssignments,
  listPolicies,
  listRoles,
  putPolicy,
  isSystemCatalogue,
  systemTableError,
  rowFilterProblems,
  unassign,
  updateRole,
  type RowFilter,
} from '../../domain/data-access/index.js';
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
import { asyncHandler, type WebContext } from '../context.js';
import { noContent, superuserRouter } from '../route-kit.js';
import { intQueryParam } from '../query-params.js';
import { z } from 'zod';
import { atLeastOneField, uniqueList, validateBody } from '../validate.js';

const ROLE_NAME = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, 'letters, digits, _ . and - only, starting with a letter');
/** Longest role description; the admin page clamps long ones to three lines with the full text as a tooltip. */
export const DESCRIPTION_MAX = 500;
const DESCRIPTION = z.string().max(DESCRIPTION_MAX);

export const ROLE_CREATE_SCHEMA = z.strictObject({ name: ROLE_NAME, description: DESCRIPTION.optional() });

export const ROLE_PATCH_SCHEMA = atLeastOneField(
  z.strictObject({ name: ROLE_NAME.optional(), description: DESCRIPTION.optional() }),
);

/** The body of a policy PUT; the row filter is checked by rowFilterProblems (its messages name the condition). */
export const POLICY_PUT_SCHEMA = z.strictObject({
  allowed_columns: uniqueList(
    z
      .array(
        z
          .string()
          .regex(
            new RegExp(`(^\\*$)|(${COLUMN_RE.source})`),
            'each column must be a column name (letters, digits and _) or "*"',
          ),
      )
      .min(1)
      .max(FILTER_LIMITS.maxColumns),
    'Allowed columns',
  ),
  row_filter: z
    .custom<RowFilter>()
    .superRefine((v, ctx) => {
      for (const p of rowFilterProblems(v))
        ctx.addIssue({ code: 'custom', message: p.message, path: p.field.split('.').slice(1) });
    })
    .optional(),
});

export const ASSIGN_SCHEMA = z.strictObject({ user_id: z.int().min(1), role_id: z.int().min(1) });

/** Parse with zod, answering 400 ERR_DATA_INVALID (details as ERR_VALIDATION: field, problems). */
export function validateData<S extends z.ZodType>(schema: S, data: unknown): z.output<S> {
  return validateBody(schema, data, 'ERR_DATA_INVALID');
}

/** Parse a positive integer path id; 400 otherwise. */
export function parseId(raw: unknown, what: string): number {
  const s = String(raw ?? '');
  if (!/^[1-9][0-9]{0,15}$/.test(s))
    throw new AppError('ERR_DATA_INVALID', `${what}: not an id`, { details: { field: what } });
  return Number(s);
}

/** A table name in a path: an identifier (optionally schema-qualified) or "*". */
export function parseTableName(raw: unknown): string {
  const s = String(raw ?? '');
  if (s !== '*' && !TABLE_RE.test(s)) {
    throw new AppError('ERR_DATA_INVALID', 'table_name: must be an identifier or "*"', {
      details: { field: 'table_name' },
    });
  }
  return s;
}

function intQuery(req: Request, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  return intQueryParam(req, name, { max, code: 'ERR_DATA_INVALID' });
}

const SEVERITIES: Severity[] = ['info', 'warning', 'critical'];
const EVENT_RE = /^[a-z0-9_.-]{1,100}(\.\*)?$/;

/** What the data-authorization route groups share. */
interface DataAccessKit {
  r: Router;
  db: Sql;
  /** The signed-in admin's user id. */
  actor: (req: Request) => number;
}

/** DELETE `path`, whose `param` is a positive id: `remove` it as the signed-in admin, then 204. */
function deleteById(
  { r, db, actor }: DataAccessKit,
  path: string,
  param: string,
  remove: (db: Sql, actor: number, id: number) => Promise<unknown>,
): void {
  r.delete(
    path,
    noContent((req) => remove(db, actor(req), parseId(req.params[param], param))),
  );
}

/**
 * /api/data-authorization/* — session + CSRF (app-wide), superuser only.
 * Also serves the action log to the admin pages: GET /audit.
 */
export function dataAuthorizationRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  const actor = (req: Request) => req.user!.id;
  const kit: DataAccessKit = { r, db, actor };
  roleRoutes(kit);
  assignmentRoutes(kit);

  return r;
}

/** Roles and their table policies. */
function roleRoutes(kit: DataAccessKit): void {
  const { r, db, actor } = kit;
  r.get(
    '/roles',
    asyncHandler(async (_req, res) => {
      res.json({ roles: await listRoles(db) } satisfies DataRoleList);
    }),
  );

  r.post(
    '/roles',
    asyncHandler(async (req, res) => {
      const b = validateData(ROLE_CREATE_SCHEMA, req.body);
      res.status(201).json((await createRole(db, actor(req), b.name, b.description ?? '')) satisfies DataRoleView);
    }),
  );

  r.patch(
    '/roles/:role_id',
    asyncHandler(async (req, res) => {
      const id = parseId(req.params.role_id, 'role_id');
      const b = validateData(ROLE_PATCH_SCHEMA, req.body);
      res.json((await updateRole(db, actor(req), id, b)) satisfies DataRoleView);
    }),
  );

  deleteById(kit, '/roles/:role_id', 'role_id', deleteRole);

  r.get(
    '/roles/:role_id/policies',
    asyncHandler(async (req, res) => {
      const id = parseId(req.params.role_id, 'role_id');
      const role = await getRole(db, id);
      res.json({ role, policies: await listPolicies(db, id) } satisfies DataPolicyList);
    }),
  );

  r.put(
    '/roles/:role_id/policies/:table_name',
    asyncHandler(async (req, res) => {
      const id = parseId(req.params.role_id, 'role_id');
      const table = parseTableName(req.params.table_name);
      if (isSystemCatalogue(table)) throw systemTableError(table);
      const b = validateData(POLICY_PUT_SCHEMA, req.body);
      if (b.allowed_columns.includes('*') && b.allowed_columns.length > 1) {
        throw new AppError('ERR_DATA_INVALID', 'allowed_columns: "*" stands alone', {
          details: { field: 'allowed_columns' },
        });
      }
      const filter = b.row_filter ?? {};
      checkFilterSize(filter);
      const { policy, created } = await putPolicy(db, actor(req), id, table, b.allowed_columns, filter);
      res.status(created ? 201 : 200).json(policy satisfies DataPolicyView);
    }),
  );

  r.delete(
    '/roles/:role_id/policies/:table_name',
    noContent((req) =>
      deletePolicy(db, actor(req), parseId(req.params.role_id, 'role_id'), parseTableName(req.params.table_name)),
    ),
  );
}

/** Who holds which role, a user's effective policy, and the action log. */
function assignmentRoutes(kit: DataAccessKit): void {
  const { r, db, actor } = kit;
  r.get(
    '/assignments',
    asyncHandler(async (req, res) => {
      const limit = intQuery(req, 'limit', 500) ?? 100;
      const offset = intQuery(req, 'offset') ?? 0;
      const { items, total } = await listAssignments(db, {
        userId: intQuery(req, 'user_id'),
        roleId: intQuery(req, 'role_id'),
        limit,
        offset,
      });
      res.json({ assignments: items, total, limit, offset } satisfies AssignmentList);
    }),
  );

  r.post(
    '/assignments',
    asyncHandler(async (req, res) => {
      const b = validateData(ASSIGN_SCHEMA, req.body);
      res.status(201).json((await assign(db, actor(req), b.user_id, b.role_id)) satisfies AssignmentView);
    }),
  );

  deleteById(kit, '/assignments/:assignment_id', 'assignment_id', unassign);

  r.get(
    '/users/:user_id/effective-policy',
    asyncHandler(async (req, res) => {
      res.json((await effectivePolicyOf(db, parseId(req.params.user_id, 'user_id'))) satisfies EffectivePolicyView);
    }),
  );

  // The action log, newest first. Filters: event (exact, or a prefix as `bi.*`), severity,
  // subject_id, actor_id; paging with `before` (an id) and `limit` (≤ 500).
  r.get(
    '/audit',
    asyncHandler(async (req, res) => {
      const event = req.query.event;
      if (event !== undefined && event !== '' && (typeof event !== 'string' || !EVENT_RE.test(event))) {
        throw new AppError('ERR_DATA_INVALID', 'event: an event name, or a prefix ending in .*', {
          details: { field: 'event' },
        });
      }
      const raw = req.query.severity;
      const severity = SEVERITIES.find((x) => x === raw);
      if (raw !== undefined && raw !== '' && !severity) {
        throw new AppError('ERR_DATA_INVALID', 'severity: info, warning or critical', {
          details: { field: 'severity' },
        });
      }
      const subjectId = intQuery(req, 'subject_id');
      const actorId = intQuery(req, 'actor_id');
      const before = intQuery(req, 'before');
      const limit = Math.max(intQuery(req, 'limit', 500) ?? 50, 1);
      const page = await auditPage(db, {
        event: typeof event === 'string' && event !== '' ? event : undefined,
        severity,
        subjectId,
        actorId,
        before,
        limit,
      });
      // Keyset paging: `next_before` is the cursor for the next (older) page, null on the last page.
      res.json({ ...page, limit } satisfies LogPage);
    }),
  );
}
