/**
 * What a directory sync writes: memberships, deactivations and linked teams following the
 * directory, groups gone or renamed, archived users, the last superuser kept, and addresses reused.
 */
import t from 'tap';
import { dbRow, dbRows, dbRun } from '../../helpers/db.js';
import { addUser } from '../../helpers/app.js';
import { groupMembers, snapshot, startSync, syncAdmin as admin, syncOnce, userId } from '../../helpers/directory.js';
import { hashPassword } from '../../../core/index.js';

t.test(
  'sync adds, updates, removes memberships, deactivates removed/suspended users; linked team follows; re-sync writes nothing',
  async (t) => {
    const s = await startSync(t);
    const d = s.dir;
    const dom = d.domain;
    const [u1, u2, u3, u4, u5] = [1, 2, 3, 4, 5].map((i) =>
      d.addUser({ primaryEmail: `u${i}@${dom}`, name: { fullName: `User ${i}` } }),
    );
    const g1 = d.addGroup({ email: `eng@${dom}`, name: 'Engineering' });
    const g2 = d.addGroup({ email: `ops@${dom}`, name: 'Ops' });
    d.setMembers(g1.id, [u1.primaryEmail, u2.primaryEmail, 'outsider@other.test']);
    d.setMembers(g2.id, [u3.primaryEmail]);
    const local4 = await addUser(s.app.database, 'local4', 'local-password-4', { email: u4.primaryEmail });
    const root = await admin(s);

    const j1 = await syncOnce(s, root);
    t.equal(j1.status, 'succeeded', JSON.stringify(j1.error));
    t.equal(j1.result.users_created, 4);
    t.equal(j1.result.users_linked, 1, 'existing local account linked by e-mail');
    t.equal(await userId(s, u4.primaryEmail), local4.id);
    t.equal(j1.result.groups_created, 2);
    t.equal(j1.result.memberships_added, 3);
    t.same(await groupMembers(s, `eng@${dom}`), [u1.primaryEmail, u2.primaryEmail]);

    // An organisation manager links a team to eng@.
    const mgr = await addUser(s.app.database, 'manager', 'manager-password-1');
    const org = await root.json('POST', '/api/identity/organisations', { name: 'Acme' });
    t.equal(org.status, 201);
    t.equal(
      (await root.json('PUT', `/api/identity/organisations/${org.body.id}/members/${mgr.id}`, { role: 'manager' }))
        .status,
      200,
    );
    const m = s.app.client();
    await m.login('manager', 'manager-password-1');
    const groups = await m.json('GET', '/api/identity/external-groups?q=eng');
    t.equal(groups.status, 200);
    t.equal(groups.body.groups.length, 1);
    const team = await m.json('POST', `/api/identity/organisations/${org.body.id}/teams`, {
      name: 'Eng team',
      external_group_id: groups.body.groups[0].id,
    });
    t.equal(team.status, 201);
    t.same(
      team.body.member_ids,
      [await userId(s, u1.primaryEmail), await userId(s, u2.primaryEmail)].sort((a, b) => a! - b!),
      'a team linked to a group takes its members at once',
    );
    const policy = await m.json('POST', `/api/identity/organisations/${org.body.id}/agent-policies`, {
      name: 'eng tools',
      applies_to: 'teams',
      team_ids: [team.body.id],
      allowed_tools: ['send_email', 'fetch_sheet'],
      allowed_models: ['demo'],
    });
    t.equal(policy.status, 201);
    const outsider = s.app.client();
    await addUser(s.app.database, 'nobody', 'nobody-password-1');
    await outsider.login('nobody', 'nobody-password-1');
    t.equal(
      (await outsider.json('POST', `/api/identity/organisations/${org.body.id}/teams`, { name: 'x' })).status,
      403,
      'non-manager refused',
    );
    t.equal((await m.json('POST', '/api/identity/directory-sync', {})).status, 403, 'manager is not a superuser');

    // u2 logs in (has a web session) before being suspended.
    await dbRun(
      s.app.database.sql,
      'UPDATE users SET password_hash = ? WHERE email = ?',
      await hashPassword('u2-password-123'),
      u2.primaryEmail,
    );
    const u2browser = s.app.client();
    t.equal((await u2browser.login(u2.primaryEmail, 'u2-password-123')).status, 200);

    const j2 = await syncOnce(s, root);
    t.equal(j2.result.team_members_added, 0, 'team already filled when it was linked');
    t.same(
      (
        (await dbRows(
          s.app.database.sql,
          'SELECT u.email FROM team_members tm JOIN users u ON u.id = tm.user_id WHERE tm.team_id = ? ORDER BY u.email',
          team.body.id,
        )) as { email: string }[]
      ).map((r) => r.email),
      [u1.primaryEmail, u2.primaryEmail],
    );
    const u1id = (await userId(s, u1.primaryEmail))!;
    const pol = await root.json('GET', `/api/identity/agent-policy?user_id=${u1id}`);
    t.same(pol.body.policy.tools, ['fetch_sheet', 'send_email'], 'team member gets the team policy');
    t.ok(
      await dbRow(s.app.database.sql, 'SELECT 1 FROM user_agent_policies WHERE user_id = ?', u1id),
      'sandbox policy rewritten',
    );
    t.ok(s.policyChanged.flat().includes(u1id), 'the optional policyChanged hook is called');

    // The directory changes.
    u1.name.fullName = 'User One Renamed';
    u2.suspended = true;
    d.users.splice(d.users.indexOf(u5), 1);
    d.setMembers(g1.id, [u1.primaryEmail, u2.primaryEmail, u3.primaryEmail]);
    d.setMembers(g2.id, []);
    const u6 = d.addUser({ primaryEmail: `u6@${dom}` });
    d.setMembers(g2.id, [u6.primaryEmail]);

    const j3 = await syncOnce(s, root);
    t.equal(j3.status, 'succeeded');
    t.equal(j3.result.users_created, 1);
    t.equal(j3.result.users_updated, 1);
    t.equal(j3.result.users_deactivated, 2, 'suspended u2 and removed u5');
    t.equal(j3.result.memberships_added, 2, 'u3 → eng, u6 → ops');
    t.equal(j3.result.memberships_removed, 1, 'u3 left ops');
    t.same(
      await groupMembers(s, `eng@${dom}`),
      [u1.primaryEmail, u2.primaryEmail, u3.primaryEmail],
      'group rows mirror the directory',
    );
    t.same(await groupMembers(s, `ops@${dom}`), [u6.primaryEmail]);
    const active = async (e: string) =>
      ((await dbRow(s.app.database.sql, 'SELECT is_active FROM users WHERE email = ?', e)) as { is_active: number })
        .is_active;
    t.equal(await active(u2.primaryEmail), 0);
    t.equal(await active(u5.primaryEmail), 0);
    t.equal(await active(u1.primaryEmail), 1);
    t.equal(
      (
        (await dbRow(s.app.database.sql, 'SELECT display_name FROM users WHERE id = ?', u1id)) as {
          display_name: string;
        }
      ).display_name,
      'User One Renamed',
    );
    t.equal((await u2browser.json('GET', '/api/auth/me')).status, 401, 'deactivated user lost the web session at once');
    t.equal(
      (
        (await dbRow(
          s.app.database.sql,
          'SELECT COUNT(*) AS n FROM web_sessions WHERE user_id = ?',
          await userId(s, u2.primaryEmail),
        )) as { n: number }
      ).n,
      0,
    );
    t.same(
      s.killed.sort(),
      [await userId(s, u2.primaryEmail), await userId(s, u5.primaryEmail)].sort(),
      'sandboxes killed',
    );
    // The linked team follows the group's ACTIVE members: u3 in, u2 (suspended) out.
    t.same(
      (
        (await dbRows(
          s.app.database.sql,
          'SELECT u.email FROM team_members tm JOIN users u ON u.id = tm.user_id WHERE tm.team_id = ? ORDER BY u.email',
          team.body.id,
        )) as { email: string }[]
      ).map((r) => r.email),
      [u1.primaryEmail, u3.primaryEmail],
    );
    t.equal(
      (await m.json('PUT', `/api/identity/teams/${team.body.id}/members/${mgr.id}`)).body.error.code,
      'ERR_TEAM_LINKED',
    );

    // Immediate re-sync: nothing written.
    const before = await snapshot(s.app.database.sql);
    const j4 = await syncOnce(s, root);
    t.equal(j4.status, 'succeeded');
    t.equal(j4.result.rows_written, 0, 'no rows written');
    t.same(await snapshot(s.app.database.sql), before, 'data tables unchanged');

    // Unsuspended: the account comes back.
    u2.suspended = false;
    const j5 = await syncOnce(s, root);
    t.equal(j5.result.users_reactivated, 1);
    t.equal(await active(u2.primaryEmail), 1);
  },
);

