import t, { type Test } from 'tap';
import { dbRow, dbRows } from '../../helpers/db.js';
import { startSync, syncAdmin, syncOnce, type SyncSetup } from '../../helpers/directory.js';
import { GROUPS_PAGE, MEMBERS_PAGE, USERS_PAGE } from '../../../daemon/directory-sync/index.js';

// The Google Directory client against the emulator: page sizes, page tokens and transient
// 5xx answers, seen from the requests the emulator recorded and the rows the sync wrote.

type Recorded = SyncSetup['dir']['requests'][number];
const API = '/admin/directory/v1';
const params = (r: Recorded) => new URLSearchParams(r.query);
const usersLists = (s: SyncSetup) => s.dir.requests.filter((r) => r.path === `${API}/users`);
const groupsLists = (s: SyncSetup) => s.dir.requests.filter((r) => r.path === `${API}/groups`);
const membersLists = (s: SyncSetup, groupId?: string) =>
  s.dir.requests.filter((r) =>
    groupId ? r.path === `${API}/groups/${groupId}/members` : /\/groups\/[^/]+\/members$/.test(r.path),
  );

/** Every (group e-mail, member e-mail) pair, from the emulator or from the database. */
function directoryPairs(s: SyncSetup): string[] {
  return s.dir.groups.flatMap((g) => (s.dir.members.get(g.id) ?? []).map((m) => `${g.email}|${m.email}`)).sort();
}
async function dbPairs(s: SyncSetup): Promise<string[]> {
  return (
    (await dbRows(
      s.app.database.sql,
      'SELECT g.email AS g, u.email AS u FROM external_group_members m JOIN external_groups g ON g.id = m.group_id JOIN users u ON u.id = m.user_id',
    )) as { g: string; u: string }[]
  )
    .map((r) => `${r.g}|${r.u}`)
    .sort();
}

/** The directory's users and groups all landed in the database. */
async function assertComplete(t: Test, s: SyncSetup): Promise<void> {
  const dirUsers = (await dbRows(
    s.app.database.sql,
    'SELECT d.email, u.is_active FROM directory_users d JOIN users u ON u.id = d.user_id',
  )) as { email: string; is_active: number }[];
  t.same(
    dirUsers.map((r) => r.email).sort(),
    s.dir.users.map((u) => u.primaryEmail).sort(),
    'every directory user synced',
  );
  t.equal(dirUsers.filter((r) => r.is_active === 1).length, s.dir.users.length, 'all active');
  const groups = (await dbRows(s.app.database.sql, 'SELECT directory_id, email, name FROM external_groups')) as {
    directory_id: string;
    email: string;
    name: string;
  }[];
  t.same(
    groups.map((g) => `${g.directory_id}|${g.email}|${g.name}`).sort(),
    s.dir.groups.map((g) => `${g.id}|${g.email}|${g.name}`).sort(),
    'every group synced',
  );
  t.same(await dbPairs(s), directoryPairs(s), 'every membership synced');
}

t.test('lists larger than a page: maxResults 500/200/200 and every nextPageToken followed', async (t) => {
  t.equal(USERS_PAGE, 500);
  t.equal(GROUPS_PAGE, 200);
  t.equal(MEMBERS_PAGE, 200);
  const s = await startSync(t);
  const d = s.dir;
  d.seed({ users: 1200, groups: 450, memberships: 1800 });
  // Member lists on either side of a page boundary: 450 → 3 pages, 200 → 1 (no token), 201 → 2.
  const [big, exact, over] = [d.groups[0], d.groups[1], d.groups[2]];
  d.setMembers(
    big.id,
    d.users.slice(0, 450).map((u) => u.primaryEmail),
  );
  d.setMembers(
    exact.id,
    d.users.slice(500, 700).map((u) => u.primaryEmail),
  );
  d.setMembers(
    over.id,
    d.users.slice(700, 901).map((u) => u.primaryEmail),
  );
  const memberships = [...d.members.values()].reduce((n, m) => n + m.length, 0);
  const root = await syncAdmin(s);
  d.requests.length = 0;

  const j = await syncOnce(s, root);
  t.equal(j.status, 'succeeded', JSON.stringify(j.error));
  t.same(j.result.fetched, { groups: 450, users: 1200, memberships });
  t.equal(j.result.users_created, 1200);
  t.equal(j.result.groups_created, 450);
  t.equal(j.result.memberships_added, memberships);
  t.equal(j.result.retries, 0);

  const checkPaging = (name: string, reqs: Recorded[], max: number, pages: number) => {
    t.equal(reqs.length, pages, `${name}: ${pages} request(s)`);
    t.same(
      reqs.map((r) => params(r).get('maxResults')),
      Array(reqs.length).fill(String(max)),
      `${name}: maxResults=${max}`,
    );
    t.notOk(params(reqs[0]).has('pageToken'), `${name}: the first request has no pageToken`);
    const tokens = reqs.slice(1).map((r) => params(r).get('pageToken'));
    t.ok(tokens.every(Boolean), `${name}: every later request carries a pageToken`);
    t.equal(new Set(tokens).size, tokens.length, `${name}: each page asked once`);
  };
  checkPaging('users.list', usersLists(s), 500, Math.ceil(1200 / 500));
  t.ok(
    usersLists(s).every((r) => params(r).get('customer') === 'my_customer' && params(r).get('projection') === 'basic'),
    'users.list: customer and projection on every page',
  );
  checkPaging('groups.list', groupsLists(s), 200, Math.ceil(450 / 200));
  checkPaging('members.list (450)', membersLists(s, big.id), 200, 3);
  checkPaging('members.list (200)', membersLists(s, exact.id), 200, 1);
  checkPaging('members.list (201)', membersLists(s, over.id), 200, 2);
  const perGroup = d.groups.reduce((n, g) => n + Math.max(1, Math.ceil((d.members.get(g.id)?.length ?? 0) / 200)), 0);
  t.equal(membersLists(s).length, perGroup, 'members.list: one request per page of every group');
  t.equal(
    j.result.requests,
    1 + usersLists(s).length + groupsLists(s).length + membersLists(s).length,
    'the client counts the same requests (+1 token)',
  );
  await assertComplete(t, s);
});

