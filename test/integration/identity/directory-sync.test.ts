/**
 * The directory-sync API and job: who may start one, one job at a time, and a sync that fails
 * (upstream error, linked-teams step, rate limits, a bad key) leaving the database as before.
 * What a sync writes is in directory-sync-changes.test.ts.
 */
import t from 'tap';
import { dbRow, dbRows, dbRun, TEST_ENGINE } from '../../helpers/db.js';
import { addUser } from '../../helpers/app.js';
import { snapshot, startSync, syncAdmin as admin, syncOnce, userId } from '../../helpers/directory.js';
import { hashPassword } from '../../../core/index.js';

t.test('directory-sync API: superuser only; has_group_sync false → 409', async (t) => {
  const s = await startSync(t, { groupSync: false });
  await addUser(s.app.database, 'joe', 'joe-password-123');
  const anon = s.app.client();
  await anon.fetchCsrf();
  t.equal((await anon.json('POST', '/api/identity/directory-sync', {})).status, 401);
  const joe = s.app.client();
  await joe.login('joe', 'joe-password-123');
  const forbidden = await joe.json('POST', '/api/identity/directory-sync', {});
  t.equal(forbidden.status, 403);
  t.equal(forbidden.body.error.code, 'ERR_AUTH_FORBIDDEN');
  t.equal((await joe.json('GET', '/api/identity/directory-sync')).status, 403);
  const root = await admin(s);
  const noCsrf = await root.json('POST', '/api/identity/directory-sync', {}, { 'x-csrf-token': '' });
  t.equal(noCsrf.status, 403, 'CSRF middleware covers /api/identity');
  const r = await root.json('POST', '/api/identity/directory-sync', {});
  t.equal(r.status, 409);
  t.equal(r.body.error.code, 'ERR_SYNC_NOT_CONFIGURED');
  t.equal((await root.json('GET', '/api/identity/connections')).body.connections[0].has_group_sync, false);
  t.same((await root.json('GET', '/api/identity/directory-sync')).body, { job: null });
});

t.test('ten concurrent POSTs create one job; the running job is returned', async (t) => {
  const s = await startSync(t);
  s.dir.seed({ users: 30, groups: 3, memberships: 40 });
  s.dir.latencyMs = 100;
  const root = await admin(s);
  const answers = await Promise.all(
    Array.from({ length: 10 }, () => root.json('POST', '/api/identity/directory-sync', {})),
  );
  const ids = new Set(answers.map((a) => a.body.job.id));
  t.equal(ids.size, 1, 'one job id in all answers');
  t.equal(answers.filter((a) => a.body.created).length, 1, 'one created');
  t.same(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 202]);
  t.equal(
    Number(
      ((await dbRow(s.app.database.sql, 'SELECT COUNT(*) AS n FROM directory_sync_jobs')) as { n: number | string }).n,
    ),
    1,
  );
  // The database itself refuses a second unfinished job.
  await t.rejects(
    dbRun(
      s.app.database.sql,
      "INSERT INTO directory_sync_jobs (connection_id, trigger) VALUES (?, 'manual')",
      s.connection.id,
    ),
    /UNIQUE|duplicate key/,
  );
  await s.runner.idle();
  const job = (await root.json('GET', '/api/identity/directory-sync')).body.job;
  t.equal(job.status, 'succeeded');
  t.equal(job.result.users_created, 30);
  t.equal(job.result.fetched.memberships, 40);
});

t.test('upstream failure mid-sync: job failed with the error, database as before', async (t) => {
  const s = await startSync(t);
  s.dir.seed({ users: 40, groups: 6, memberships: 80 });
  const root = await admin(s);
  t.equal((await syncOnce(s, root)).status, 'succeeded');
  // Change the directory, then break members.list after two groups.
  s.dir.users[0].suspended = true;
  s.dir.users.splice(5, 3);
  s.dir.setMembers(s.dir.groups[0].id, []);
  s.dir.fail({ pathIncludes: '/members', after: 2, status: 503 });
  const before = await snapshot(s.app.database.sql);
  const j = await syncOnce(s, root);
  t.equal(j.status, 'failed');
  t.equal(j.error.code, 'ERR_SYNC_UPSTREAM');
  t.equal(j.error.upstream_status, 503);
  t.ok(j.finished_at);
  t.same(await snapshot(s.app.database.sql), before, 'nothing half-applied');
  t.same(s.killed, []);
  // Recovery: the next sync applies everything.
  s.dir.clearFailures();
  const ok = await syncOnce(s, root);
  t.equal(ok.status, 'succeeded');
  t.equal(ok.result.users_deactivated, 4);
});