t.test(
  'a group gone from the directory: its linked team is unlinked and emptied in the same sync (warning, action log)',
  async (t) => {
    const s = await startSync(t);
    const d = s.dir;
    const dom = d.domain;
    const [u1, u2, u3] = [1, 2, 3].map((i) => d.addUser({ primaryEmail: `u${i}@${dom}` }));
    const eng = d.addGroup({ email: `eng@${dom}`, name: 'Engineering' });
    const ops = d.addGroup({ email: `ops@${dom}`, name: 'Ops' });
    d.setMembers(eng.id, [u1.primaryEmail, u2.primaryEmail]);
    d.setMembers(ops.id, [u3.primaryEmail]);
    const root = await admin(s);
    t.equal((await syncOnce(s, root)).status, 'succeeded');
    const [id1, id2, id3] = await Promise.all([u1, u2, u3].map(async (u) => (await userId(s, u.primaryEmail))!));
    const gid = async (email: string) =>
      ((await dbRow(s.app.database.sql, 'SELECT id FROM external_groups WHERE email = ?', email)) as { id: number }).id;

    // An organisation with two linked teams and a policy for the eng team.
    const org = (await root.json('POST', '/api/identity/organisations', { name: 'Acme' })).body.id;
    const engTeam = (
      await root.json('POST', `/api/identity/organisations/${org}/teams`, {
        name: 'Eng',
        external_group_id: await gid(eng.email),
      })
    ).body;
    const opsTeam = (
      await root.json('POST', `/api/identity/organisations/${org}/teams`, {
        name: 'Ops',
        external_group_id: await gid(ops.email),
      })
    ).body;
    const policy = (
      await root.json('POST', `/api/identity/organisations/${org}/agent-policies`, {
        name: 'eng',
        applies_to: 'teams',
        team_ids: [engTeam.id],
        allowed_tools: ['fetch_sheet'],
      })
    ).body;
    t.same(engTeam.member_ids, [id1, id2]);
    const policyIds = async (uid: number) =>
      (await root.json('GET', `/api/identity/agent-policy?user_id=${uid}`)).body.policy.policy_ids;
    t.same(await policyIds(id1), [policy.id]);
    const teamRow = async (id: number) =>
      (await dbRow(s.app.database.sql, 'SELECT external_group_id FROM teams WHERE id = ?', id)) as {
        external_group_id: number | null;
      };
    const members = async (id: number) =>
      (
        (await dbRows(
          s.app.database.sql,
          'SELECT user_id FROM team_members WHERE team_id = ? ORDER BY user_id',
          id,
        )) as { user_id: number }[]
      ).map((r) => r.user_id);
    const changedBefore = s.policyChanged.length;

    // eng@ is deleted in the directory.
    d.groups.splice(d.groups.indexOf(eng), 1);
    const j = await syncOnce(s, root);
    t.equal(j.status, 'succeeded', JSON.stringify(j.error));
    t.equal(j.result.groups_deleted, 1);
    t.equal(j.result.memberships_removed, 0, "the group's member rows went with it (not counted as removals)");
    t.equal((await teamRow(engTeam.id)).external_group_id, null, 'team unlinked');
    t.same(await members(engTeam.id), [], "and emptied: the group's last members do not keep it");
    t.equal(j.result.teams_unlinked, 1);
    t.equal(j.result.team_members_removed, 2);
    t.equal(j.result.teams_updated, 1);
    t.equal(j.result.policies_rewritten, 2);
    // group rows: 1 group + 2 member rows + 1 team unlinked; teams step: 2 members + 2 policies.
    t.equal(j.result.rows_written, 8);
    t.same(j.result.warnings, [
      {
        code: 'WARN_SYNC_TEAM_GROUP_DELETED',
        message: j.result.warnings[0].message,
        team_id: engTeam.id,
        organisation_id: org,
        team: 'Eng',
        group_id: engTeam.external_group_id,
        group_email: eng.email,
        members_removed: 2,
      },
    ]);
    t.match(j.result.warnings[0].message, eng.email);
    const logged = (await dbRows(
      s.app.database.sql,
      "SELECT severity, data FROM action_log WHERE event = 'identity.team_unlinked'",
    )) as { severity: string; data: string }[];
    t.equal(logged.length, 1, 'one action-log entry');
    t.equal(logged[0].severity, 'warning');
    t.match(JSON.parse(logged[0].data), {
      by: 'directory_sync',
      job_id: j.id,
      reason: 'group_deleted',
      team_id: engTeam.id,
      group_email: eng.email,
      members_removed: 2,
    });
    t.match(s.app.logs.text(), /linked group gone: team unlinked and emptied/);
    // The team's policy no longer reaches the group's former members.
    t.same(await policyIds(id1), []);
    t.same(await policyIds(id2), []);
    for (const uid of [id1, id2])
      t.same(
        JSON.parse(
          (
            (await dbRow(s.app.database.sql, 'SELECT policy FROM user_agent_policies WHERE user_id = ?', uid)) as {
              policy: string;
            }
          ).policy,
        ).policy_ids,
        [],
        'stored sandbox policy rewritten',
      );
    t.same(s.policyChanged.slice(changedBefore).flat().sort(), [id1, id2], 'policyChanged hook told');
    // Other teams and users are untouched; the users stay active.
    t.equal((await teamRow(opsTeam.id)).external_group_id, await gid(ops.email));
    t.same(await members(opsTeam.id), [id3]);
    t.equal(
      (
        (await dbRow(
          s.app.database.sql,
          'SELECT COUNT(*) AS n FROM users WHERE is_active = 1 AND id IN (?, ?)',
          id1,
          id2,
        )) as { n: number }
      ).n,
      2,
    );

    // A re-sync writes nothing and warns no more; the team is a manual team now.
    const again = await syncOnce(s, root);
    t.equal(again.result.rows_written, 0);
    t.equal(again.result.teams_unlinked, 0);
    t.notOk(again.result.warnings, 'no warning');
    t.equal(
      (await root.json('PUT', `/api/identity/teams/${engTeam.id}/members/${id1}`)).status,
      200,
      'editable by hand again',
    );
  },
);

