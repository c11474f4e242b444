// What the organisation route groups share (web/identity/org-routes.ts, team-routes.ts): who may
// manage, the kit of the route groups, the action-log entry of a change.
import { Router, type Request, type RequestHandler } from 'express';
import { AppError } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { type AgentCatalog } from '../../domain/identity/agent-policy.js';
import * as orgs from '../../domain/identity/orgs.js';
import { asyncHandler } from '../context.js';
import { logAction } from '../../domain/action-log.js';

/** Organisation managers manage their organisation's teams and policies; superusers manage all. */
export async function requireManager(db: Sql, req: Request, orgId: number): Promise<void> {
  await orgs.getOrganisation(db, orgId);
  if (req.user!.is_superuser) return;
  if ((await orgs.memberRole(db, orgId, req.user!.id)) !== 'manager') throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only');
}

/**
 * Managers are named by superusers only. So a manager (who is not a superuser) may add, remove
 * and keep plain members, but not make anyone a manager, nor demote or remove a manager
 * (themselves included): each of those is 403 ERR_AUTH_FORBIDDEN. `newRole` is undefined for a
 * removal.
 */
export async function requireMayManageMember(db: Sql, req: Request, orgId: number, userId: number, newRole?: orgs.OrgRole): Promise<void> {
  if (req.user!.is_superuser) return;
  const current = await orgs.memberRole(db, orgId, userId);
  if (newRole === 'manager' || current === 'manager') {
    throw new AppError('ERR_AUTH_FORBIDDEN', 'only a superuser may name, demote or remove an organisation manager');
  }
}

export async function checkGroup(db: Sql, groupId: number | null | undefined): Promise<void> {
  if (groupId && !(await orgs.groupExists(db, groupId))) throw new AppError('ERR_GROUP_NOT_FOUND', 'no such external group');
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
export async function logAsPart(trx: Sql, req: Request, event: string, data: Record<string, unknown>, subjectId?: number | null, severity?: 'info' | 'warning' | 'critical'): Promise<void> {
  await logAction(trx, { event: `identity.${event}`, actorId: req.user!.id, subjectId: subjectId ?? null, severity, data });
}
