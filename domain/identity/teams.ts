import type { Sql } from '../db/index.js';

/** Users a team gained and lost when its membership was made to follow its group. */
export interface TeamMembershipChange {
  added: number[];
  removed: number[];
}

/**
 * Make a linked team's members exactly its group's **active** members (docs/rules.md#directory-sync-flow, step 4: "each linked Team's
 * membership is made equal to its group's active members"). Used by the sync's linked-teams step
 * and when a manager links a team to a group (or to another one), so a team never carries one
 * group's members under another group's link. Writes only the differences; the caller rewrites the
 * stored sandbox policies of the users returned.
 */
export async function followGroup(db: Sql, teamId: number, groupId: number): Promise<TeamMembershipChange> {
  const rows = await db
    .selectFrom('external_group_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('m.user_id')
    .where('m.group_id', '=', groupId)
    .where('u.is_active', '=', 1)
    .execute();
  return setTeamMembers(db, teamId, new Set(rows.map((x) => x.user_id)));
}

/**
 * Empty a team: its linked group is gone, so "the group's active members" are nobody, and the
 * group's last members must not keep the team's agent policies.
 */
export function emptyTeam(db: Sql, teamId: number): Promise<TeamMembershipChange> {
  return setTeamMembers(db, teamId, new Set());
}

async function setTeamMembers(db: Sql, teamId: number, want: Set<number>): Promise<TeamMembershipChange> {
  const have = new Set(
    (await db.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).execute()).map(
      (x) => x.user_id,
    ),
  );
  const out: TeamMembershipChange = {
    added: [...want].filter((u) => !have.has(u)),
    removed: [...have].filter((u) => !want.has(u)),
  };
  if (out.added.length)
    await db
      .insertInto('team_members')
      .values(out.added.map((user_id) => ({ team_id: teamId, user_id })))
      .execute();
  if (out.removed.length)
    await db.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', 'in', out.removed).execute();
  return out;
}
