// What the organisation route groups share (web/identity/org-routes.ts, team-routes.ts): who may
// manage, the kit of the route groups, the action-log entry of a change, and the routes of a
// resource they manage (teams, agent policies) declared once.
import { Router, type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import { AppError } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { inTransaction } from '../../domain/data-access/store.js';
import { type AgentCatalog } from '../../domain/identity/agent-policy.js';
import * as orgs from '../../domain/identity/orgs.js';
import { asyncHandler, requireUser } from '../context.js';
import { logAction } from '../../domain/action-log.js';
import { validateBody } from '../validate.js';
import { intParam } from './params.js';

/** Organisation managers manage their organisation's teams and policies; superusers manage all. */
export async function requireManager(db: Sql, req: Request, orgId: number): Promise<void> {
  await orgs.getOrganisation(db, orgId);
  if (req.user!.is_superuser) return;
  if ((await orgs.memberRole(db, orgId, req.user!.id)) !== 'manager')
    throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only');
}

/**
 * Managers are named by superusers only. So a manager (who is not a superuser) may add, remove
 * and keep plain members, but not make anyone a manager, nor demote or remove a manager
 * (themselves included): each of those is 403 ERR_AUTH_FORBIDDEN. `newRole` is undefined for a
 * removal.
 */
export async function requireMayManageMember(
  db: Sql,
  req: Request,
  orgId: number,
  userId: number,
  newRole?: orgs.OrgRole,
): Promise<void> {
  if (req.user!.is_superuser) return;
  const current = await orgs.memberRole(db, orgId, userId);
  if (newRole === 'manager' || current === 'manager') {
    throw new AppError('ERR_AUTH_FORBIDDEN', 'only a superuser may name, demote or remove an organisation manager');
  }
}

export async function checkGroup(db: Sql, groupId: number | null | undefined): Promise<void> {
  if (groupId && !(await orgs.groupExists(db, groupId)))
    throw new AppError('ERR_GROUP_NOT_FOUND', 'no such external group');
}

/** What the organisation route groups share. */
export interface OrgKit {
  r: Router;
  db: Sql;
  /** Tell the running sandboxes of these users that their agent policy changed. */
  notify: (changed: number[]) => void;
  rewriteOrgPolicies: (orgId: number) => Promise<void>;
  catalog: () => Promise<AgentCatalog>;
  route: (fn: Parameters<typeof asyncHandler>[0]) => RequestHandler;
}

/** The action-log entry of a change, written in the change's own transaction. */
export async function logAsPart(
  trx: Sql,
  req: Request,
  event: string,
  data: Record<string, unknown>,
  subjectId?: number | null,
  severity?: 'info' | 'warning' | 'critical',
): Promise<void> {
  await logAction(trx, {
    event: `identity.${event}`,
    actorId: req.user!.id,
    subjectId: subjectId ?? null,
    severity,
    data,
  });
}

/** The organisation of `:id`, once the signed-in user is shown to manage it. */
export async function managedOrg(db: Sql, req: Request): Promise<number> {
  const orgId = intParam(req, 'id');
  await requireManager(db, req, orgId);
  return orgId;
}

/** The stored row of `:id` (a team, an agent policy), once the signed-in user is shown to manage its organisation. */
export async function managedRow<Row extends OrgOwned>(
  db: Sql,
  req: Request,
  get: (db: Sql, id: number) => Promise<Row>,
): Promise<Row> {
  const row = await get(db, intParam(req, 'id'));
  await requireManager(db, req, row.organisation_id);
  return row;
}

/** A row of an organisation's own. */
export interface OrgOwned {
  id: number;
  organisation_id: number;
}

/**
 * A resource an organisation's managers manage (teams, agent policies). Its store functions and
 * schemas; `check` runs beyond the schema before any change (`current` is the stored row on a
 * PATCH); `create`, `update` and `remove` make the change and write its action-log entry in one
 * transaction and answer the users whose agent policy changed; `settle` runs after the commit.
 */
export interface ManagedResource<Row extends OrgOwned, View, Create extends z.ZodType, Patch extends z.ZodType> {
  /** `teams`: GET and POST /organisations/:id/teams, PATCH and DELETE /teams/:id. */
  path: string;
  /** The list answer's key: `{ teams: [...] }`. */
  listKey: string;
  get: (db: Sql, id: number) => Promise<Row>;
  list: (db: Sql, orgId: number) => Promise<Row[]>;
  view: (db: Sql, row: Row) => Promise<View>;
  createBody: Create;
  patchBody: Patch;
  check: (orgId: number, body: z.output<Create> | z.output<Patch>, current?: Row) => Promise<void>;
  create: (trx: Sql, req: Request, orgId: number, body: z.output<Create>) => Promise<{ id: number; changed: number[] }>;
  update: (trx: Sql, req: Request, row: Row, body: z.output<Patch>) => Promise<number[]>;
  remove: (trx: Sql, req: Request, row: Row) => Promise<number[]>;
  settle: (orgId: number, changed: number[]) => unknown;
}

/**
 * The four routes of a managed resource, each checking in the same order: the organisation (or
 * the stored row), its manager, the body, `check`; then the transaction, `settle`, the answer
 * (201 with the view on a create, the view on a change, 204 on a delete).
 */
export function managedRoutes<Row extends OrgOwned, View, Create extends z.ZodType, Patch extends z.ZodType>(
  { r, db, route }: OrgKit,
  m: ManagedResource<Row, View, Create, Patch>,
): void {
  const ofOrg = `/organisations/:id/${m.path}`;
  const one = `/${m.path}/:id`;
  const answer = async (id: number) => m.view(db, await m.get(db, id));
  r.get(
    ofOrg,
    requireUser,
    route(async (req, res) => {
      const orgId = await managedOrg(db, req);
      res.json({ [m.listKey]: await Promise.all((await m.list(db, orgId)).map((row) => m.view(db, row))) });
    }),
  );
  r.post(
    ofOrg,
    requireUser,
    route(async (req, res) => {
      const orgId = await managedOrg(db, req);
      const body = validateBody(m.createBody, req.body);
      await m.check(orgId, body);
      const { id, changed } = await inTransaction(db, (trx) => m.create(trx, req, orgId, body));
      await m.settle(orgId, changed);
      res.status(201).json(await answer(id));
    }),
  );
  r.patch(
    one,
    requireUser,
    route(async (req, res) => {
      const row = await managedRow(db, req, m.get);
      const body = validateBody(m.patchBody, req.body);
      await m.check(row.organisation_id, body, row);
      await m.settle(row.organisation_id, await inTransaction(db, (trx) => m.update(trx, req, row, body)));
      res.json(await answer(row.id));
    }),
  );
  r.delete(
    one,
    requireUser,
    route(async (req, res) => {
      const row = await managedRow(db, req, m.get);
      await m.settle(row.organisation_id, await inTransaction(db, (trx) => m.remove(trx, req, row)));
      res.status(204).end();
    }),
  );
}