t.test(
  'a group renamed in the directory: the next sync updates the same ExternalGroup row; links and members stay',
  async (t) => {
    const s = await startSync(t);
    const d = s.dir;
    const dom = d.domain;
    const [u1, u2] = [1, 2].map((i) => d.addUser({ primaryEmail: `u${i}@${dom}` }));
    const eng = d.addGroup({ email: `eng@${dom}`, name: 'Engineering', description: 'builds things' });
    const ops = d.addGroup({ email: `ops@${dom}`, name: 'Ops' });
    d.setMembers(eng.id, [u1.primaryEmail, u2.primaryEmail]);
    const root = await admin(s);
    t.equal((await syncOnce(s, root)).result.groups_created, 2);
    const row = async (directoryId: string) =>
      (await dbRow(
        s.app.database.sql,
        'SELECT id, email, name, description FROM external_groups WHERE directory_id = ?',
        directoryId,
      )) as { id: number; email: string; name: string; description: string };
    const engRow = await row(eng.id);
    const opsRow = await row(ops.id);
    t.equal(engRow.name, 'Engineering');
    const org = Number(
      (await dbRow(s.app.database.sql, "INSERT INTO organisations (name) VALUES ('Acme') RETURNING id")).id,
    );
    const team = Number(
      (
        await dbRow(
          s.app.database.sql,
          "INSERT INTO teams (organisation_id, name, external_group_id) VALUES (?, 'Eng', ?) RETURNING id",
          org,
          engRow.id,
        )
      ).id,
    );
    t.equal((await syncOnce(s, root)).result.team_members_added, 2, 'linked team filled');

    // Renamed in the directory (same group id).
    eng.name = 'Platform Engineering';
    const j = await syncOnce(s, root);
    t.equal(j.status, 'succeeded', JSON.stringify(j.error));
    t.equal(j.result.groups_updated, 1, 'the rename is reported');
    t.equal(j.result.groups_created, 0);
    t.equal(j.result.groups_deleted, 0);
    t.equal(j.result.memberships_added + j.result.memberships_removed, 0);
    t.equal(j.result.team_members_added + j.result.team_members_removed, 0);
    t.equal(j.result.rows_written, 1, 'only the group row');
    t.same(await row(eng.id), { ...engRow, name: 'Platform Engineering' }, 'same row, new name');
    t.same(await row(ops.id), opsRow, 'the other group untouched');
    t.equal(
      (
        (await dbRow(s.app.database.sql, 'SELECT external_group_id FROM teams WHERE id = ?', team)) as {
          external_group_id: number;
        }
      ).external_group_id,
      engRow.id,
      'team stays linked',
    );
    t.same(await groupMembers(s, `eng@${dom}`), [u1.primaryEmail, u2.primaryEmail]);
    const listed = await root.json('GET', '/api/identity/external-groups?q=platform');
    t.same(
      listed.body.groups.map((g: { id: number; name: string }) => [g.id, g.name]),
      [[engRow.id, 'Platform Engineering']],
      'the API shows the new name',
    );

    // A new address and description: also an update of the same row; then nothing to do.
    eng.email = `platform@${dom}`;
    eng.description = '';
    const j2 = await syncOnce(s, root);
    t.equal(j2.result.groups_updated, 1);
    t.same(await row(eng.id), {
      id: engRow.id,
      email: `platform@${dom}`,
      name: 'Platform Engineering',
      description: '',
    });
    t.same(await groupMembers(s, `platform@${dom}`), [u1.primaryEmail, u2.primaryEmail]);
    const j3 = await syncOnce(s, root);
    t.equal(j3.result.groups_updated, 0);
    t.equal(j3.result.rows_written, 0);
  },
);

