import t from 'tap';
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
    ids[name] = (await addUser(app.db, name, PW, { superuser: name === 'root' })).id;
  }
  app.db.prepare('UPDATE users SET is_active = 0 WHERE id = ?').run(ids.gone1);
  const root = await login(app, 'root');
  const orgA = (await root.json('POST', '/api/identity/organisations', { name: 'Org A' })).body.id as number;
  const orgB = (await root.json('POST', '/api/identity/organisations', { name: 'Org B' })).body.id as number;
  for (const [org, user] of [[orgA, 'mgrA'], [orgA, 'mgrA2'], [orgB, 'mgrB']] as const) {
    const r = await root.json('PUT', `/api/identity/organisations/${org}/members/${ids[user]}`, { role: 'manager' });
    if (r.status !== 200) throw new Error(`naming ${user}: ${r.status}`);
  }
  // Synced groups, as the directory sync writes them.
  const conn = saveConnection(app.db, identityEncryptor(app.config), { provider: 'google', issuer: 'https://accounts.google.com', client_id: 'cid' });
  const group = (dirId: string, email: string, members: number[]) => {
    const id = Number(
      app.db.prepare("INSERT INTO external_groups (connection_id, directory_id, email, name, synced_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z')").run(conn.id, dirId, email, email).lastInsertRowid,
    );
    for (const u of members) app.db.prepare('INSERT INTO external_group_members (group_id, user_id) VALUES (?, ?)').run(id, u);
    return id;
  };
  const g1 = group('g1', 'eng@example.test', [ids.u1, ids.u2, ids.gone1]);
  const g2 = group('g2', 'ops@example.test', [ids.u3]);
  return { app, root, mA: await login(app, 'mgrA'), mB: await login(app, 'mgrB'), orgA, orgB, ids, g1, g2 };
}

const roleOf = (s: OrgSetup, org: number, user: number) =>
  (s.app.db.prepare('SELECT role FROM organisation_members WHERE organisation_id = ? AND user_id = ?').get(org, user) as { role: string } | undefined)?.role;
const teamMembers = (s: OrgSetup, team: number) =>
  (s.app.db.prepare('SELECT user_id FROM team_members WHERE team_id = ? ORDER BY user_id').all(team) as { user_id: number }[]).map((r) => r.user_id);
const policyIds = async (s: OrgSetup, user: number) => (await s.root.json('GET', `/api/identity/agent-policy?user_id=${user}`)).body.policy.policy_ids as number[];
const stored = (s: OrgSetup, user: number) =>
  JSON.parse((s.app.db.prepare('SELECT policy FROM user_agent_policies WHERE user_id = ?').get(user) as { policy: string } | undefined)?.policy ?? 'null') as { policy_ids: number[] } | null;

