import { Router, type RequestHandler } from 'express';
import { AppError } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { inTransaction } from '../../domain/data-access/store.js';
import { connectorPolicyNames } from '../../domain/connectors/index.js';
import {
  AGENT_TOOLS,
  rewriteAgentPolicies,
  unknownNames,
  type AgentCatalog,
} from '../../domain/identity/agent-policy.js';
import * as orgs from '../../domain/identity/orgs.js';
import { policyView } from '../../domain/identity/views.js';
import { listChatModels } from '../../domain/chat/models.js';
import type {
  AgentCatalogView,
  AgentPolicyList,
  AgentPolicyView,
  ExternalGroupList,
  Organisation,
  OrganisationList,
} from '../admin-api.js';
import { asyncHandler, requireSuperuser, requireUser, type WebContext } from '../context.js';
import { problemsError, validateBody } from '../validate.js';
import { intParam } from './params.js';
import { MEMBER_BODY, ORG_BODY, POLICY_CREATE, POLICY_PATCH } from './admin-schemas.js';
import {
  logAsPart,
  managedOrg,
  managedRoutes,
  requireManager,
  requireMayManageMember,
  type ManagedResource,
  type OrgKit,
} from './org-kit.js';
import { teamRoutes } from './team-routes.js';

/** Organisations, their members, external groups (the team picker), teams and agent policies. */
export function organisationRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;
  const services = ctx.services;
  const notify = (changed: number[]) => {
    if (changed.length) services.sandboxes.policyChanged?.(changed);
  };
  /** All organisation members affected by a policy change: rewrite their stored sandbox policy. */
  const rewriteOrgPolicies = async (orgId: number) =>
    notify(await rewriteAgentPolicies(db, await orgs.orgMemberIds(db, orgId)));
  /** Tools and models a policy may name: AGENT_TOOLS, the configured model and the chat models on offer (plus any the daemon offers). */
  const catalog = async (): Promise<AgentCatalog> => {
    const extra = ctx.services.agentModels();
    const offered = (await listChatModels(db)).map((m) => m.model);
    return {
      tools: [...AGENT_TOOLS, ...(await connectorPolicyNames(db))],
      models: [...new Set([ctx.config.model.model, ...offered, ...extra])].filter(Boolean),
    };
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
      if (org.name !== name)
        await logAsPart(db, req, 'organisation.renamed', { organisation_id: orgId, from: org.name, name });
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
        await logAsPart(
          trx,
          req,
          'organisation.deleted',
          { organisation_id: orgId, name: org.name, ...counts },
          null,
          'warning',
        );
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
      res.json({ members: await orgs.listMembers(db, await managedOrg(db, req)) });
    }),
  );
  const editMembers = (set: boolean) => memberEditor({ db, notify, route }, set);
  r.put('/organisations/:id/members/:userId', requireUser, editMembers(true));
  r.delete('/organisations/:id/members/:userId', requireUser, editMembers(false));

  // ---- external groups: the team picker lists every synced group ----
  r.get(
    '/external-groups',
    requireUser,
    route(async (req, res) => {
      if (!req.user!.is_superuser && !(await orgs.managesAny(db, req.user!.id)))
        throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only');
      const groups = await orgs.searchGroups(db, typeof req.query.q === 'string' ? req.query.q : undefined);
      res.json({ groups } satisfies ExternalGroupList);
    }),
  );
}

/**
 * PUT / DELETE /organisations/:id/members/:userId: name a member with a role (the body's, member
 * by default) and answer the membership, or remove one and answer 204.
 */
function memberEditor({ db, notify, route }: Pick<OrgKit, 'db' | 'notify' | 'route'>, set: boolean): RequestHandler {
  return route(async (req, res) => {
    const orgId = intParam(req, 'id');
    const userId = intParam(req, 'userId');
    const role = set ? validateBody(MEMBER_BODY, req.body ?? {}).role : undefined;
    await requireManager(db, req, orgId);
    if (role && !(await orgs.userExists(db, userId))) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
    // `role` defaults to member, so without this a manager's PUT {} would demote another manager.
    await requireMayManageMember(db, req, orgId, userId, role);
    const changed = await inTransaction(db, async (trx) => {
      if (role) {
        await orgs.setMember(trx, orgId, userId, role);
        await logAsPart(trx, req, 'organisation.member_set', { organisation_id: orgId, role }, userId);
      } else if (await orgs.removeMember(trx, orgId, userId))
        await logAsPart(trx, req, 'organisation.member_removed', { organisation_id: orgId }, userId);
      return rewriteAgentPolicies(trx, [userId]);
    });
    notify(changed);
    if (role) res.json({ organisation_id: orgId, user_id: userId, role });
    else res.status(204).end();
  });
}