t.test(
  'linked-teams step fails: the whole sync is rolled back, the job failed with ERR_SYNC_TEAMS_FAILED',
  async (t) => {
    const s = await startSync(t);
    const d = s.dir;
    const dom = d.domain;
    const [u1, u2, u3] = [1, 2, 3].map((i) =>
      d.addUser({ primaryEmail: `u${i}@${dom}`, name: { fullName: `User ${i}` } }),
    );
    const g = d.addGroup({ email: `eng@${dom}` });
    d.setMembers(g.id, [u1.primaryEmail]);
    const root = await admin(s);
    t.equal((await syncOnce(s, root)).status, 'succeeded');
    // A team linked to eng@ (an organisation manager's act, written directly here).
    const org = Number(
      (await dbRow(s.app.database.sql, "INSERT INTO organisations (name) VALUES ('Acme') RETURNING id")).id,
    );
    const groupId = (
      (await dbRow(s.app.database.sql, 'SELECT id FROM external_groups WHERE email = ?', g.email)) as { id: number }
    ).id;
    await dbRun(
      s.app.database.sql,
      "INSERT INTO teams (organisation_id, name, external_group_id) VALUES (?, 'Eng', ?)",
      org,
      groupId,
    );
    t.equal((await syncOnce(s, root)).result.team_members_added, 1, 'team filled once');
    // u3 has a web session; then the directory changes: u3 suspended, u2 joins eng@, u1 renamed.
    await dbRun(
      s.app.database.sql,
      'UPDATE users SET password_hash = ? WHERE email = ?',
      await hashPassword('u3-password-123'),
      u3.primaryEmail,
    );
    const u3browser = s.app.client();
    t.equal((await u3browser.login(u3.primaryEmail, 'u3-password-123')).status, 200);
    u3.suspended = true;
    u1.name.fullName = 'Renamed';
    d.setMembers(g.id, [u1.primaryEmail, u2.primaryEmail]);
    // The teams step cannot write: a trigger refuses every new team member.
    // A step of the apply fails half-way (a trigger refuses the team membership), on either engine.
    if (TEST_ENGINE === 'postgres') {
      await dbRun(
        s.app.database.sql,
        "CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$",
      );
      await dbRun(
        s.app.database.sql,
        'CREATE TRIGGER test_refuse_team_member BEFORE INSERT ON team_members FOR EACH ROW EXECUTE FUNCTION test_refuse()',
      );
    } else {
      await dbRun(
        s.app.database.sql,
        "CREATE TRIGGER test_refuse_team_member BEFORE INSERT ON team_members BEGIN SELECT RAISE(ABORT, 'refused by test'); END",
      );
    }
    const before = await snapshot(s.app.database.sql);
    const count = async (table: string) =>
      Number(((await dbRow(s.app.database.sql, `SELECT COUNT(*) AS n FROM ${table}`)) as { n: number | string }).n);
    const [sessionsBefore, actionsBefore] = [await count('web_sessions'), await count('action_log')];
    const killedBefore = s.killed.length;
    const policyBefore = s.policyChanged.length;
    const j = await syncOnce(s, root);
    t.equal(j.status, 'failed');
    t.equal(j.error.code, 'ERR_SYNC_TEAMS_FAILED');
    t.notMatch(j.error.message, /refused by test|INSERT|team_members/, 'no SQL detail in the job error');
    t.equal(j.result, null, 'no result recorded');
    t.ok(j.finished_at);
    t.same(
      await snapshot(s.app.database.sql),
      before,
      'nothing half-applied: users, groups, memberships, teams, policies as before',
    );
    t.equal(await count('web_sessions'), sessionsBefore, 'no web session ended');
    // The request and the failed end of the sync are logged; nothing the rolled-back sync did is.
    const newRows = (
      (await dbRows(
        s.app.database.sql,
        'SELECT event, severity, data FROM action_log ORDER BY id DESC LIMIT ?',
        (await count('action_log')) - actionsBefore,
      )) as { event: string; severity: string; data: string }[]
    ).reverse();
    t.same(
      newRows.map((r) => r.event),
      ['identity.directory_sync.requested', 'identity.directory_sync.finished'],
      "no deactivation logged: only the sync's request and its end",
    );
    const end = JSON.parse(newRows[1]?.data ?? '{}');
    t.match(
      { severity: newRows[1]?.severity, ...end },
      { severity: 'warning', status: 'failed', error_code: 'ERR_SYNC_TEAMS_FAILED', job_id: j.id },
      'the failed end names its error code',
    );
    t.equal((await u3browser.json('GET', '/api/auth/me')).status, 200, 'u3 is still active and logged in');
    t.equal(s.killed.length, killedBefore, 'no sandbox ended');
    t.equal(s.policyChanged.length, policyBefore, 'daemon not told of policy changes');
    t.match(s.app.logs.text(), /ERR_SYNC_TEAMS_FAILED/, 'the failure is logged');

    // Once the teams step can write again, the next sync applies everything.
    await dbRun(
      s.app.database.sql,
      TEST_ENGINE === 'postgres'
        ? 'DROP TRIGGER test_refuse_team_member ON team_members'
        : 'DROP TRIGGER test_refuse_team_member',
    );
    const ok = await syncOnce(s, root);
    t.equal(ok.status, 'succeeded', JSON.stringify(ok.error));
    t.equal(ok.result.users_deactivated, 1);
    t.equal(ok.result.team_members_added, 1);
    t.equal(ok.result.sessions_ended, 1);
    t.equal((await u3browser.json('GET', '/api/auth/me')).status, 401);
    t.same(s.killed.slice(killedBefore), [await userId(s, u3.primaryEmail)]);
  },
);

