import { sql } from 'kysely';
import { AppError, type ErrorCode } from '../../core/index.js';
import { nowIso, type Row, type Sql } from '../db/index.js';
import { isUniqueViolation } from '../data-access/store.js';
import type { ExternalGroup } from '../../core/api-types.js';
import type { AgentPolicyRequest } from '../../core/api-types-admin.js';

/**
 * Organisations, their members, teams and agent policies as stored (docs/identity.md). Route
 * handlers (web/identity/org-routes.ts) check who may do what and write the action log; the
 * functions here only read and write rows, each multi-row change inside the caller's transaction.
 */

export type OrganisationRow = Row<'organisations'>;
export type TeamRow = Row<'teams'>;
export type AgentPolicyRow = Row<'agent_policies'>;
export type OrgRole = 'member' | 'manager';

/** A unique index said no: the caller's coded conflict instead. */
export async function unique<T>(p: Promise<T>, code: string, message: string): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError(code, message);
    throw err;
  }
}

/** The row with this id, or the caller's coded "not found". */
async function rowById<T extends 'organisations' | 'teams' | 'agent_policies'>(
  db: Sql,
  table: T,
  id: number,
  code: ErrorCode,
  message: string,
): Promise<Row<T>> {
  const r = await db
    .selectFrom(table as 'organisations' | 'teams' | 'agent_policies')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw new AppError(code, message);
  return r as Row<T>;
}

/** An organisation's teams or agent policies, in id order. */
function rowsOfOrg<T extends 'teams' | 'agent_policies'>(db: Sql, table: T, orgId: number): Promise<Row<T>[]> {
  return db
    .selectFrom(table as 'teams' | 'agent_policies')
    .selectAll()
    .where('organisation_id', '=', orgId)
    .orderBy('id')
    .execute() as Promise<Row<T>[]>;
}

// ---- organisations ------------------------------------------------------------------------

export function listOrganisations(db: Sql, memberId?: number): Promise<OrganisationRow[]> {
  if (memberId === undefined) return db.selectFrom('organisations').selectAll().orderBy('id').execute();
  return db
    .selectFrom('organisations as o')
    .innerJoin('organisation_members as m', 'm.organisation_id', 'o.id')
    .selectAll('o')
    .where('m.user_id', '=', memberId)
    .orderBy('o.id')
    .execute();
}

export function getOrganisation(db: Sql, id: number): Promise<OrganisationRow> {
  return rowById(db, 'organisations', id, 'ERR_ORG_NOT_FOUND', 'no such organisation');
}

export function createOrganisation(db: Sql, name: string): Promise<OrganisationRow> {
  return unique(
    db.insertInto('organisations').values({ name }).returningAll().executeTakeFirstOrThrow(),
    'ERR_ORG_EXISTS',
    'an organisation with that name exists',
  );
}

export async function renameOrganisation(db: Sql, id: number, name: string): Promise<void> {
  await unique(
    db.updateTable('organisations').set({ name }).where('id', '=', id).execute(),
    'ERR_ORG_EXISTS',
    'an organisation with that name exists',
  );
}

/** Its members, teams and agent policies go with it (foreign keys cascade). */
export async function deleteOrganisation(db: Sql, id: number): Promise<void> {
  await db.deleteFrom('organisations').where('id', '=', id).execute();
}

export async function countOrganisationParts(db: Sql, id: number): Promise<{ teams: number; agent_policies: number }> {
  const teams = await db
    .selectFrom('teams')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organisation_id', '=', id)
    .executeTakeFirstOrThrow();
  const policies = await db
    .selectFrom('agent_policies')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organisation_id', '=', id)
    .executeTakeFirstOrThrow();
  return { teams: Number(teams.n), agent_policies: Number(policies.n) };
}

/** Everyone an organisation's policies reach: its members and the members of its teams. */
export async function orgMemberIds(db: Sql, orgId: number): Promise<number[]> {
  const { rows } = await sql<{ user_id: number }>`
    SELECT user_id FROM organisation_members WHERE organisation_id = ${orgId}
    UNION SELECT tm.user_id FROM team_members tm JOIN teams t ON t.id = tm.team_id WHERE t.organisation_id = ${orgId}`.execute(
    db,
  );
  return rows.map((r) => Number(r.user_id));
}

