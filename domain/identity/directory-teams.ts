// The directory sync's linked-teams step (docs/identity.md): teams follow their directory groups.
import type { Sql } from '../db/index.js';
import { rewriteAgentPolicies } from './agent-policy.js';
import { emptyTeam, followGroup, type TeamMembershipChange } from './teams.js';

/** A team that was linked to a group the directory no longer lists. */
export interface OrphanedTeam {
  team_id: number;
  organisation_id: number;
  team: string;
  group_id: number;
  group_email: string;
}

export interface TeamsResult {
  teams_updated: number;
  team_members_added: number;
  team_members_removed: number;
  /** Teams whose linked group is gone: unlinked and emptied in this run. */
  teams_unlinked: number;
  policies_rewritten: number;
  rows_written: number;
  /** Users whose stored sandbox policy changed. */
  policyChangedUserIds: number[];
  /** The teams unlinked and emptied, with the members each lost (for the job's warnings and the action log). */
  unlinked: (OrphanedTeam & { members_removed: number })[];
}

/**
 * The linked-teams step (after steps (a)–(c) succeeded; the runner runs it inside the same
 * transaction, so a failure here rolls those back too): each team linked to one of the
 * connection's groups gets exactly the group's active members; a team whose group the directory
 * no longer lists (`orphaned`, unlinked by step (a)) has no group and so no members left: it is
 * emptied, rather than keep the group's last members and, with them, the team's agent policies.
 * The sandbox policy is rewritten for users whose teams changed.
 */
export async function applyLinkedTeams(
  db: Sql,
  connectionId: number,
  orphaned: OrphanedTeam[] = [],
): Promise<TeamsResult> {
  {
    const r: TeamsResult = {
      teams_updated: 0,
      team_members_added: 0,
      team_members_removed: 0,
      teams_unlinked: 0,
      policies_rewritten: 0,
      rows_written: 0,
      policyChangedUserIds: [],
      unlinked: [],
    };
    const teams = await db
      .selectFrom('teams as t')
      .innerJoin('external_groups as g', 'g.id', 't.external_group_id')
      .select(['t.id', 'g.id as external_group_id'])
      .where('g.connection_id', '=', connectionId)
      .execute();
    const changedUsers = new Set<number>();
    const count = (ch: TeamMembershipChange): boolean => {
      for (const u of ch.added) changedUsers.add(u);
      for (const u of ch.removed) changedUsers.add(u);
      r.team_members_added += ch.added.length;
      r.team_members_removed += ch.removed.length;
      return ch.added.length + ch.removed.length > 0;
    };
    for (const t of teams) if (count(await followGroup(db, t.id, t.external_group_id))) r.teams_updated++;
    for (const o of orphaned) {
      const ch = await emptyTeam(db, o.team_id);
      if (count(ch)) r.teams_updated++;
      r.teams_unlinked++;
      r.unlinked.push({ ...o, members_removed: ch.removed.length });
    }
    r.policyChangedUserIds = await rewriteAgentPolicies(db, changedUsers);
    r.policies_rewritten = r.policyChangedUserIds.length;
    r.rows_written = r.team_members_added + r.team_members_removed + r.policies_rewritten;
    return r;
  }
}