t.test(
  'rate limits are retried with backoff; a bad service-account key is refused by the token endpoint',
  async (t) => {
    const s = await startSync(t);
    s.dir.seed({ users: 10, groups: 2, memberships: 10 });
    const root = await admin(s);
    s.dir.fail({ pathIncludes: '/users', times: 1, status: 429 });
    s.dir.fail({ pathIncludes: '/groups', times: 1, status: 403, reason: 'userRateLimitExceeded' });
    const j = await syncOnce(s, root);
    t.equal(j.status, 'succeeded', JSON.stringify(j.error));
    t.ok(j.result.retries >= 2, 'retried');
    s.dir.clearFailures();
    s.dir.fail({ pathIncludes: '/groups', times: 1, status: 403, reason: 'forbidden' });
    const denied = await syncOnce(s, root);
    t.equal(denied.status, 'failed', 'a plain 403 is not retried');
    t.equal(denied.error.upstream_status, 403);
    s.dir.clearFailures();

    // A key the emulator never issued: same client_email, another private key.
    const { generateKeyPairSync } = await import('node:crypto');
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    t.equal(
      (
        await root.json('PATCH', `/api/identity/connections/${s.connection.id}`, {
          service_account_json: { ...s.dir.serviceAccount, private_key: other },
        })
      ).status,
      200,
    );
    const bad = await syncOnce(s, root);
    t.equal(bad.status, 'failed');
    t.equal(bad.error.code, 'ERR_SYNC_AUTH');
    const text = JSON.stringify(await root.json('GET', '/api/identity/connections')) + s.app.logs.text();
    t.notOk(text.includes('PRIVATE KEY'), 'no key material in responses or logs');
    t.notOk(text.includes('ya29.'), 'no access token in logs');
  },
);