t.test('archived users are deactivated like suspended ones and come back when unarchived', async (t) => {
  const s = await startSync(t);
  const d = s.dir;
  const dom = d.domain;
  const u1 = d.addUser({ primaryEmail: `u1@${dom}` });
  const u2 = d.addUser({ primaryEmail: `u2@${dom}`, archived: true });
  const u3 = d.addUser({ primaryEmail: `u3@${dom}` });
  const root = await admin(s);
  const active = async (e: string) =>
    ((await dbRow(s.app.database.sql, 'SELECT is_active FROM users WHERE email = ?', e)) as { is_active: number })
      .is_active;
  const dirRow = async (e: string) =>
    (await dbRow(
      s.app.database.sql,
      'SELECT archived, suspended, deactivated_by_sync FROM directory_users WHERE email = ?',
      e,
    )) as Record<string, number>;

  // Archived from the start: the account is created inactive.
  const j1 = await syncOnce(s, root);
  t.equal(j1.status, 'succeeded', JSON.stringify(j1.error));
  t.equal(j1.result.users_created, 3);
  t.equal(await active(u2.primaryEmail), 0, 'archived new user created inactive');
  t.same(await dirRow(u2.primaryEmail), { archived: 1, suspended: 0, deactivated_by_sync: 1 });

  // An active user with a web session is archived: deactivated, session and sandboxes ended.
  await dbRun(
    s.app.database.sql,
    'UPDATE users SET password_hash = ? WHERE email = ?',
    await hashPassword('u3-password-123'),
    u3.primaryEmail,
  );
  const u3browser = s.app.client();
  t.equal((await u3browser.login(u3.primaryEmail, 'u3-password-123')).status, 200);
  u3.archived = true;
  const j2 = await syncOnce(s, root);
  t.equal(j2.result.users_deactivated, 1);
  t.equal(j2.result.sessions_ended, 1);
  t.equal(await active(u3.primaryEmail), 0);
  t.same(await dirRow(u3.primaryEmail), { archived: 1, suspended: 0, deactivated_by_sync: 1 });
  t.equal((await u3browser.json('GET', '/api/auth/me')).status, 401, 'web session ended');
  t.same(s.killed, [await userId(s, u3.primaryEmail)], 'sandboxes ended');

  // Archived and suspended: back only once neither holds.
  u1.archived = true;
  u1.suspended = true;
  t.equal((await syncOnce(s, root)).result.users_deactivated, 1);
  u1.archived = false;
  const j3 = await syncOnce(s, root);
  t.equal(j3.result.users_reactivated, 0, 'still suspended');
  t.equal(await active(u1.primaryEmail), 0);
  t.same(await dirRow(u1.primaryEmail), { archived: 0, suspended: 1, deactivated_by_sync: 1 });

  // Unarchived (and unsuspended): the accounts the sync deactivated come back.
  u1.suspended = false;
  u2.archived = false;
  u3.archived = false;
  const j4 = await syncOnce(s, root);
  t.equal(j4.result.users_reactivated, 3);
  for (const u of [u1, u2, u3]) t.equal(await active(u.primaryEmail), 1, `${u.primaryEmail} active again`);
  t.same(await dirRow(u2.primaryEmail), { archived: 0, suspended: 0, deactivated_by_sync: 0 });

  // An account an admin deactivated by hand is not brought back by an archive/unarchive cycle.
  await dbRun(s.app.database.sql, 'UPDATE users SET is_active = 0 WHERE email = ?', u3.primaryEmail);
  u3.archived = true;
  t.equal((await syncOnce(s, root)).result.users_deactivated, 0);
  u3.archived = false;
  t.equal((await syncOnce(s, root)).result.users_reactivated, 0);
  t.equal(await active(u3.primaryEmail), 0);
});

