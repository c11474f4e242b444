import t from 'tap';
import { dbRow, dbRows, dbRun } from '../../helpers/db.js';
import { addUser, startTestApp, type TestApp } from '../../helpers/app.js';
import type { Client } from '../../helpers/client.js';
import { identityEncryptor, saveConnection } from '../../../web/index.js';

/**
 * The organisation / team / agent-policy management API (/api/identity), as organisation
 * managers and superusers use it: who may do what, and what each change does to members and to
 * their effective agent policy.
 */

const PW = 'org-admin-password-1';

interface OrgSetup {
  app: TestApp;
  root: Client;
  /** Manager of organisation A, of organisation B. */
  mA: Client;
  mB: Client;
  orgA: number;
  orgB: number;
  ids: Record<string, number>;
  /** Two synced groups: g1 = u1, u2 and the inactive gone1; g2 = u3. */
  g1: number;
  g2: number;
}

async function login(app: TestApp, username: string): Promise<Client> {
  const c = app.client();
  const r = await c.login(username, PW);
  if (r.status !== 200) throw new Error(`login ${username}: ${r.status}`);
  return c;
}

async function setup(t: { teardown(fn: () => unknown): void }): Promise<OrgSetup> {
  const app = await startTestApp(t);
  const ids: Record<string, number> = {};
  for (const name of ['root', 'mgrA', 'mgrA2', 'mgrB', 'u1', 'u2', 'u3', 'gone1']) {
    ids[name] = (await addUser(app.database, name, PW, { superuser: name === 'root' })).id;
  }
  await dbRun(app.database.sql, 'UPDATE users SET is_active = 0 WHERE id = ?', ids.gone1);
  const root = await login(app, 'root');
  const orgA = (await root.json('POST', '/api/identity/organisations', { name: 'Org A' })).body.id as number;
  const orgB = (await root.json('POST', '/api/identity/organisations', { name: 'Org B' })).body.id as number;
  for (const [org, user] of [
    [orgA, 'mgrA'],
    [orgA, 'mgrA2'],
    [orgB, 'mgrB'],
  ] as const) {
    const r = await root.json('PUT', `/api/identity/organisations/${org}/members/${ids[user]}`, { role: 'manager' });
    if (r.status !== 200) throw new Error(`naming ${user}: ${r.status}`);
  }
  // Synced groups, as the directory sync writes them.
  const conn = await saveConnection(app.database.sql, identityEncryptor(app.config), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'cid',
  });
  const group = async (dirId: string, email: string, members: number[]) => {
    const id = Number(
      (
        await dbRow(
          app.database.sql,
          "INSERT INTO external_groups (connection_id, directory_id, email, name, synced_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z') RETURNING id",
          conn.id,
          dirId,
          email,
          email,
        )
      ).id,
    );
    for (const u of members)
      await dbRun(app.database.sql, 'INSERT INTO external_group_members (group_id, user_id) VALUES (?, ?)', id, u);
    return id;
  };
  const g1 = await group('g1', 'eng@example.test', [ids.u1, ids.u2, ids.gone1]);
  const g2 = await group('g2', 'ops@example.test', [ids.u3]);
  return { app, root, mA: await login(app, 'mgrA'), mB: await login(app, 'mgrB'), orgA, orgB, ids, g1, g2 };
}

const roleOf = async (s: OrgSetup, org: number, user: number) =>
  (
    (await dbRow(
      s.app.database.sql,
      'SELECT role FROM organisation_members WHERE organisation_id = ? AND user_id = ?',
      org,
      user,
    )) as { role: string } | undefined
  )?.role;
const teamMembers = async (s: OrgSetup, team: number) =>
  (
    (await dbRows(s.app.database.sql, 'SELECT user_id FROM team_members WHERE team_id = ? ORDER BY user_id', team)) as {
      user_id: number;
    }[]
  ).map((r) => r.user_id);
const policyIds = async (s: OrgSetup, user: number) =>
  (await s.root.json('GET', `/api/identity/agent-policy?user_id=${user}`)).body.policy.policy_ids as number[];
