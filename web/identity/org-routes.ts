import { Router, type Request, type RequestHandler } from 'express';
import { AppError } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { inTransaction } from '../../domain/data-access/store.js';
import { AGENT_TOOLS, rewriteAgentPolicies, unknownNames, type AgentCatalog } from '../../domain/identity/agent-policy.js';
import * as orgs from '../../domain/identity/orgs.js';
import { listChatModels } from '../../domain/chat/models.js';
import { followGroup } from '../../domain/identity/teams.js';
import type { AgentCatalogView, AgentPolicyList, AgentPolicyView, ExternalGroupList, Organisation, OrganisationList, TeamList, TeamView } from '../admin-api.js';
import { asyncHandler, requireSuperuser, requireUser, type WebContext } from '../context.js';
import { problemsError, validateBody } from '../validate.js';
import { intParam } from './params.js';
import { logAction } from '../../domain/action-log.js';
import { MEMBER_BODY, ORG_BODY, POLICY_CREATE, POLICY_PATCH, TEAM_CREATE, TEAM_PATCH } from './admin-schemas.js';

/** Organisation managers manage their organisation's teams and policies; superusers manage all. */
async function requireManager(db: Sql, req: Request, orgId: number): Promise<void> {
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
async function requireMayManageMember(db: Sql, req: Request, orgId: number, userId: number, newRole?: orgs.OrgRole): Promise<void> {
  if (req.user!.is_superuser) return;
  const current = await orgs.memberRole(db, orgId, userId);
  if (newRole === 'manager' || current === 'manager') {
    throw new AppError('ERR_AUTH_FORBIDDEN', 'only a superuser may name, demote or remove an organisation manager');
  }
}

async function teamView(db: Sql, t: orgs.TeamRow): Promise<TeamView> {
  const members = await orgs.teamMembers(db, t.id);
  return { ...t, member_ids: members.map((m) => m.id).sort((a, b) => a - b), members };
}

async function policyView(db: Sql, p: orgs.AgentPolicyRow): Promise<AgentPolicyView> {
  return {
    id: p.id,
    organisation_id: p.organisation_id,
    name: p.name,
    applies_to: p.applies_to,
    team_ids: await orgs.policyTeamIds(db, p.id),
    allowed_tools: p.allowed_tools === null ? null : JSON.parse(p.allowed_tools),
    allowed_models: p.allowed_models === null ? null : JSON.parse(p.allowed_models),
    denied_tools: JSON.parse(p.denied_tools),
    denied_models: JSON.parse(p.denied_models),
    mail_allow_domains: JSON.parse(p.mail_allow_domains),
    mail_block_domains: JSON.parse(p.mail_block_domains),
    mail_other: p.mail_other,
    mail_max_recipients: p.mail_max_recipients,
    mail_max_per_hour: p.mail_max_per_hour,
  };
}

async function checkGroup(db: Sql, groupId: number | null | undefined): Promise<void> {
  if (groupId && !(await orgs.groupExists(db, groupId))) throw new AppError('ERR_GROUP_NOT_FOUND', 'no such external group');
}

/** What the organisation route groups share. */
interface OrgKit {
  r: Router;
  db: Sql;
  /** Tell the running sandboxes of these users that their agent policy changed. */
  notify: (changed: number[]) => void;
  rewriteOrgPolicies: (orgId: number) => Promise<void>;
  catalog: () => Promise<AgentCatalog>;
  route: (fn: Parameters<typeof asyncHandler>[0]) => RequestHandler;
}

/** Organisations, their members, external groups (the team picker), teams and agent policies. */
export function organisationRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;
  const services = ctx.services;
  const notify = (changed: number[]) => {
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
  };
  /** All organisation members affected by a policy change: rewrite their stored sandbox policy. */
  const rewriteOrgPolicies = async (orgId: number) => notify(await rewriteAgentPolicies(db, await orgs.orgMemberIds(db, orgId)));
  /** Tools and models a policy may name: AGENT_TOOLS, the configured model and the chat models on offer (plus any the daemon offers). */
  const catalog = async (): Promise<AgentCatalog> => {
    const extra = ctx.services.agentModels?.() ?? [];
    const offered = (await listChatModels(db)).map((m) => m.model);
    return { tools: [...AGENT_TOOLS], models: [...new Set([ctx.config.model.model, ...offered, ...extra])].filter(Boolean) };
  };
  const route = (fn: Parameters<typeof asyncHandler>[0]): RequestHandler => asyncHandler(fn);
  const kit: OrgKit = { r, db, notify, rewriteOrgPolicies, catalog, route };
  organisationCrudRoutes(kit);
  memberRoutes(kit);
  teamRoutes(kit);
  agentPolicyRoutes(kit);

  return r;
}