export async function memberRole(db: Sql, orgId: number, userId: number): Promise<OrgRole | undefined> {
  const m = await db
    .selectFrom('organisation_members')
    .select('role')
    .where('organisation_id', '=', orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return m?.role;
}

/** Manager of at least one organisation. */
export async function managesAny(db: Sql, userId: number): Promise<boolean> {
  return !!(await db
    .selectFrom('organisation_members')
    .select('user_id')
    .where('user_id', '=', userId)
    .where('role', '=', 'manager')
    .executeTakeFirst());
}

export function listMembers(db: Sql, orgId: number): Promise<{ user_id: number; role: OrgRole }[]> {
  return db
    .selectFrom('organisation_members')
    .select(['user_id', 'role'])
    .where('organisation_id', '=', orgId)
    .orderBy('user_id')
    .execute();
}

export async function setMember(db: Sql, orgId: number, userId: number, role: OrgRole): Promise<void> {
  await db
    .insertInto('organisation_members')
    .values({ organisation_id: orgId, user_id: userId, role })
    .onConflict((oc) => oc.columns(['organisation_id', 'user_id']).doUpdateSet({ role }))
    .execute();
}

/** Whether a membership was there to remove. */
export async function removeMember(db: Sql, orgId: number, userId: number): Promise<boolean> {
  const r = await db
    .deleteFrom('organisation_members')
    .where('organisation_id', '=', orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function userExists(db: Sql, userId: number): Promise<boolean> {
  return !!(await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst());
}

// ---- external groups ------------------------------------------------------------------------

/** A synced group as the team picker shows it (core/api-types.ts). */
export type GroupSummary = ExternalGroup;

/** Synced groups whose e-mail or name contains `q` (case-insensitive; `%` and `_` literal), at most 200. */
export async function searchGroups(db: Sql, q?: string): Promise<GroupSummary[]> {
  const like = q ? `%${q.toLowerCase().replace(/[%_\\]/g, (m) => `\\${m}`)}%` : '%';
  const { rows } = await sql<GroupSummary>`
    SELECT g.id, g.connection_id, g.email, g.name, g.description,
           (SELECT COUNT(*) FROM external_group_members m WHERE m.group_id = g.id) AS member_count
    FROM external_groups g
    WHERE lower(g.email) LIKE ${like} ESCAPE '\\' OR lower(g.name) LIKE ${like} ESCAPE '\\'
    ORDER BY g.email LIMIT 200`.execute(db);
  return rows.map((g) => ({ ...g, member_count: Number(g.member_count) }));
}

export async function groupExists(db: Sql, groupId: number): Promise<boolean> {
  return !!(await db.selectFrom('external_groups').select('id').where('id', '=', groupId).executeTakeFirst());
}

// ---- teams ----------------------------------------------------------------------------------

export function getTeam(db: Sql, id: number): Promise<TeamRow> {
  return rowById(db, 'teams', id, 'ERR_TEAM_NOT_FOUND', 'no such team');
}

export function listTeams(db: Sql, orgId: number): Promise<TeamRow[]> {
  return rowsOfOrg(db, 'teams', orgId);
}

export function teamMembers(
  db: Sql,
  teamId: number,
): Promise<{ id: number; username: string; display_name: string | null }[]> {
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.username', 'u.display_name'])
    .where('m.team_id', '=', teamId)
    .orderBy('u.username')
    .execute();
}

export function createTeam(db: Sql, orgId: number, name: string, groupId: number | null): Promise<TeamRow> {
  return unique(
    db
      .insertInto('teams')
      .values({ organisation_id: orgId, name, external_group_id: groupId })
      .returningAll()
      .executeTakeFirstOrThrow(),
    'ERR_TEAM_EXISTS',
    'a team with that name exists in the organisation',
  );
}

/** `groupId` undefined leaves the link as it is; null unlinks. */
export async function updateTeam(
  db: Sql,
  id: number,
  patch: { name?: string; groupId?: number | null },
): Promise<void> {
  await unique(
    db
      .updateTable('teams')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.groupId !== undefined ? { external_group_id: patch.groupId } : {}),
        updated_at: nowIso(),
      })
      .where('id', '=', id)
      .execute(),
    'ERR_TEAM_EXISTS',
    'a team with that name exists in the organisation',
  );
}

/** Deletes the team; returns who was in it. */
export async function deleteTeam(db: Sql, id: number): Promise<number[]> {
  const members = (await db.selectFrom('team_members').select('user_id').where('team_id', '=', id).execute()).map(
    (m) => m.user_id,
  );
  await db.deleteFrom('teams').where('id', '=', id).execute();
  return members;
}

/** Add or remove one member; whether anything changed. */
export async function editTeamMember(db: Sql, teamId: number, userId: number, add: boolean): Promise<boolean> {
  const r = add
    ? await db
        .insertInto('team_members')
        .values({ team_id: teamId, user_id: userId })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst()
    : await db
        .deleteFrom('team_members')
        .where('team_id', '=', teamId)
        .where('user_id', '=', userId)
        .executeTakeFirst();
  return Number('numInsertedOrUpdatedRows' in r ? (r.numInsertedOrUpdatedRows ?? 0) : r.numDeletedRows) > 0;
}

