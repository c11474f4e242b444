import type { Db } from '../../core/index.js';

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
export function followGroup(db: Db, teamId: number, groupId: number): TeamMembershipChange {
  const want = new Set(
    (db.prepare('SELECT m.user_id FROM external_group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ? AND u.is_active = 1').all(groupId) as { user_id: number }[]).map((x) => x.user_id),
  );
  return setTeamMembers(db, teamId, want);
}

/**
 * Empty a team: its linked group is gone, so "the group's active members" are nobody, and the
 * group's last members must not keep the team's agent policies.
 */
export function emptyTeam(db: Db, teamId: number): TeamMembershipChange {
  return setTeamMembers(db, teamId, new Set());
}

function setTeamMembers(db: Db, teamId: number, want: Set<number>): TeamMembershipChange {
  const have = new Set((db.prepare('SELECT user_id FROM team_members WHERE team_id = ?').all(teamId) as { user_id: number }[]).map((x) => x.user_id));
  const ins = db.prepare('INSERT INTO team_members (team_id, user_id) VALUES (?, ?)');
  const del = db.prepare('DELETE FROM team_members WHERE team_id = ? AND user_id = ?');
  const out: TeamMembershipChange = { added: [], removed: [] };
  for (const u of want) if (!have.has(u)) (ins.run(teamId, u), out.added.push(u));
  for (const u of have) if (!want.has(u)) (del.run(teamId, u), out.removed.push(u));
  return out;
}