t.test('transient 5xx answers mid-sync are retried; the job succeeds with complete data', async (t) => {
  const s = await startSync(t);
  const d = s.dir;
  d.seed({ users: 1200, groups: 450, memberships: 1800 });
  d.setMembers(
    d.groups[7].id,
    d.users.slice(0, 450).map((u) => u.primaryEmail),
  );
  const root = await syncAdmin(s);
  // Groups and users are listed one page after the other, so `after` picks the page:
  // groups.list page 2 answers 500 once; users.list page 2 answers 503 twice (the helper's client
  // makes 3 attempts); one members.list in the middle answers 503 once.
  d.fail({ pathIncludes: '/groups', after: 1, times: 1, status: 500 });
  d.fail({ pathIncludes: '/users', after: 1, times: 2, status: 503 });
  d.fail({ pathIncludes: '/members', after: 100, times: 1, status: 503 });
  d.requests.length = 0;

  const j = await syncOnce(s, root);
  t.equal(j.status, 'succeeded', JSON.stringify(j.error));
  t.equal(j.result.retries, 4, 'one retry per failed answer');
  t.equal(j.result.users_created, 1200);
  t.equal(j.result.groups_created, 450);
  await assertComplete(t, s);

  // The emulator saw each failed request again, with the same query.
  const users = usersLists(s);
  t.equal(users.length, 3 + 2, 'users.list: 3 pages + 2 retries');
  t.same(
    users.map((r) => r.query),
    [users[0].query, users[1].query, users[1].query, users[1].query, users[4].query],
    'page 2 asked three times',
  );
  t.ok(params(users[1]).get('pageToken'), 'the retried request is page 2, with its pageToken');
  t.not(users[4].query, users[1].query, 'then page 3');
  const groups = groupsLists(s);
  t.equal(groups.length, 3 + 1, 'groups.list: 3 pages + 1 retry');
  t.same(
    groups.map((r) => r.query),
    [groups[0].query, groups[1].query, groups[1].query, groups[3].query],
  );
  const members = membersLists(s);
  const expected = d.groups.reduce((n, g) => n + Math.max(1, Math.ceil((d.members.get(g.id)?.length ?? 0) / 200)), 0);
  t.equal(members.length, expected + 1, 'members.list: one request asked twice');
  const asked = new Map<string, number>();
  for (const r of members) asked.set(r.path + r.query, (asked.get(r.path + r.query) ?? 0) + 1);
  t.same(
    [...asked.values()].filter((n) => n > 1),
    [2],
    'exactly one members request repeated, once',
  );

  // A re-sync against the recovered directory finds nothing to do.
  d.clearFailures();
  const again = await syncOnce(s, root);
  t.equal(again.status, 'succeeded');
  t.equal(again.result.retries, 0);
  t.equal(again.result.rows_written, 0);
});

t.test('a 5xx that outlasts the attempts fails the job after exactly maxAttempts requests', async (t) => {
  const s = await startSync(t);
  s.dir.seed({ users: 600, groups: 3, memberships: 10 });
  const root = await syncAdmin(s);
  s.dir.fail({ pathIncludes: '/users', after: 1, times: 3, status: 503 });
  s.dir.requests.length = 0;
  const j = await syncOnce(s, root);
  t.equal(j.status, 'failed');
  t.equal(j.error.code, 'ERR_SYNC_UPSTREAM');
  t.equal(j.error.upstream_status, 503);
  const users = usersLists(s);
  t.equal(users.length, 1 + 3, 'page 1, then page 2 three times (the helper client makes 3 attempts)');
  t.same(new Set(users.slice(1).map((r) => r.query)).size, 1, 'the same page each time');
  t.equal(
    ((await dbRow(s.app.database.sql, 'SELECT COUNT(*) AS n FROM directory_users')) as { n: number }).n,
    0,
    'nothing written',
  );
});

t.test("a 429 with Retry-After waits as long as the directory asks, not the client's own backoff", async (t) => {
  // The client's backoff alone would wait ~1 ms; Retry-After: 1 asks for a second.
  const s = await startSync(t, { client: { baseDelayMs: 1, maxDelayMs: 5000 } });
  s.dir.seed({ users: 20, groups: 2, memberships: 5 });
  const root = await syncAdmin(s);
  s.dir.fail({ pathIncludes: '/users', times: 1, status: 429, retryAfterS: 1 });
  s.dir.requests.length = 0;
  const j = await syncOnce(s, root);
  t.equal(j.status, 'succeeded', JSON.stringify(j.error));
  t.equal(j.result.retries, 1);
  const users = usersLists(s);
  t.equal(users.length, 2, 'users.list refused once, then asked again');
  t.same(users[1].query, users[0].query, 'the same page');
  const waited = users[1].at - users[0].at;
  t.ok(waited >= 950, `the client waited the ${waited} ms the directory asked for (Retry-After: 1)`);
  await assertComplete(t, s);
});