/** Organisations themselves: list, create, rename, delete. */
function organisationCrudRoutes({ r, db, notify, route }: OrgKit): void {
  // ---- organisations (superuser creates them and names managers) ----
  r.get(
    '/organisations',
    requireUser,
    route(async (req, res) => {
      const rows = await orgs.listOrganisations(db, req.user!.is_superuser ? undefined : req.user!.id);
      res.json({ organisations: rows } satisfies OrganisationList);
    }),
  );
  r.post(
    '/organisations',
    requireSuperuser,
    route(async (req, res) => {
      const name = validateBody(ORG_BODY, req.body).name.trim();
      const org = await inTransaction(db, async (trx) => {
        const o = await orgs.createOrganisation(trx, name);
        await logAsPart(trx, req, 'organisation.created', { organisation_id: o.id, name });
        return o;
      });
      res.status(201).json(org satisfies Organisation);
    }),
  );
  // Rename (superuser): the name is all an organisation has of its own.
  r.patch(
    '/organisations/:id',
    requireSuperuser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      const name = validateBody(ORG_BODY, req.body).name.trim();
      const org = await orgs.getOrganisation(db, orgId);
      await orgs.renameOrganisation(db, orgId, name);
      if (org.name !== name) await logAsPart(db, req, 'organisation.renamed', { organisation_id: orgId, from: org.name, name });
      res.json((await orgs.getOrganisation(db, orgId)) satisfies Organisation);
    }),
  );
  /**
   * Delete (superuser): its members, teams and agent policies go with it (foreign keys cascade);
   * the users it covered get their stored agent policy recomputed at once.
   */
  r.delete(
    '/organisations/:id',
    requireSuperuser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      const org = await orgs.getOrganisation(db, orgId);
      const changed = await inTransaction(db, async (trx) => {
        const ids = await orgs.orgMemberIds(trx, orgId);
        const counts = { ...(await orgs.countOrganisationParts(trx, orgId)), users_affected: ids.length };
        await orgs.deleteOrganisation(trx, orgId);
        await logAsPart(trx, req, 'organisation.deleted', { organisation_id: orgId, name: org.name, ...counts }, null, 'warning');
        return rewriteAgentPolicies(trx, ids);
      });
      notify(changed);
      res.status(204).end();
    }),
  );
}

/** An organisation's members, and the external groups the team picker lists. */
function memberRoutes({ r, db, notify, route }: OrgKit): void {
  r.get(
    '/organisations/:id/members',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      await requireManager(db, req, orgId);
      res.json({ members: await orgs.listMembers(db, orgId) });
    }),
  );
  r.put(
    '/organisations/:id/members/:userId',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      const userId = intParam(req, 'userId');
      const body = validateBody(MEMBER_BODY, req.body ?? {});
      await requireManager(db, req, orgId);
      if (!(await orgs.userExists(db, userId))) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
      // `role` defaults to member, so without this a manager's PUT {} would demote another manager.
      await requireMayManageMember(db, req, orgId, userId, body.role);
      const changed = await inTransaction(db, async (trx) => {
        await orgs.setMember(trx, orgId, userId, body.role);
        await logAsPart(trx, req, 'organisation.member_set', { organisation_id: orgId, role: body.role }, userId);
        return rewriteAgentPolicies(trx, [userId]);
      });
      notify(changed);
      res.json({ organisation_id: orgId, user_id: userId, role: body.role });
    }),
  );
  r.delete(
    '/organisations/:id/members/:userId',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      const userId = intParam(req, 'userId');
      await requireManager(db, req, orgId);
      await requireMayManageMember(db, req, orgId, userId);
      const changed = await inTransaction(db, async (trx) => {
        if (await orgs.removeMember(trx, orgId, userId)) await logAsPart(trx, req, 'organisation.member_removed', { organisation_id: orgId }, userId);
        return rewriteAgentPolicies(trx, [userId]);
      });
      notify(changed);
      res.status(204).end();
    }),
  );

  // ---- external groups: the team picker lists every synced group ----
  r.get(
    '/external-groups',
    requireUser,
    route(async (req, res) => {
      if (!req.user!.is_superuser && !(await orgs.managesAny(db, req.user!.id))) throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only');
      const groups = await orgs.searchGroups(db, typeof req.query.q === 'string' ? req.query.q : undefined);
      res.json({ groups } satisfies ExternalGroupList);
    }),
  );
}

