// Teams of an organisation: list, create, change, link to a directory group, members (docs/identity.md).
import { type RequestHandler } from 'express';
import { AppError } from '../../core/index.js';
import type { Sql } from '../../domain/db/index.js';
import { inTransaction } from '../../domain/data-access/store.js';
import { rewriteAgentPolicies } from '../../domain/identity/agent-policy.js';
import * as orgs from '../../domain/identity/orgs.js';
import { teamView } from '../../domain/identity/views.js';
import { followGroup } from '../../domain/identity/teams.js';
import type { TeamList, TeamView } from '../admin-api.js';
import { requireUser } from '../context.js';
import { intParam } from './params.js';
import { TEAM_CREATE, TEAM_PATCH } from './admin-schemas.js';
import { checkGroup, logAsPart, managedRoutes, managedRow, type ManagedResource, type OrgKit } from './org-kit.js';

/** An organisation's teams and their members. */
export function teamRoutes(kit: OrgKit): void {
  const { r, db, notify } = kit;
  // ---- teams (organisation managers) ----
  managedRoutes(kit, {
    path: 'teams',
    listKey: 'teams' satisfies keyof TeamList,
    get: orgs.getTeam,
    list: orgs.listTeams,
    view: teamView,
    createBody: TEAM_CREATE,
    patchBody: TEAM_PATCH,
    check: (_orgId, body) => checkGroup(db, body.external_group_id),
    create: async (trx, req, orgId, body) => {
      const t = await orgs.createTeam(trx, orgId, body.name, body.external_group_id ?? null);
      await logAsPart(trx, req, 'team.created', {
        organisation_id: orgId,
        team_id: t.id,
        name: body.name,
        external_group_id: body.external_group_id ?? null,
      });
      return { id: t.id, changed: body.external_group_id ? await linkTeam(trx, t.id, body.external_group_id) : [] };
    },
    update: async (trx, req, team, body) => {
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
    },
    remove: async (trx, req, team) => {
      const members = await orgs.deleteTeam(trx, team.id);
      await logAsPart(
        trx,
        req,
        'team.deleted',
        { organisation_id: team.organisation_id, team_id: team.id, name: team.name, members: members.length },
        null,
        'warning',
      );
      return rewriteAgentPolicies(trx, members);
    },
    settle: (_orgId, changed) => notify(changed),
  } satisfies ManagedResource<orgs.TeamRow, TeamView, typeof TEAM_CREATE, typeof TEAM_PATCH>);
  const editMembers = (add: boolean) => teamMemberEditor(kit, add);
  r.put('/teams/:id/members/:userId', requireUser, editMembers(true));
  r.delete('/teams/:id/members/:userId', requireUser, editMembers(false));
}

/** PUT / DELETE /teams/:id/members/:userId: a manual team's members (a linked team follows its group). */
function teamMemberEditor(
  { db, notify, route }: Pick<OrgKit, 'db' | 'notify' | 'route'>,
  add: boolean,
): RequestHandler {
  return route(async (req, res) => {
    const team = await managedRow(db, req, orgs.getTeam);
    // A linked team follows its group: manual edits would be undone by the next sync.
    if (team.external_group_id)
      throw new AppError('ERR_TEAM_LINKED', 'this team follows an external group; change the group in the directory');
    const userId = intParam(req, 'userId');
    if (!(await orgs.userExists(db, userId))) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
    const changed = await inTransaction(db, async (trx) => {
      if (await orgs.editTeamMember(trx, team.id, userId, add)) {
        await logAsPart(
          trx,
          req,
          add ? 'team.member_added' : 'team.member_removed',
          { organisation_id: team.organisation_id, team_id: team.id, team: team.name },
          userId,
        );
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