t.test('organisation members: a manager adds, changes and removes plain members only; managers are a superuser\'s', async (t) => {
  const s = await setup(t);
  const { mA, mB, root, orgA, ids } = s;
  const members = `/api/identity/organisations/${orgA}/members`;
  const forbidden = (r: { status: number; body: { error: { code: string } } }, what: string) => {
    t.equal(r.status, 403, what);
    t.equal(r.body.error.code, 'ERR_AUTH_FORBIDDEN', what);
  };
  // An org-wide policy shows membership's effect on the agent policy.
  const all = await mA.json('POST', `/api/identity/organisations/${orgA}/agent-policies`, { name: 'everyone', applies_to: 'all', denied_tools: ['send_email'] });
  t.equal(all.status, 201);

  // Plain members: add (default role), keep, remove.
  const added = await mA.json('PUT', `${members}/${ids.u1}`);
  t.equal(added.status, 200);
  t.same(added.body, { organisation_id: orgA, user_id: ids.u1, role: 'member' });
  t.equal((await mA.json('PUT', `${members}/${ids.u1}`, { role: 'member' })).status, 200);
  t.same(await policyIds(s, ids.u1), [all.body.id], 'a member is under the organisation\'s policies');
  t.same(stored(s, ids.u1)?.policy_ids, [all.body.id], 'stored sandbox policy written');
  const listed = await mA.json('GET', members);
  t.same(listed.body.members, [
    { user_id: ids.mgrA, role: 'manager' },
    { user_id: ids.mgrA2, role: 'manager' },
    { user_id: ids.u1, role: 'member' },
  ]);
  t.equal((await mA.json('DELETE', `${members}/${ids.u1}`)).status, 204);
  t.equal(roleOf(s, orgA, ids.u1), undefined, 'removed');
  t.same(await policyIds(s, ids.u1), [], 'no longer under the organisation\'s policies');
  t.same(stored(s, ids.u1)?.policy_ids, [], 'stored sandbox policy rewritten');

  // Naming a manager.
  forbidden(await mA.json('PUT', `${members}/${ids.u2}`, { role: 'manager' }), 'manager names a new manager');
  t.equal(roleOf(s, orgA, ids.u2), undefined);
  t.equal((await mA.json('PUT', `${members}/${ids.u2}`)).status, 200);
  forbidden(await mA.json('PUT', `${members}/${ids.u2}`, { role: 'manager' }), 'manager promotes a member');
  t.equal(roleOf(s, orgA, ids.u2), 'member');

  // Touching another manager (or oneself): demote by an empty body, by role member, remove.
  forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`), 'PUT {} would demote a manager');
  forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, {}), 'PUT {} would demote a manager');
  forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, { role: 'member' }), 'demote a manager');
  forbidden(await mA.json('PUT', `${members}/${ids.mgrA2}`, { role: 'manager' }), 'even a no-op on a manager');
  forbidden(await mA.json('DELETE', `${members}/${ids.mgrA2}`), 'remove a manager');
  forbidden(await mA.json('PUT', `${members}/${ids.mgrA}`, { role: 'member' }), 'demote oneself');
  forbidden(await mA.json('DELETE', `${members}/${ids.mgrA}`), 'remove oneself');
  t.equal(roleOf(s, orgA, ids.mgrA2), 'manager', 'still a manager');
  t.equal(roleOf(s, orgA, ids.mgrA), 'manager');

  // A manager of another organisation, a plain member, anonymous.
  forbidden(await mB.json('PUT', `${members}/${ids.u3}`), 'manager of B adds to A');
  forbidden(await mB.json('DELETE', `${members}/${ids.u2}`), 'manager of B removes from A');
  forbidden(await mB.json('GET', members), 'manager of B lists A');
  t.equal(roleOf(s, orgA, ids.u2), 'member');
  t.equal(roleOf(s, orgA, ids.u3), undefined);
  const u2 = await login(s.app, 'u2');
  forbidden(await u2.json('PUT', `${members}/${ids.u3}`), 'plain member adds');
  forbidden(await u2.json('DELETE', `${members}/${ids.mgrA}`), 'plain member removes a manager');
  const anon = s.app.client();
  await anon.fetchCsrf();
  t.equal((await anon.json('PUT', `${members}/${ids.u3}`)).status, 401);

  // Bad targets.
  t.equal((await mA.json('PUT', `${members}/99999`)).body.error.code, 'ERR_USER_NOT_FOUND');
  t.equal((await mA.json('PUT', `/api/identity/organisations/99999/members/${ids.u3}`)).body.error.code, 'ERR_ORG_NOT_FOUND');
  t.equal((await mA.json('PUT', `${members}/${ids.u3}`, { role: 'owner' })).status, 400);

  // The superuser manages managers.
  const demoted = await root.json('PUT', `${members}/${ids.mgrA2}`, { role: 'member' });
  t.equal(demoted.status, 200);
  t.equal(roleOf(s, orgA, ids.mgrA2), 'member');
  t.equal((await mA.json('DELETE', `${members}/${ids.mgrA2}`)).status, 204, 'now a plain member, a manager may remove them');
  t.equal((await root.json('PUT', `${members}/${ids.u2}`, { role: 'manager' })).status, 200);
  t.equal(roleOf(s, orgA, ids.u2), 'manager');
  t.equal((await root.json('DELETE', `${members}/${ids.u2}`)).status, 204);
  t.equal(roleOf(s, orgA, ids.u2), undefined);
});