/** An organisation's agent policies and the catalogue they name tools and models from. */
function agentPolicyRoutes(kit: OrgKit): void {
  const { r, db, route, catalog, rewriteOrgPolicies } = kit;
  // ---- agent policies (organisation managers) ----
  r.get(
    '/agent-catalog',
    requireUser,
    route(async (_req, res) => {
      res.json((await catalog()) satisfies AgentCatalogView);
    }),
  );
  managedRoutes(kit, {
    path: 'agent-policies',
    listKey: 'policies' satisfies keyof AgentPolicyList,
    get: orgs.getAgentPolicy,
    list: orgs.listAgentPolicies,
    view: policyView,
    createBody: POLICY_CREATE,
    patchBody: POLICY_PATCH,
    check: (orgId, body, current) => checkAgentPolicy(db, catalog, orgId, body, current),
    create: async (trx, req, orgId, body) => {
      const pid = await orgs.saveAgentPolicy(trx, orgId, body);
      await logAsPart(trx, req, 'agent_policy.created', {
        organisation_id: orgId,
        policy_id: pid,
        name: body.name,
        applies_to: body.applies_to,
      });
      return { id: pid, changed: [] };
    },
    update: async (trx, req, p, body) => {
      await orgs.saveAgentPolicy(trx, p.organisation_id, body, p.id);
      await logAsPart(trx, req, 'agent_policy.updated', {
        organisation_id: p.organisation_id,
        policy_id: p.id,
        name: body.name ?? p.name,
        fields: Object.keys(body).sort(),
      });
      return [];
    },
    remove: async (trx, req, p) => {
      await orgs.deleteAgentPolicy(trx, p.id);
      await logAsPart(
        trx,
        req,
        'agent_policy.deleted',
        { organisation_id: p.organisation_id, policy_id: p.id, name: p.name },
        null,
        'warning',
      );
      return [];
    },
    // A policy's change reaches every member of its organisation: their stored policies are rewritten.
    settle: (orgId) => rewriteOrgPolicies(orgId),
  } satisfies ManagedResource<orgs.AgentPolicyRow, AgentPolicyView, typeof POLICY_CREATE, typeof POLICY_PATCH>);
}

/**
 * Beyond the schema: names must exist (tools and models of this server), and a policy for
 * "the chosen teams" needs at least one team (it would apply to nobody). `current` is the
 * stored policy on a PATCH, so the check is on the policy as it will be.
 */
async function checkAgentPolicy(
  db: Sql,
  catalog: OrgKit['catalog'],
  orgId: number,
  body: orgs.AgentPolicyInput,
  current?: orgs.AgentPolicyRow,
): Promise<void> {
  const problems = unknownNames(body as Record<string, unknown>, await catalog());
  const appliesTo = body.applies_to ?? current?.applies_to;
  const teamIds = body.team_ids ?? (current ? await orgs.policyTeamIds(db, current.id) : []);
  if (appliesTo === 'teams' && teamIds.length === 0) {
    problems.push({
      field: 'team_ids',
      message: 'Teams: choose at least one team, or apply the policy to every member of the organisation.',
    });
  }
  if (problems.length) {
    const err = problemsError(problems);
    throw new AppError('ERR_POLICY_INVALID', err.message, { details: err.details });
  }
  for (const t of body.team_ids ?? []) {
    if ((await orgs.getTeam(db, t)).organisation_id !== orgId)
      throw new AppError('ERR_VALIDATION', 'Teams: every team must belong to this organisation.', {
        details: { field: 'team_ids' },
      });
  }
}