t.test('never deactivates the last active superuser', async (t) => {
  const s = await startSync(t);
  const root = await admin(s);
  const r = s.dir.addUser({ primaryEmail: 'root@local.test', suspended: true });
  s.dir.addUser({ primaryEmail: `x@${s.dir.domain}` });
  const j = await syncOnce(s, root);
  t.equal(j.status, 'succeeded');
  t.equal(j.result.kept_last_superuser, await userId(s, r.primaryEmail));
  t.equal((await root.json('GET', '/api/auth/me')).status, 200, 'still logged in');
});

t.test(
  'an address reused by a new directory user does not take over the old account; an empty listing changes nothing',
  async (t) => {
    const s = await startSync(t);
    const old = s.dir.addUser({ primaryEmail: `reused@${s.dir.domain}` });
    s.dir.addUser({ primaryEmail: `keep@${s.dir.domain}` });
    const root = await admin(s);
    t.equal((await syncOnce(s, root)).status, 'succeeded');
    const oldId = (await userId(s, old.primaryEmail))!;
    s.dir.users.splice(s.dir.users.indexOf(old), 1);
    s.dir.addUser({ primaryEmail: old.primaryEmail });
    const j = await syncOnce(s, root);
    t.equal(j.status, 'succeeded', JSON.stringify(j.error));
    t.equal(j.result.email_conflicts, 1);
    t.equal(await userId(s, old.primaryEmail), oldId, 'the address stays with the old, now deactivated, account');
    t.equal(
      ((await dbRow(s.app.database.sql, 'SELECT is_active FROM users WHERE id = ?', oldId)) as { is_active: number })
        .is_active,
      0,
    );

    const before = await snapshot(s.app.database.sql);
    s.dir.users.length = 0;
    const empty = await syncOnce(s, root);
    t.equal(empty.status, 'failed');
    t.equal(empty.error.code, 'ERR_SYNC_EMPTY_DIRECTORY');
    t.same(await snapshot(s.app.database.sql), before);
  },
);