// ---- agent policies -------------------------------------------------------------------------

export function getAgentPolicy(db: Sql, id: number): Promise<AgentPolicyRow> {
  return rowById(db, 'agent_policies', id, 'ERR_POLICY_NOT_FOUND', 'no such agent policy');
}

export function listAgentPolicies(db: Sql, orgId: number): Promise<AgentPolicyRow[]> {
  return rowsOfOrg(db, 'agent_policies', orgId);
}

/** These policies by name with their organisation's (the effective-policy view names them), in id order. */
export function policyNames(
  db: Sql,
  ids: number[],
): Promise<{ id: number; name: string; organisation_id: number; organisation_name: string }[]> {
  if (!ids.length) return Promise.resolve([]);
  return db
    .selectFrom('agent_policies as p')
    .innerJoin('organisations as o', 'o.id', 'p.organisation_id')
    .select(['p.id', 'p.name', 'p.organisation_id', 'o.name as organisation_name'])
    .where('p.id', 'in', ids)
    .orderBy('p.id')
    .execute();
}

export async function policyTeamIds(db: Sql, policyId: number): Promise<number[]> {
  return (
    await db
      .selectFrom('agent_policy_teams')
      .select('team_id')
      .where('policy_id', '=', policyId)
      .orderBy('team_id')
      .execute()
  ).map((r) => r.team_id);
}

/** What an agent-policy create or update writes (the API's request body, core/api-types-admin.ts). */
export type AgentPolicyInput = AgentPolicyRequest;

/** Create (no id) or update a policy and replace its teams when given; run it in a transaction. */
export async function saveAgentPolicy(db: Sql, orgId: number, body: AgentPolicyInput, id?: number): Promise<number> {
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  let pid = id;
  const exists = 'a policy with that name exists';
  if (pid === undefined) {
    const row = await unique(
      db
        .insertInto('agent_policies')
        .values({
          organisation_id: orgId,
          name: body.name!,
          applies_to: body.applies_to!,
          allowed_tools: body.allowed_tools === undefined ? null : json(body.allowed_tools),
          allowed_models: body.allowed_models === undefined ? null : json(body.allowed_models),
          denied_tools: JSON.stringify(body.denied_tools ?? []),
          denied_models: JSON.stringify(body.denied_models ?? []),
          mail_allow_domains: JSON.stringify(body.mail_allow_domains ?? []),
          mail_block_domains: JSON.stringify(body.mail_block_domains ?? []),
          mail_other: body.mail_other ?? null,
          mail_max_recipients: body.mail_max_recipients ?? null,
          mail_max_per_hour: body.mail_max_per_hour ?? null,
        })
        .returning('id')
        .executeTakeFirstOrThrow(),
      'ERR_POLICY_EXISTS',
      exists,
    );
    pid = row.id;
  } else {
    const set: Partial<Omit<AgentPolicyRow, 'id'>> = {};
    if (body.name !== undefined) set.name = body.name;
    if (body.applies_to !== undefined) set.applies_to = body.applies_to;
    if (body.allowed_tools !== undefined) set.allowed_tools = json(body.allowed_tools);
    if (body.allowed_models !== undefined) set.allowed_models = json(body.allowed_models);
    if (body.denied_tools !== undefined) set.denied_tools = JSON.stringify(body.denied_tools);
    if (body.denied_models !== undefined) set.denied_models = JSON.stringify(body.denied_models);
    if (body.mail_allow_domains !== undefined) set.mail_allow_domains = JSON.stringify(body.mail_allow_domains);
    if (body.mail_block_domains !== undefined) set.mail_block_domains = JSON.stringify(body.mail_block_domains);
    if (body.mail_other !== undefined) set.mail_other = body.mail_other;
    if (body.mail_max_recipients !== undefined) set.mail_max_recipients = body.mail_max_recipients;
    if (body.mail_max_per_hour !== undefined) set.mail_max_per_hour = body.mail_max_per_hour;
    if (Object.keys(set).length)
      await unique(
        db
          .updateTable('agent_policies')
          .set({ ...set, updated_at: nowIso() })
          .where('id', '=', pid)
          .execute(),
        'ERR_POLICY_EXISTS',
        exists,
      );
  }
  if (body.team_ids) {
    await db.deleteFrom('agent_policy_teams').where('policy_id', '=', pid).execute();
    const teams = [...new Set(body.team_ids)];
    if (teams.length)
      await db
        .insertInto('agent_policy_teams')
        .values(teams.map((team_id) => ({ policy_id: pid!, team_id })))
        .execute();
  }
  return pid;
}

export async function deleteAgentPolicy(db: Sql, id: number): Promise<void> {
  await db.deleteFrom('agent_policies').where('id', '=', id).execute();
}
