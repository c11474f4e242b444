import { AppError, nowIso, type Db } from '../../core/index.js';
import { emptyTeam, followGroup, rewriteAgentPolicies, type TeamMembershipChange } from '../../web/index.js';
import type { DirectoryClient, GoogleGroup, GoogleUser } from './google-client.js';

/** Everything the directory said, fetched before anything is written. */
export interface DirectorySnapshot {
  groups: GoogleGroup[];
  /** group directory id → member e-mails (lower case, type USER only; nested groups are not expanded) */
  memberEmails: Map<string, string[]>;
  users: GoogleUser[];
  memberships: number;
}

export type Progress = (phase: string, done: number, total?: number) => void;

const MEMBER_FETCH_CONCURRENCY = 8;

/** Steps (a) and (b) fetch: all groups with their members, then all users (paged). */
export async function fetchDirectory(client: DirectoryClient, progress: Progress = () => {}): Promise<DirectorySnapshot> {
  progress('groups', 0);
  const groups = await client.listGroups();
  progress('groups', groups.length, groups.length);
  const memberEmails = new Map<string, string[]>();
  let next = 0;
  let done = 0;
  let memberships = 0;
  await Promise.all(
    Array.from({ length: Math.min(MEMBER_FETCH_CONCURRENCY, groups.length) }, async () => {
      while (next < groups.length) {
        const g = groups[next++];
        const members = await client.listMembers(g.id);
        const emails = members.filter((m) => (m.type ?? 'USER') === 'USER' && m.email).map((m) => m.email!.toLowerCase());
        memberEmails.set(g.id, emails);
        memberships += emails.length;
        progress('members', ++done, groups.length);
      }
    }),
  );
  progress('users', 0);
  const users = await client.listUsers();
  progress('users', users.length, users.length);
  return { groups, memberEmails, users, memberships };
}

export interface SyncCounts {
  groups_created: number;
  groups_updated: number;
  groups_deleted: number;
  users_created: number;
  users_updated: number;
  users_linked: number;
  users_deactivated: number;
  users_reactivated: number;
  memberships_added: number;
  memberships_removed: number;
  /** Data rows inserted, updated or deleted (bookkeeping of jobs and the connection excluded). */
  rows_written: number;
  /** New directory users whose e-mail another synced account still holds (created without e-mail). */
  email_conflicts?: number;
  /** A superuser the sync would have deactivated but kept: the last active one. */
  kept_last_superuser?: number;
}

export interface ApplyResult {
  counts: SyncCounts;
  deactivatedUserIds: number[];
  /** Teams whose linked group was deleted in step (a): now unlinked; the teams step empties them. */
  orphanedTeams: OrphanedTeam[];
}

/** A team that was linked to a group the directory no longer lists. */
export interface OrphanedTeam {
  team_id: number;
  organisation_id: number;
  team: string;
  group_id: number;
  group_email: string;
}

interface DirUserRow {
  directory_id: string;
  user_id: number;
  email: string;
  full_name: string | null;
  suspended: number;
  archived: number;
  present: number;
  deactivated_by_sync: number;
}

/**
 * Apply a fetched snapshot in ONE transaction (a savepoint inside the runner's transaction):
 * (a) upsert ExternalGroup rows, (b) upsert
 * users (create missing, link by e-mail, deactivate those gone from the directory or
 * suspended/archived, never the last active superuser), (c) make each group's members match.
 * Rows are written only where something changed, so an unchanged directory writes nothing.
 */