/** An organisation's teams and their members. */
function teamRoutes({ r, db, notify, route }: OrgKit): void {
  // ---- teams (organisation managers) ----
  r.get(
    '/organisations/:id/teams',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      await requireManager(db, req, orgId);
      const teams = await Promise.all((await orgs.listTeams(db, orgId)).map((t) => teamView(db, t)));
      res.json({ teams } satisfies TeamList);
    }),
  );
  r.post(
    '/organisations/:id/teams',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      await requireManager(db, req, orgId);
      const body = validateBody(TEAM_CREATE, req.body);
      await checkGroup(db, body.external_group_id);
      const { team, changed } = await inTransaction(db, async (trx) => {
        const t = await orgs.createTeam(trx, orgId, body.name, body.external_group_id ?? null);
        await logAsPart(trx, req, 'team.created', { organisation_id: orgId, team_id: t.id, name: body.name, external_group_id: body.external_group_id ?? null });
        return { team: t, changed: body.external_group_id ? await linkTeam(trx, t.id, body.external_group_id) : [] };
      });
      notify(changed);
      res.status(201).json(await teamView(db, team));
    }),
  );
  r.patch(
    '/teams/:id',
    requireUser,
    route(async (req, res) => {
      const team = await orgs.getTeam(db, intParam(req, 'id'));
      await requireManager(db, req, team.organisation_id);
      const body = validateBody(TEAM_PATCH, req.body);
      await checkGroup(db, body.external_group_id);
      const changed = await inTransaction(db, async (trx) => {
        await orgs.updateTeam(trx, team.id, { name: body.name, groupId: body.external_group_id });
        await logAsPart(trx, req, 'team.updated', {
          organisation_id: team.organisation_id,
          team_id: team.id,
          name: body.name ?? team.name,
          ...(body.name !== undefined && body.name !== team.name ? { from: team.name } : {}),
          ...(body.external_group_id !== undefined ? { external_group_id: body.external_group_id } : {}),
        });
        // Linked (or re-linked): the team takes the group's members now, not at the next sync.
        // Unlinked (null): it keeps its members and becomes a manual team.
        return body.external_group_id ? linkTeam(trx, team.id, body.external_group_id) : [];
      });
      notify(changed);
      res.json(await teamView(db, await orgs.getTeam(db, team.id)));
    }),
  );
  r.delete(
    '/teams/:id',
    requireUser,
    route(async (req, res) => {
      const team = await orgs.getTeam(db, intParam(req, 'id'));
      await requireManager(db, req, team.organisation_id);
      const changed = await inTransaction(db, async (trx) => {
        const members = await orgs.deleteTeam(trx, team.id);
        await logAsPart(trx, req, 'team.deleted', { organisation_id: team.organisation_id, team_id: team.id, name: team.name, members: members.length }, null, 'warning');
        return rewriteAgentPolicies(trx, members);
      });
      notify(changed);
      res.status(204).end();
    }),
  );
  const editMembers = (add: boolean) => teamMemberEditor({ db, notify, route }, add);
  r.put('/teams/:id/members/:userId', requireUser, editMembers(true));
  r.delete('/teams/:id/members/:userId', requireUser, editMembers(false));
}

/** An organisation's agent policies and the catalogue they name tools and models from. */
function agentPolicyRoutes({ r, db, route, catalog, rewriteOrgPolicies }: OrgKit): void {
  // ---- agent policies (organisation managers) ----
  r.get(
    '/organisations/:id/agent-policies',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      await requireManager(db, req, orgId);
      const policies = await Promise.all((await orgs.listAgentPolicies(db, orgId)).map((p) => policyView(db, p)));
      res.json({ policies } satisfies AgentPolicyList);
    }),
  );
  r.get(
    '/agent-catalog',
    requireUser,
    route(async (_req, res) => {
      res.json((await catalog()) satisfies AgentCatalogView);
    }),
  );
  const checkPolicy = (orgId: number, body: orgs.AgentPolicyInput, current?: orgs.AgentPolicyRow) => checkAgentPolicy(db, catalog, orgId, body, current);
  r.post(
    '/organisations/:id/agent-policies',
    requireUser,
    route(async (req, res) => {
      const orgId = intParam(req, 'id');
      await requireManager(db, req, orgId);
      const body = validateBody(POLICY_CREATE, req.body);
      await checkPolicy(orgId, body);
      const id = await inTransaction(db, async (trx) => {
        const pid = await orgs.saveAgentPolicy(trx, orgId, body);
        await logAsPart(trx, req, 'agent_policy.created', { organisation_id: orgId, policy_id: pid, name: body.name, applies_to: body.applies_to });
        return pid;
      });
      await rewriteOrgPolicies(orgId);
      res.status(201).json(await policyView(db, await orgs.getAgentPolicy(db, id)));
    }),
  );
  r.patch(
    '/agent-policies/:id',
    requireUser,
    route(async (req, res) => {
      const p = await orgs.getAgentPolicy(db, intParam(req, 'id'));
      await requireManager(db, req, p.organisation_id);
      const body = validateBody(POLICY_PATCH, req.body);
      await checkPolicy(p.organisation_id, body, p);
      await inTransaction(db, async (trx) => {
        await orgs.saveAgentPolicy(trx, p.organisation_id, body, p.id);
        await logAsPart(trx, req, 'agent_policy.updated', { organisation_id: p.organisation_id, policy_id: p.id, name: body.name ?? p.name, fields: Object.keys(body).sort() });
      });
      await rewriteOrgPolicies(p.organisation_id);
      res.json(await policyView(db, await orgs.getAgentPolicy(db, p.id)));
    }),
  );
  r.delete(
    '/agent-policies/:id',
    requireUser,
    route(async (req, res) => {
      const p = await orgs.getAgentPolicy(db, intParam(req, 'id'));
      await requireManager(db, req, p.organisation_id);
      await inTransaction(db, async (trx) => {
        await orgs.deleteAgentPolicy(trx, p.id);
        await logAsPart(trx, req, 'agent_policy.deleted', { organisation_id: p.organisation_id, policy_id: p.id, name: p.name }, null, 'warning');
      });
      await rewriteOrgPolicies(p.organisation_id);
      res.status(204).end();
    }),
  );
}