const stored = async (s: OrgSetup, user: number) =>
  JSON.parse(
    (
      (await dbRow(s.app.database.sql, 'SELECT policy FROM user_agent_policies WHERE user_id = ?', user)) as
        { policy: string } | undefined
    )?.policy ?? 'null',
  ) as { policy_ids: number[] } | null;

t.test(
  "organisation members: a manager adds, changes and removes plain members only; managers are a superuser's",
  async (t) => {
    const s = await setup(t);
    const { mA, mB, root, orgA, ids } = s;
    const members = `/api/identity/organisations/${orgA}/members`;
    const forbidden = (r: { status: number; body: { error: { code: string } } }, what: string) => {
      t.equal(r.status, 403, what);
      t.equal(r.body.error.code, 'ERR_AUTH_FORBIDDEN', what);
    };
    // An org-wide policy shows membership's effect on the agent policy.
    const all = await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, {
      name: 'everyone',
      applies_to: 'all',
      denied_tools: ['send_email'],
    });
    t.equal(all.status, 201);

    // Plain members: add (default role), keep, remove.
    const added = await mA.json('PUT', `${members}/${ids.u1}`);
    t.equal(added.status, 200);
    t.same(added.body, { organisation_id: orgA, user_id: ids.u1, role: 'member' });
    t.equal((await mA.json('PUT', `${members}/${ids.u1}`, { role: 'member' })).status, 200);
    t.same(await policyIds(s, ids.u1), [all.body.id], "a member is under the organisation's policies");
    t.same((await stored(s, ids.u1))?.policy_ids, [all.body.id], 'stored sandbox policy written');
    const listed = await mA.json('GET', members);
    t.same(listed.body.members, [
      { user_id: ids.mgrA, role: 'manager' },
      { user_id: ids.mgrA2, role: 'manager' },
      { user_id: ids.u1, role: 'member' },
    ]);
    t.equal((await mA.json('DELETE', `${members}/${ids.u1}`)).status, 204);
    t.equal(await roleOf(s, orgA, ids.u1), undefined, 'removed');
    t.same(await policyIds(s, ids.u1), [], "no longer under the organisation's policies");
    t.same((await stored(s, ids.u1))?.policy_ids, [], 'stored sandbox policy rewritten');

    // Naming a manager.
    forbidden(await mA.json('PUT', `${members}/${ids.u2}`, { role: 'manager' }), 'manager names a new manager');
    t.equal(await roleOf(s, orgA, ids.u2), undefined);
    t.equal((await mA.json('PUT', `${members}/${ids.u2}`)).status, 200);
    forbidden(await mA.json('PUT', `${members}/${ids.u2}`, { role: 'manager' }), 'manager promotes a member');
    t.equal(await roleOf(s, orgA, ids.u2), 'member');

    // Touching another manager (or oneself): demote by an empty body, by role member, remove.
    forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`), 'PUT {} would demote a manager');
    forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, {}), 'PUT {} would demote a manager');
    forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, { role: 'member' }), 'demote a manager');
    forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, { role: 'manager' }), 'even a no-op on a manager');
    forbidden(await mA.json('DELETE', `${members}/${ids.mgrA2}`), 'remove a manager');
    forbidden(await mA.json('PUT', `${members}/${ids.mgrA}`, { role: 'member' }), 'demote oneself');
    forbidden(await mA.json('DELETE', `${members}/${ids.mgrA}`), 'remove oneself');
    t.equal(await roleOf(s, orgA, ids.mgrA2), 'manager', 'still a manager');
    t.equal(await roleOf(s, orgA, ids.mgrA), 'manager');

    // A manager of another organisation, a plain member, anonymous.
    forbidden(await mB.json('PUT', `${members}/${ids.u3}`), 'manager of B adds to A');
    forbidden(await mB.json('DELETE', `${members}/${ids.u2}`), 'manager of B removes from A');
    forbidden(await mB.json('GET', members), 'manager of B lists A');
    t.equal(await roleOf(s, orgA, ids.u2), 'member');
    t.equal(await roleOf(s, orgA, ids.u3), undefined);
    const u2 = await login(s.app, 'u2');
    forbidden(await u2.json('PUT', `${members}/${ids.u3}`), 'plain member adds');
    forbidden(await u2.json('DELETE', `${members}/${ids.mgrA}`), 'plain member removes a manager');
    const anon = s.app.client();
    await anon.fetchCsrf();
    t.equal((await anon.json('PUT', `${members}/${ids.u3}`)).status, 401);

    // Bad targets.
    t.equal((await mA.json('PUT', `${members}/99999`)).body.error.code, 'ERR_USER_NOT_FOUND');
    t.equal(
      (await mA.json('PUT', `/api/identity/organisations/99999/members/${ids.u3}`)).body.error.code,
      'ERR_ORG_NOT_FOUND',
    );
    t.equal((await mA.json('PUT', `${members}/${ids.u3}`, { role: 'owner' })).status, 400);

    // The superuser manages managers.
    const demoted = await root.json('PUT', `${members}/${ids.mgrA2}`, { role: 'member' });
    t.equal(demoted.status, 200);
    t.equal(await roleOf(s, orgA, ids.mgrA2), 'member');
    t.equal(
      (await mA.json('DELETE', `${members}/${ids.mgrA2}`)).status,
      204,
      'now a plain member, a manager may remove them',
    );
    t.equal((await root.json('PUT', `${members}/${ids.u2}`, { role: 'manager' })).status, 200);
    t.equal(await roleOf(s, orgA, ids.u2), 'manager');
    t.equal((await root.json('DELETE', `${members}/${ids.u2}`)).status, 204);
    t.equal(await roleOf(s, orgA, ids.u2), undefined);
  },
);

t.test("teams: PATCH (rename, link, re-link, unlink) and DELETE; other organisations' managers refused", async (t) => {
  const s = await setup(t);
  const { mA, mB, orgA, orgB, ids, g1, g2 } = s;
  const team = (await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'Core' })).body;
  t.equal(team.external_group_id, null);
  const other = await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'Other' });
  t.equal(other.status, 201);
  t.equal((await mA.json('PUT', `/api/identity/teams/${team.id}/members/${ids.u3}`)).status, 200, 'manual member');
  const policy = await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, {
    name: 'core only',
    applies_to: 'teams',
    team_ids: [team.id],
    allowed_tools: ['fetch_sheet'],
  });
  t.equal(policy.status, 201);
  t.same(await policyIds(s, ids.u3), [policy.body.id], "a team member is under the team's policy");

  // Rename; a name taken in the organisation is a conflict (the same name in B is fine).
  const renamed = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { name: 'Core team' });
  t.equal(renamed.status, 200);
  t.equal(renamed.body.name, 'Core team');
  t.same(renamed.body.member_ids, [ids.u3], 'a rename leaves members alone');
  const clash = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { name: 'Other' });
  t.equal(clash.status, 409);
  t.equal(clash.body.error.code, 'ERR_TEAM_EXISTS');
  t.equal((await mB.json('POST', `/api/identity/organisations/${orgB}/teams`, { name: 'Core team' })).status, 201);

  // Link to g1: the team takes g1's ACTIVE members at once (u1, u2; not the inactive gone1, and
  // no longer the manual u3), and the team's policy follows.
  const linked = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { external_group_id: g1 });
  t.equal(linked.status, 200);
  t.equal(linked.body.external_group_id, g1);
  t.same(linked.body.member_ids, [ids.u1, ids.u2]);
  t.same(await policyIds(s, ids.u1), [policy.body.id]);
  t.same(await policyIds(s, ids.u3), [], 'the manual member left with the link');
  t.same((await stored(s, ids.u1))?.policy_ids, [policy.body.id], 'stored sandbox policies rewritten');
  t.same((await stored(s, ids.u3))?.policy_ids, []);
  const locked = await mA.json('PUT', `/api/identity/teams/${team.id}/members/${ids.u3}`);
  t.equal(locked.status, 409);
  t.equal(locked.body.error.code, 'ERR_TEAM_LINKED');

  // Re-link to g2: g1's members must not keep the team (and its policy) until the next sync.
  const relinked = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { external_group_id: g2 });
  t.equal(relinked.status, 200);
  t.same(relinked.body.member_ids, [ids.u3]);
  t.same(await policyIds(s, ids.u1), [], "the old group's members lost the team's policy");
  t.same(await policyIds(s, ids.u3), [policy.body.id]);

  // Unlink: the team keeps its members and is a manual team again.
  const unlinked = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { external_group_id: null });
  t.equal(unlinked.status, 200);
  t.equal(unlinked.body.external_group_id, null);
  t.same(unlinked.body.member_ids, [ids.u3]);
  t.equal(
    (await mA.json('PUT', `/api/identity/teams/${team.id}/members/${ids.u1}`)).status,
    200,
    'manual edits allowed again',
  );
  t.equal((await mA.json('DELETE', `/api/identity/teams/${team.id}/members/${ids.u1}`)).status, 200);

  const noGroup = await mA.json('PATCH', `/api/identity/teams/${team.id}`, { external_group_id: 99999 });
  t.equal(noGroup.status, 404);
  t.equal(noGroup.body.error.code, 'ERR_GROUP_NOT_FOUND');
  t.equal(
    (await mA.json('PATCH', `/api/identity/teams/${team.id}`, { organisation_id: orgB })).status,
    400,
    'a team cannot move organisation',
  );

  // A team created linked is filled at once too.
  const created = await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, {
    name: 'Eng',
    external_group_id: g1,
  });
  t.equal(created.status, 201);
  t.same(created.body.member_ids, [ids.u1, ids.u2]);

  // The manager of B can neither change nor delete A's team, nor edit its members.
  const before = (await mA.json('GET', `/api/identity/organisations/${orgA}/teams`)).body;
  for (const [method, path, body] of [
    ['PATCH', `/api/identity/teams/${team.id}`, { name: 'taken over' }],
    ['PATCH', `/api/identity/teams/${team.id}`, { external_group_id: g1 }],
    ['DELETE', `/api/identity/teams/${team.id}`, undefined],
    ['PUT', `/api/identity/teams/${team.id}/members/${ids.mgrB}`, undefined],
    ['DELETE', `/api/identity/teams/${team.id}/members/${ids.u3}`, undefined],
    ['GET', `/api/identity/organisations/${orgA}/teams`, undefined],
    ['POST', `/api/identity/organisations/${orgA}/teams`, { name: 'B was here' }],
  ] as const) {
    const r = await mB.json(method, path, body);
    t.equal(r.status, 403, `${method} ${path}`);
    t.equal(r.body.error.code, 'ERR_AUTH_FORBIDDEN');
  }
  t.same((await mA.json('GET', `/api/identity/organisations/${orgA}/teams`)).body, before, "A's teams unchanged");

  // Delete: members lose the team's policy; the policy no longer names the team.
  t.equal((await mA.json('DELETE', `/api/identity/teams/${team.id}`)).status, 204);
  t.same(await teamMembers(s, team.id), []);
  t.same(await policyIds(s, ids.u3), []);
  t.same((await stored(s, ids.u3))?.policy_ids, [], 'stored sandbox policy rewritten');
  const p = await mA.json('GET', `/api/identity/organisations/${orgA}/agent-policies`);
  t.same(p.body.policies.find((x: { id: number }) => x.id === policy.body.id).team_ids, []);
  const again = await mA.json('DELETE', `/api/identity/teams/${team.id}`);
  t.equal(again.status, 404);
  t.equal(again.body.error.code, 'ERR_TEAM_NOT_FOUND');
  t.equal((await mA.json('PATCH', `/api/identity/teams/${team.id}`, { name: 'x' })).status, 404);
});

t.test("agent policies: PATCH and DELETE; other organisations' managers and teams refused", async (t) => {
  const s = await setup(t);
  const { mA, mB, root, orgA, orgB, ids } = s;
  const teamA = (await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'A team' })).body;
  const teamA2 = (await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'A team 2' })).body;
  const teamB = (await mB.json('POST', `/api/identity/organisations/${orgB}/teams`, { name: 'B team' })).body;
  await mA.json('PUT', `/api/identity/teams/${teamA.id}/members/${ids.u1}`);
  await mA.json('PUT', `/api/identity/teams/${teamA2.id}/members/${ids.u2}`);
  await mA.json('PUT', `/api/identity/organisations/${orgA}/members/${ids.u3}`);
  await mB.json('PUT', `/api/identity/teams/${teamB.id}/members/${ids.u2}`);

  const created = await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, {
    name: 'sheets',
    applies_to: 'teams',
    team_ids: [teamA.id],
    allowed_tools: ['fetch_sheet'],
    allowed_models: ['demo'],
  });
  t.equal(created.status, 201);
  const pid = created.body.id as number;
  const effective = async (u: number) =>
    (await s.root.json('GET', `/api/identity/agent-policy?user_id=${u}`)).body.policy;
  t.same((await effective(ids.u1)).tools, ['fetch_sheet']);

  // team_ids from another organisation (or unknown) are refused, on create and on change.
  const foreign = await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, {
    name: 'sneaky',
    applies_to: 'teams',
    team_ids: [teamB.id],
    denied_tools: ['send_email'],
  });
  t.equal(foreign.status, 400);
  t.equal(foreign.body.error.code, 'ERR_VALIDATION');
  t.equal(
    (
      (await dbRow(s.app.database.sql, "SELECT COUNT(*) AS n FROM agent_policies WHERE name = 'sneaky'")) as {
        n: number;
      }
    ).n,
    0,
    'not created',
  );
  const foreignPatch = await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, {
    team_ids: [teamA.id, teamB.id],
    denied_tools: ['send_email'],
  });
  t.equal(foreignPatch.status, 400);
  t.equal(foreignPatch.body.error.code, 'ERR_VALIDATION');
  const unknown = await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, { team_ids: [99999] });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.code, 'ERR_TEAM_NOT_FOUND');
  const unchanged = (await mA.json('GET', `/api/identity/organisations/${orgA}/agent-policies`)).body.policies[0];
  t.same(unchanged.team_ids, [teamA.id], 'a refused change changes nothing');
  t.same(unchanged.denied_tools, []);
  t.same(
    await effective(ids.u2),
    { tools: null, models: null, denied_tools: [], denied_models: [], policy_ids: [] },
    "B's team member untouched",
  );

  // PATCH: lists, teams, applies_to; effective and stored policies follow.
  const patched = await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, {
    allowed_tools: ['fetch_sheet', 'send_email'],
    denied_models: ['demo'],
    team_ids: [teamA2.id],
  });
  t.equal(patched.status, 200);
  t.same(patched.body.team_ids, [teamA2.id]);
  t.same(patched.body.allowed_tools, ['fetch_sheet', 'send_email']);
  t.same(
    await effective(ids.u1),
    { tools: null, models: null, denied_tools: [], denied_models: [], policy_ids: [] },
    "u1's team no longer named",
  );
  t.same((await effective(ids.u2)).tools, ['fetch_sheet', 'send_email']);
  t.same((await effective(ids.u2)).models, [], 'the only allowed model is denied');
  t.same((await stored(s, ids.u1))?.policy_ids, []);
  t.same((await stored(s, ids.u2))?.policy_ids, [pid]);
  const toAll = await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, {
    applies_to: 'all',
    allowed_tools: null,
  });
  t.equal(toAll.status, 200);
  t.equal(toAll.body.allowed_tools, null);
  for (const u of [ids.u1, ids.u2, ids.u3, ids.mgrA])
    t.same((await effective(u)).policy_ids, [pid], 'every member of A, by membership or team');
  t.same((await effective(ids.mgrB)).policy_ids, [], "not B's manager");
  await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, { name: 'second', applies_to: 'all' });
  const dup = await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, { name: 'second' });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'ERR_POLICY_EXISTS');
  t.equal((await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, { applies_to: 'some' })).status, 400);
  t.equal(
    (await mA.json('PATCH', `/api/identity/agent-policies/${pid}`, { organisation_id: orgB })).status,
    400,
    'a policy cannot move organisation',
  );

  // The manager of B can neither change nor delete A's policy.
  for (const [method, body] of [
    ['PATCH', { denied_tools: ['fetch_sheet'] }],
    ['PATCH', { team_ids: [teamB.id] }],
    ['DELETE', undefined],
  ] as const) {
    const r = await mB.json(method, `/api/identity/agent-policies/${pid}`, body);
    t.equal(r.status, 403, method);
    t.equal(r.body.error.code, 'ERR_AUTH_FORBIDDEN');
  }
  t.equal((await mB.json('GET', `/api/identity/organisations/${orgA}/agent-policies`)).status, 403);
  t.equal(
    (await mB.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, { name: 'x', applies_to: 'all' }))
      .status,
    403,
  );
  t.same((await effective(ids.u1)).denied_tools, [], 'unchanged');

  // DELETE: policy gone, every member's effective and stored policy rewritten.
  t.equal((await mA.json('DELETE', `/api/identity/agent-policies/${pid}`)).status, 204);
  for (const u of [ids.u1, ids.u2, ids.u3]) t.notOk((await effective(u)).policy_ids.includes(pid), 'no longer applies');
  t.notOk((await stored(s, ids.u2))?.policy_ids.includes(pid), 'stored policy rewritten');
  t.equal(
    (
      (await dbRow(s.app.database.sql, 'SELECT COUNT(*) AS n FROM agent_policy_teams WHERE policy_id = ?', pid)) as {
        n: number;
      }
    ).n,
    0,
  );
  const gone = await mA.json('DELETE', `/api/identity/agent-policies/${pid}`);
  t.equal(gone.status, 404);
  t.equal(gone.body.error.code, 'ERR_POLICY_NOT_FOUND');
  t.equal((await root.json('PATCH', `/api/identity/agent-policies/${pid}`, { name: 'x' })).status, 404);
});

t.test('deleting the IdP connection unlinks and empties the teams linked to its groups', async (t) => {
  const s = await setup(t);
  const { mA, root, orgA, ids, g1 } = s;
  const team = (
    await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'Eng', external_group_id: g1 })
  ).body;
  const manual = (await mA.json('POST', `/api/identity/organisations/${orgA}/teams`, { name: 'Manual' })).body;
  await mA.json('PUT', `/api/identity/teams/${manual.id}/members/${ids.u3}`);
  const policy = (
    await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, {
      name: 'eng',
      applies_to: 'teams',
      team_ids: [team.id, manual.id],
    })
  ).body;
  t.same(team.member_ids, [ids.u1, ids.u2]);
  const conn = ((await dbRow(s.app.database.sql, 'SELECT id FROM idp_connections')) as { id: number }).id;
  t.equal((await mA.json('DELETE', `/api/identity/connections/${conn}`)).status, 403, 'superuser only');
  t.equal((await root.json('DELETE', `/api/identity/connections/${conn}`)).status, 204);
  const after = (await mA.json('GET', `/api/identity/organisations/${orgA}/teams`)).body.teams as {
    id: number;
    external_group_id: number | null;
    member_ids: number[];
  }[];
  t.same(
    after.find((x) => x.id === team.id),
    { ...after.find((x) => x.id === team.id), external_group_id: null, member_ids: [] },
    'unlinked and emptied',
  );
  t.same(after.find((x) => x.id === manual.id)!.member_ids, [ids.u3], 'a manual team is untouched');
  t.same(await policyIds(s, ids.u1), [], "the group's former members lost the team's policy");
  t.same((await stored(s, ids.u1))?.policy_ids, []);
  t.same(await policyIds(s, ids.u3), [policy.id]);
  const logged = (await dbRows(
    s.app.database.sql,
    "SELECT severity, actor_id, data FROM action_log WHERE event = 'identity.team_unlinked'",
  )) as { severity: string; actor_id: number; data: string }[];
  t.equal(logged.length, 1);
  t.equal(logged[0].severity, 'warning');
  t.equal(logged[0].actor_id, ids.root);
  t.match(JSON.parse(logged[0].data), {
    reason: 'connection_deleted',
    team_id: team.id,
    group_id: g1,
    group_email: 'eng@example.test',
    members_removed: 2,
  });
});