export function applySnapshot(db: Db, connectionId: number, snap: DirectorySnapshot): ApplyResult {
  return db.transaction((): ApplyResult => {
    // An empty listing while users are known is far likelier a wrong customer id or a broken
    // delegation than a deleted organisation: refuse rather than deactivate everyone.
    const known = (db.prepare('SELECT COUNT(*) AS n FROM directory_users WHERE connection_id = ? AND present = 1').get(connectionId) as { n: number }).n;
    if (snap.users.length === 0 && known > 0) {
      throw new AppError('ERR_SYNC_EMPTY_DIRECTORY', `the directory listed no users (${known} known); nothing was changed`, { status: 502 });
    }
    const now = nowIso();
    const c: SyncCounts = {
      groups_created: 0, groups_updated: 0, groups_deleted: 0, users_created: 0, users_updated: 0, users_linked: 0,
      users_deactivated: 0, users_reactivated: 0, memberships_added: 0, memberships_removed: 0, rows_written: 0,
    };
    const w = (info: { changes: number }) => (c.rows_written += info.changes);

    // (a) groups
    const existingGroups = new Map(
      (db.prepare('SELECT id, directory_id, email, name, description FROM external_groups WHERE connection_id = ?').all(connectionId) as {
        id: number; directory_id: string; email: string; name: string; description: string;
      }[]).map((g) => [g.directory_id, g]),
    );
    const insGroup = db.prepare('INSERT INTO external_groups (connection_id, directory_id, email, name, description, synced_at) VALUES (?, ?, ?, ?, ?, ?)');
    const updGroup = db.prepare('UPDATE external_groups SET email = ?, name = ?, description = ?, synced_at = ? WHERE id = ?');
    const groupIdOf = new Map<string, number>();
    for (const g of snap.groups) {
      const email = g.email.toLowerCase();
      const name = g.name ?? email;
      const desc = g.description ?? '';
      const cur = existingGroups.get(g.id);
      if (!cur) {
        const info = insGroup.run(connectionId, g.id, email, name, desc, now);
        w(info);
        c.groups_created++;
        groupIdOf.set(g.id, Number(info.lastInsertRowid));
      } else {
        groupIdOf.set(g.id, cur.id);
        existingGroups.delete(g.id);
        if (cur.email !== email || cur.name !== name || cur.description !== desc) {
          w(updGroup.run(email, name, desc, now, cur.id));
          c.groups_updated++;
        }
      }
    }
    const delGroup = db.prepare('DELETE FROM external_groups WHERE id = ?');
    const linkedTeams = db.prepare('SELECT id, organisation_id, name FROM teams WHERE external_group_id = ? ORDER BY id');
    const orphanedTeams: OrphanedTeam[] = [];
    for (const gone of existingGroups.values()) {
      // Members go with the group (ON DELETE CASCADE); count them as written rows too.
      c.rows_written += (db.prepare('SELECT COUNT(*) AS n FROM external_group_members WHERE group_id = ?').get(gone.id) as { n: number }).n;
      // Linked teams are unlinked by ON DELETE SET NULL (a written row each); remembered so the
      // teams step empties them instead of leaving them with the group's last members.
      for (const tm of linkedTeams.all(gone.id) as { id: number; organisation_id: number; name: string }[]) {
        orphanedTeams.push({ team_id: tm.id, organisation_id: tm.organisation_id, team: tm.name, group_id: gone.id, group_email: gone.email });
        c.rows_written++;
      }
      w(delGroup.run(gone.id));
      c.groups_deleted++;
    }

    // (b) users
    const dirRows = new Map(
      (db.prepare('SELECT directory_id, user_id, email, full_name, suspended, archived, present, deactivated_by_sync FROM directory_users WHERE connection_id = ?').all(connectionId) as DirUserRow[]).map(
        (r) => [r.directory_id, r],
      ),
    );
    const users = new Map(
      (db.prepare('SELECT id, email, display_name, is_active, is_superuser FROM users').all() as {
        id: number; email: string | null; display_name: string | null; is_active: number; is_superuser: number;
      }[]).map((u) => [u.id, u]),
    );
    const userByEmail = new Map<string, number>();
    for (const u of users.values()) if (u.email) userByEmail.set(u.email.toLowerCase(), u.id);
    const usernameTaken = db.prepare('SELECT 1 FROM users WHERE username = ?');
    const insUser = db.prepare('INSERT INTO users (username, email, display_name, is_active) VALUES (?, ?, ?, ?)');
    const updUser = db.prepare('UPDATE users SET email = ?, display_name = ?, updated_at = ? WHERE id = ?');
    const insDir = db.prepare(
      `INSERT INTO directory_users (connection_id, directory_id, user_id, email, full_name, suspended, archived, present, deactivated_by_sync, synced_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
    );
    const updDir = db.prepare(
      'UPDATE directory_users SET email = ?, full_name = ?, suspended = ?, archived = ?, present = ?, deactivated_by_sync = ?, synced_at = ? WHERE connection_id = ? AND directory_id = ?',
    );
    const linkedUsers = new Set((db.prepare('SELECT user_id FROM directory_users WHERE connection_id = ?').all(connectionId) as { user_id: number }[]).map((r) => r.user_id));

    /** Users to deactivate (user id → directory id), and to reactivate. */
    const toDeactivate = new Map<number, string>();
    const toReactivate = new Map<number, string>();
    const dirState = new Map<string, { row: DirUserRow; changed: boolean }>();
    const emailToUser = new Map<string, number>();

    for (const d of snap.users) {
      const email = d.primaryEmail.toLowerCase();
      const fullName = d.name?.fullName ?? null;
      const inactive = !!(d.suspended || d.archived);
      let row = dirRows.get(d.id);
      if (!row) {
        let uid = userByEmail.get(email);
        if (uid !== undefined && linkedUsers.has(uid)) uid = undefined; // already another directory user's account
        const created = uid === undefined;
        if (uid === undefined) {
          const username = usernameTaken.get(email) ? `${email}#${d.id}` : email;
          // The address still belongs to another directory user's account (an address reused after a
          // deletion): the new account gets no e-mail rather than someone else's account.
          const ownEmail = userByEmail.has(email) ? null : email;
          if (!ownEmail) c.email_conflicts = (c.email_conflicts ?? 0) + 1;
          const info = insUser.run(username, ownEmail, fullName, inactive ? 0 : 1);
          w(info);
          uid = Number(info.lastInsertRowid);
          users.set(uid, { id: uid, email: ownEmail, display_name: fullName, is_active: inactive ? 0 : 1, is_superuser: 0 });
          if (ownEmail) userByEmail.set(email, uid);
          c.users_created++;
        } else c.users_linked++;
        // A new account created inactive counts as deactivated by sync, so it comes back when unsuspended.
        const createdInactive = created && inactive ? 1 : 0;
        w(insDir.run(connectionId, d.id, uid, email, fullName, d.suspended ? 1 : 0, d.archived ? 1 : 0, createdInactive, now));
        linkedUsers.add(uid);
        row = { directory_id: d.id, user_id: uid, email, full_name: fullName, suspended: d.suspended ? 1 : 0, archived: d.archived ? 1 : 0, present: 1, deactivated_by_sync: createdInactive };
        dirState.set(d.id, { row, changed: false });
      } else {
        dirRows.delete(d.id);
        const next = { ...row, email, full_name: fullName, suspended: d.suspended ? 1 : 0, archived: d.archived ? 1 : 0, present: 1 };
        const changed = next.email !== row.email || next.full_name !== row.full_name || next.suspended !== row.suspended || next.archived !== row.archived || row.present !== 1;
        dirState.set(d.id, { row: next, changed });
        row = next;
        const u = users.get(row.user_id)!;
        // Keep the local account in step with the directory (e-mail only when free).
        const emailFree = u.email?.toLowerCase() === email || !userByEmail.has(email);
        const newEmail = emailFree ? email : u.email;
        if ((newEmail ?? null) !== (u.email ?? null) || (fullName ?? null) !== (u.display_name ?? null)) {
          w(updUser.run(newEmail, fullName, now, u.id));
          if (u.email) userByEmail.delete(u.email.toLowerCase());
          if (newEmail) userByEmail.set(newEmail.toLowerCase(), u.id);
          u.email = newEmail;
          u.display_name = fullName;
          c.users_updated++;
        }
      }
      emailToUser.set(email, row.user_id);
      const u = users.get(row.user_id)!;
      if (inactive && u.is_active) toDeactivate.set(u.id, d.id);
      else if (!inactive && !u.is_active && row.deactivated_by_sync) toReactivate.set(u.id, d.id);
    }
    // Directory users no longer listed: mark absent and deactivate.
    for (const gone of dirRows.values()) {
      const u = users.get(gone.user_id);
      const next = { ...gone, present: 0 };
      dirState.set(gone.directory_id, { row: next, changed: gone.present !== 0 });
      if (u?.is_active) toDeactivate.set(u.id, gone.directory_id);
    }
    // Never deactivate the last active superuser.
    const activeSupers = [...users.values()].filter((u) => u.is_active && u.is_superuser).map((u) => u.id);
    if (activeSupers.length && activeSupers.every((id) => toDeactivate.has(id))) {
      const keep = Math.min(...activeSupers);
      toDeactivate.delete(keep);
      c.kept_last_superuser = keep;
    }
    const setActive = db.prepare('UPDATE users SET is_active = ?, updated_at = ? WHERE id = ?');
    for (const [uid, dirId] of toDeactivate) {
      w(setActive.run(0, now, uid));
      users.get(uid)!.is_active = 0;
      const s = dirState.get(dirId)!;
      s.row.deactivated_by_sync = 1;
      s.changed = true;
      c.users_deactivated++;
    }
    for (const [uid, dirId] of toReactivate) {
      w(setActive.run(1, now, uid));
      users.get(uid)!.is_active = 1;
      const s = dirState.get(dirId)!;
      s.row.deactivated_by_sync = 0;
      s.changed = true;
      c.users_reactivated++;
    }
    for (const [dirId, s] of dirState) {
      if (!s.changed) continue;
      const r = s.row;
      w(updDir.run(r.email, r.full_name, r.suspended, r.archived, r.present, r.deactivated_by_sync, now, connectionId, dirId));
    }

    // (c) memberships, from the cached member e-mails
    const current = new Map<number, Set<number>>();
    for (const r of db
      .prepare('SELECT m.group_id, m.user_id FROM external_group_members m JOIN external_groups g ON g.id = m.group_id WHERE g.connection_id = ?')
      .all(connectionId) as { group_id: number; user_id: number }[]) {
      let s = current.get(r.group_id);
      if (!s) current.set(r.group_id, (s = new Set()));
      s.add(r.user_id);
    }
    const insMember = db.prepare('INSERT INTO external_group_members (group_id, user_id) VALUES (?, ?)');
    const delMember = db.prepare('DELETE FROM external_group_members WHERE group_id = ? AND user_id = ?');
    for (const g of snap.groups) {
      const gid = groupIdOf.get(g.id)!;
      const want = new Set<number>();
      for (const e of snap.memberEmails.get(g.id) ?? []) {
        // Members outside the synced user list (other domains) have no account here: skipped.
        const uid = emailToUser.get(e);
        if (uid !== undefined) want.add(uid);
      }
      const have = current.get(gid) ?? new Set<number>();
      for (const uid of want) if (!have.has(uid)) (w(insMember.run(gid, uid)), c.memberships_added++);
      for (const uid of have) if (!want.has(uid)) (w(delMember.run(gid, uid)), c.memberships_removed++);
    }
    return { counts: c, deactivatedUserIds: [...toDeactivate.keys()], orphanedTeams };
  })();
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
export function applyLinkedTeams(db: Db, connectionId: number, orphaned: OrphanedTeam[] = []): TeamsResult {
  return db.transaction((): TeamsResult => {
    const r: TeamsResult = {
      teams_updated: 0, team_members_added: 0, team_members_removed: 0, teams_unlinked: 0, policies_rewritten: 0, rows_written: 0,
      policyChangedUserIds: [], unlinked: [],
    };
    const teams = db
      .prepare('SELECT t.id, t.external_group_id FROM teams t JOIN external_groups g ON g.id = t.external_group_id WHERE g.connection_id = ?')
      .all(connectionId) as { id: number; external_group_id: number }[];
    const changedUsers = new Set<number>();
    const count = (ch: TeamMembershipChange): boolean => {
      for (const u of ch.added) changedUsers.add(u);
      for (const u of ch.removed) changedUsers.add(u);
      r.team_members_added += ch.added.length;
      r.team_members_removed += ch.removed.length;
      return ch.added.length + ch.removed.length > 0;
    };
    for (const t of teams) if (count(followGroup(db, t.id, t.external_group_id))) r.teams_updated++;
    for (const o of orphaned) {
      const ch = emptyTeam(db, o.team_id);
      if (count(ch)) r.teams_updated++;
      r.teams_unlinked++;
      r.unlinked.push({ ...o, members_removed: ch.removed.length });
    }
    r.policyChangedUserIds = rewriteAgentPolicies(db, changedUsers);
    r.policies_rewritten = r.policyChangedUserIds.length;
    r.rows_written = r.team_members_added + r.team_members_removed + r.policies_rewritten;
    return r;
  })();
}