/** PUT / DELETE /teams/:id/members/:userId: a manual team's members (a linked team follows its group). */
function teamMemberEditor({ db, notify, route }: Pick<OrgKit, 'db' | 'notify' | 'route'>, add: boolean): RequestHandler {
  return route(async (req, res) => {
    const team = await orgs.getTeam(db, intParam(req, 'id'));
    await requireManager(db, req, team.organisation_id);
    // A linked team follows its group: manual edits would be undone by the next sync.
    if (team.external_group_id) throw new AppError('ERR_TEAM_LINKED', 'this team follows an external group; change the group in the directory');
    const userId = intParam(req, 'userId');
    if (!(await orgs.userExists(db, userId))) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
    const changed = await inTransaction(db, async (trx) => {
      if (await orgs.editTeamMember(trx, team.id, userId, add)) {
        await logAsPart(trx, req, add ? 'team.member_added' : 'team.member_removed', { organisation_id: team.organisation_id, team_id: team.id, team: team.name }, userId);
      }
      return rewriteAgentPolicies(trx, [userId]);
    });
    notify(changed);
    res.json(await teamView(db, await orgs.getTeam(db, team.id)));
  });
}

/**
 * A team linked to a group has the group's active members (as of the last sync) at once:
 * otherwise a re-linked team would keep the previous group's members, and with them the
 * team's agent policies, until the next sync.
 */
async function linkTeam(trx: Sql, teamId: number, groupId: number): Promise<number[]> {
  const { added, removed } = await followGroup(trx, teamId, groupId);
  return rewriteAgentPolicies(trx, [...added, ...removed]);
}

/**
 * Beyond the schema: names must exist (tools and models of this server), and a policy for
 * "the chosen teams" needs at least one team (it would apply to nobody). `current` is the
 * stored policy on a PATCH, so the check is on the policy as it will be.
 */
async function checkAgentPolicy(db: Sql, catalog: OrgKit['catalog'], orgId: number, body: orgs.AgentPolicyInput, current?: orgs.AgentPolicyRow): Promise<void> {
  const problems = unknownNames(body as Record<string, unknown>, await catalog());
  const appliesTo = body.applies_to ?? current?.applies_to;
  const teamIds = body.team_ids ?? (current ? await orgs.policyTeamIds(db, current.id) : []);
  if (appliesTo === 'teams' && teamIds.length === 0) {
    problems.push({ field: 'team_ids', message: 'Teams: choose at least one team, or apply the policy to every member of the organisation.' });
  }
  if (problems.length) {
    const err = problemsError(problems);
    throw new AppError('ERR_POLICY_INVALID', err.message, { details: err.details });
  }
  for (const t of body.team_ids ?? []) {
    if ((await orgs.getTeam(db, t)).organisation_id !== orgId) throw new AppError('ERR_VALIDATION', 'Teams: every team must belong to this organisation.', { details: { field: 'team_ids' } });
  }
}

/** The action-log entry of a change, written in the change's own transaction. */
async function logAsPart(trx: Sql, req: Request, event: string, data: Record<string, unknown>, subjectId?: number | null, severity?: 'info' | 'warning' | 'critical'): Promise<void> {
  await logAction(trx, { event: `identity.${event}`, actorId: req.user!.id, subjectId: subjectId ?? null, severity, data });
}
