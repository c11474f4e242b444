import { AppError } from '../../core/index.js';
import { nowIso, type Sql } from '../db/index.js';
import type { ApplyResult, DirectorySnapshot, DirectoryUser, SyncCounts } from './directory-types.js';
import type { OrphanedTeam } from './directory-teams.js';
import { usernameTaken } from '../users.js';

/**
 * The writing half of a directory sync (docs/rules.md#directory-sync-flow, docs/identity.md): a
 * snapshot the job fetched from the directory is applied to the identity tables. The caller
 * (daemon/directory-sync/runner.ts) runs both steps in one transaction with the job's own row.
 */

export type { ApplyResult, DirectoryGroup, DirectorySnapshot, DirectoryUser, SyncCounts } from './directory-types.js';

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
export async function applySnapshot(db: Sql, connectionId: number, snap: DirectorySnapshot): Promise<ApplyResult> {
  // An empty listing while users are known is far likelier a wrong customer id or a broken
  // delegation than a deleted organisation: refuse rather than deactivate everyone.
  const known = Number(
    (
      await db
        .selectFrom('directory_users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('connection_id', '=', connectionId)
        .where('present', '=', 1)
        .executeTakeFirstOrThrow()
    ).n,
  );
  if (snap.users.length === 0 && known > 0) {
    throw new AppError(
      'ERR_SYNC_EMPTY_DIRECTORY',
      `the directory listed no users (${known} known); nothing was changed`,
    );
  }
  const c: SyncCounts = {
    groups_created: 0,
    groups_updated: 0,
    groups_deleted: 0,
    users_created: 0,
    users_updated: 0,
    users_linked: 0,
    users_deactivated: 0,
    users_reactivated: 0,
    memberships_added: 0,
    memberships_removed: 0,
    rows_written: 0,
  };
  const run: ApplyRun = {
    db,
    connectionId,
    snap,
    now: nowIso(),
    c,
    w: (r) => (c.rows_written += Number(r?.numUpdatedRows ?? r?.numDeletedRows ?? r?.numInsertedOrUpdatedRows ?? 0)),
  };
  // (a) groups, (b) users, (c) memberships
  const { groupIdOf, orphanedTeams } = await applyGroups(run);
  const users = await applyUsers(run);
  await applyMemberships(run, groupIdOf, users.emailToUser);
  return { counts: c, deactivatedUserIds: [...users.toDeactivate.keys()], orphanedTeams };
}

/** One applySnapshot run: its transaction, snapshot, clock and counts. */
interface ApplyRun {
  db: Sql;
  connectionId: number;
  snap: DirectorySnapshot;
  now: string;
  c: SyncCounts;
  /** Count what a statement wrote (UPDATE/DELETE/INSERT results of Kysely). */
  w: (r: { numUpdatedRows?: bigint; numDeletedRows?: bigint; numInsertedOrUpdatedRows?: bigint } | undefined) => void;
}

/** (a) Upsert the ExternalGroup rows; delete those gone (their linked teams are remembered). */
async function applyGroups({
  db,
  connectionId,
  snap,
  now,
  c,
  w,
}: ApplyRun): Promise<{ groupIdOf: Map<string, number>; orphanedTeams: OrphanedTeam[] }> {
  const existingGroups = new Map(
    (
      await db
        .selectFrom('external_groups')
        .select(['id', 'directory_id', 'email', 'name', 'description'])
        .where('connection_id', '=', connectionId)
        .execute()
    ).map((g) => [g.directory_id, g]),
  );
  const groupIdOf = new Map<string, number>();
  for (const g of snap.groups) {
    const email = g.email.toLowerCase();
    const name = g.name ?? email;
    const desc = g.description ?? '';
    const cur = existingGroups.get(g.id);
    if (!cur) {
      const row = await db
        .insertInto('external_groups')
        .values({ connection_id: connectionId, directory_id: g.id, email, name, description: desc, synced_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      c.rows_written++;
      c.groups_created++;
      groupIdOf.set(g.id, row.id);
    } else {
      groupIdOf.set(g.id, cur.id);
      existingGroups.delete(g.id);
      if (cur.email !== email || cur.name !== name || cur.description !== desc) {
        w(
          await db
            .updateTable('external_groups')
            .set({ email, name, description: desc, synced_at: now })
            .where('id', '=', cur.id)
            .executeTakeFirst(),
        );
        c.groups_updated++;
      }
    }
  }
  const orphanedTeams: OrphanedTeam[] = [];
  for (const gone of existingGroups.values()) {
    // Members go with the group (ON DELETE CASCADE); count them as written rows too.
    c.rows_written += Number(
      (
        await db
          .selectFrom('external_group_members')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('group_id', '=', gone.id)
          .executeTakeFirstOrThrow()
      ).n,
    );
    // Linked teams are unlinked by ON DELETE SET NULL (a written row each); remembered so the
    // teams step empties them instead of leaving them with the group's last members.
    for (const tm of await db
      .selectFrom('teams')
      .select(['id', 'organisation_id', 'name'])
      .where('external_group_id', '=', gone.id)
      .orderBy('id')
      .execute()) {
      orphanedTeams.push({
        team_id: tm.id,
        organisation_id: tm.organisation_id,
        team: tm.name,
        group_id: gone.id,
        group_email: gone.email,
      });
      c.rows_written++;
    }
    w(await db.deleteFrom('external_groups').where('id', '=', gone.id).executeTakeFirst());
    c.groups_deleted++;
  }
  return { groupIdOf, orphanedTeams };
}

/** The users step's state: directory rows, local accounts, and what changes. */
interface UserState {
  dirRows: Map<string, DirUserRow>;
  users: Map<
    number,
    { id: number; email: string | null; display_name: string | null; is_active: number; is_superuser: number }
  >;
  userByEmail: Map<string, number>;
  linkedUsers: Set<number>;
  /** Users to deactivate (user id → directory id), and to reactivate. */
  toDeactivate: Map<number, string>;
  toReactivate: Map<number, string>;
  dirState: Map<string, { row: DirUserRow; changed: boolean }>;
  emailToUser: Map<string, number>;
}

/**
 * (b) Upsert users: create missing, link by e-mail, deactivate those gone from the directory or
 * suspended/archived (never the last active superuser), reactivate those back.
 */
async function applyUsers(run: ApplyRun): Promise<UserState> {
  const { db, connectionId, snap, c } = run;
  const dirRows = new Map<string, DirUserRow>(
    (
      await db
        .selectFrom('directory_users')
        .select([
          'directory_id',
          'user_id',
          'email',
          'full_name',
          'suspended',
          'archived',
          'present',
          'deactivated_by_sync',
        ])
        .where('connection_id', '=', connectionId)
        .execute()
    ).map((r) => [r.directory_id, r]),
  );
  const users = new Map<
    number,
    { id: number; email: string | null; display_name: string | null; is_active: number; is_superuser: number }
  >(
    (await db.selectFrom('users').select(['id', 'email', 'display_name', 'is_active', 'is_superuser']).execute()).map(
      (u) => [u.id, u],
    ),
  );
  const userByEmail = new Map<string, number>();
  for (const u of users.values()) if (u.email) userByEmail.set(u.email.toLowerCase(), u.id);
  const linkedUsers = new Set(
    (await db.selectFrom('directory_users').select('user_id').where('connection_id', '=', connectionId).execute()).map(
      (r) => r.user_id,
    ),
  );

  /** Users to deactivate (user id → directory id), and to reactivate. */
  const toDeactivate = new Map<number, string>();
  const toReactivate = new Map<number, string>();
  const dirState = new Map<string, { row: DirUserRow; changed: boolean }>();
  const emailToUser = new Map<string, number>();

  const st: UserState = { dirRows, users, userByEmail, linkedUsers, toDeactivate, toReactivate, dirState, emailToUser };
  for (const d of snap.users) await applyDirectoryUser(run, st, d);
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
  await writeUserStates(run, st);
  return st;
}

/** One listed directory user: create or link its account, or bring the account in step. */
async function applyDirectoryUser(run: ApplyRun, st: UserState, d: DirectoryUser): Promise<void> {
  const email = d.primaryEmail.toLowerCase();
  const known = st.dirRows.get(d.id);
  const row = known ? await stepDirectoryUser(run, st, d, known) : await linkDirectoryUser(run, st, d);
  st.emailToUser.set(email, row.user_id);
  const u = st.users.get(row.user_id)!;
  const inactive = !!(d.suspended || d.archived);
  if (inactive && u.is_active) st.toDeactivate.set(u.id, d.id);
  else if (!inactive && !u.is_active && row.deactivated_by_sync) st.toReactivate.set(u.id, d.id);
}

/** A directory user seen for the first time: link the account with its e-mail, or create one. */
async function linkDirectoryUser(
  { db, connectionId, now, c }: ApplyRun,
  st: UserState,
  d: DirectoryUser,
): Promise<DirUserRow> {
  const { users, userByEmail, linkedUsers, dirState } = st;
  const email = d.primaryEmail.toLowerCase();
  const fullName = d.name?.fullName ?? null;
  const inactive = !!(d.suspended || d.archived);
  let uid = userByEmail.get(email);
  if (uid !== undefined && linkedUsers.has(uid)) uid = undefined; // already another directory user's account
  const created = uid === undefined;
  if (uid === undefined) {
    const username = (await usernameTaken(db, email)) ? `${email}#${d.id}` : email;
    // The address still belongs to another directory user's account (an address reused after a
    // deletion): the new account gets no e-mail rather than someone else's account.
    const ownEmail = userByEmail.has(email) ? null : email;
    if (!ownEmail) c.email_conflicts = (c.email_conflicts ?? 0) + 1;
    const created = await db
      .insertInto('users')
      .values({
        username,
        email: ownEmail,
        display_name: fullName,
        is_active: inactive ? 0 : 1,
        password_hash: null,
        last_login_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    c.rows_written++;
    uid = created.id;
    users.set(uid, {
      id: uid,
      email: ownEmail,
      display_name: fullName,
      is_active: inactive ? 0 : 1,
      is_superuser: 0,
    });
    if (ownEmail) userByEmail.set(email, uid);
    c.users_created++;
  } else c.users_linked++;
  // A new account created inactive counts as deactivated by sync, so it comes back when unsuspended.
  const createdInactive = created && inactive ? 1 : 0;
  await db
    .insertInto('directory_users')
    .values({
      connection_id: connectionId,
      directory_id: d.id,
      user_id: uid,
      email,
      full_name: fullName,
      suspended: d.suspended ? 1 : 0,
      archived: d.archived ? 1 : 0,
      present: 1,
      deactivated_by_sync: createdInactive,
      synced_at: now,
    })
    .execute();
  c.rows_written++;
  linkedUsers.add(uid);
  const row: DirUserRow = {
    directory_id: d.id,
    user_id: uid,
    email,
    full_name: fullName,
    suspended: d.suspended ? 1 : 0,
    archived: d.archived ? 1 : 0,
    present: 1,
    deactivated_by_sync: createdInactive,
  };
  dirState.set(d.id, { row, changed: false });
  return row;
}

/** A directory user already linked: its row and the local account brought in step with the directory. */
async function stepDirectoryUser(
  { db, now, c, w }: ApplyRun,
  st: UserState,
  d: DirectoryUser,
  row: DirUserRow,
): Promise<DirUserRow> {
  const { dirRows, users, userByEmail, dirState } = st;
  const email = d.primaryEmail.toLowerCase();
  const fullName = d.name?.fullName ?? null;
  dirRows.delete(d.id);
  const next = {
    ...row,
    email,
    full_name: fullName,
    suspended: d.suspended ? 1 : 0,
    archived: d.archived ? 1 : 0,
    present: 1,
  };
  const changed =
    next.email !== row.email ||
    next.full_name !== row.full_name ||
    next.suspended !== row.suspended ||
    next.archived !== row.archived ||
    row.present !== 1;
  dirState.set(d.id, { row: next, changed });
  row = next;
  const u = users.get(row.user_id)!;
  // Keep the local account in step with the directory (e-mail only when free).
  const emailFree = u.email?.toLowerCase() === email || !userByEmail.has(email);
  const newEmail = emailFree ? email : u.email;
  if ((newEmail ?? null) !== (u.email ?? null) || (fullName ?? null) !== (u.display_name ?? null)) {
    w(
      await db
        .updateTable('users')
        .set({ email: newEmail, display_name: fullName, updated_at: now })
        .where('id', '=', u.id)
        .executeTakeFirst(),
    );
    if (u.email) userByEmail.delete(u.email.toLowerCase());
    if (newEmail) userByEmail.set(newEmail.toLowerCase(), u.id);
    u.email = newEmail;
    u.display_name = fullName;
    c.users_updated++;
  }
  return row;
}

/** Write the (de)activations and the changed directory_users rows. */
async function writeUserStates({ db, connectionId, now, c, w }: ApplyRun, st: UserState): Promise<void> {
  const { users, toDeactivate, toReactivate, dirState } = st;
  const setActive = async (active: 0 | 1, uid: number) =>
    db.updateTable('users').set({ is_active: active, updated_at: now }).where('id', '=', uid).executeTakeFirst();
  for (const [active, changes] of [[0, toDeactivate] as const, [1, toReactivate] as const]) {
    for (const [uid, dirId] of changes) {
      w(await setActive(active, uid));
      users.get(uid)!.is_active = active;
      const s = dirState.get(dirId)!;
      s.row.deactivated_by_sync = active ? 0 : 1;
      s.changed = true;
      if (active) c.users_reactivated++;
      else c.users_deactivated++;
    }
  }
  for (const [dirId, s] of dirState) {
    if (!s.changed) continue;
    const r = s.row;
    w(
      await db
        .updateTable('directory_users')
        .set({
          email: r.email,
          full_name: r.full_name,
          suspended: r.suspended,
          archived: r.archived,
          present: r.present,
          deactivated_by_sync: r.deactivated_by_sync,
          synced_at: now,
        })
        .where('connection_id', '=', connectionId)
        .where('directory_id', '=', dirId)
        .executeTakeFirst(),
    );
  }
}

/** (c) Make each group's members match the cached member e-mails. */
async function applyMemberships(
  { db, connectionId, snap, c }: ApplyRun,
  groupIdOf: Map<string, number>,
  emailToUser: Map<string, number>,
): Promise<void> {
  const current = new Map<number, Set<number>>();
  for (const r of await db
    .selectFrom('external_group_members as m')
    .innerJoin('external_groups as g', 'g.id', 'm.group_id')
    .select(['m.group_id', 'm.user_id'])
    .where('g.connection_id', '=', connectionId)
    .execute()) {
    let s = current.get(r.group_id);
    if (!s) current.set(r.group_id, (s = new Set()));
    s.add(r.user_id);
  }
  for (const g of snap.groups) {
    const gid = groupIdOf.get(g.id)!;
    const want = new Set<number>();
    for (const e of snap.memberEmails.get(g.id) ?? []) {
      // Members outside the synced user list (other domains) have no account here: skipped.
      const uid = emailToUser.get(e);
      if (uid !== undefined) want.add(uid);
    }
    const have = current.get(gid) ?? new Set<number>();
    const add = [...want].filter((uid) => !have.has(uid));
    const remove = [...have].filter((uid) => !want.has(uid));
    if (add.length)
      await db
        .insertInto('external_group_members')
        .values(add.map((user_id) => ({ group_id: gid, user_id })))
        .execute();
    if (remove.length)
      await db
        .deleteFrom('external_group_members')
        .where('group_id', '=', gid)
        .where('user_id', 'in', remove)
        .execute();
    c.memberships_added += add.length;
    c.memberships_removed += remove.length;
    c.rows_written += add.length + remove.length;
  }
}

export { applyLinkedTeams, type OrphanedTeam, type TeamsResult } from './directory-teams.js';
