import t from 'tap';
import { createUser } from '../../../domain/users.js';
import { checkCallbackUrl, effectiveAgentPolicy, policyAllows, rewriteAgentPolicies } from '../../../web/index.js';
import { openDatabase } from '../../../domain/db/index.js';
import { dbInsertId, dbRun } from '../../helpers/db.js';

t.test('effectiveAgentPolicy: none, org-wide, team grants add up, deny wins', async (t) => {
  const database = await openDatabase({ file: ':memory:' });
  const db = database.sql;
  const sql = database.sql;
  t.teardown(() => database.close());
  const a = await createUser(database.sql, { username: 'a', email: 'a@x.test' });
  const b = await createUser(database.sql, { username: 'b', email: 'b@x.test' });
  const c = await createUser(database.sql, { username: 'c', email: 'c@x.test' });
  t.same(
    await effectiveAgentPolicy(sql, a.id),
    { tools: null, models: null, denied_tools: [], denied_models: [], policy_ids: [] },
    'no policy: unrestricted',
  );

  const org = await dbInsertId(db, "INSERT INTO organisations (name) VALUES ('Acme')");
  await dbRun(
    db,
    'INSERT INTO organisation_members (organisation_id, user_id) VALUES (?, ?), (?, ?)',
    org,
    a.id,
    org,
    b.id,
  );
  const team = await dbInsertId(db, "INSERT INTO teams (organisation_id, name) VALUES (?, 'Data')", org);
  await dbRun(db, 'INSERT INTO team_members (team_id, user_id) VALUES (?, ?)', team, b.id);
  const base = await dbInsertId(
    db,
    `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_tools, allowed_models, denied_tools)
    VALUES (?, 'base', 'all', '["send_email"]', '["small"]', '["render_chart"]')`,
    org,
  );
  const data = await dbInsertId(
    db,
    `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_tools, allowed_models)
    VALUES (?, 'data', 'teams', '["fetch_sheet","render_chart"]', NULL)`,
    org,
  );
  await dbRun(db, 'INSERT INTO agent_policy_teams (policy_id, team_id) VALUES (?, ?)', data, team);

  const pa = await effectiveAgentPolicy(sql, a.id);
  t.same(pa.tools, ['send_email']);
  t.same(pa.models, ['small']);
  t.same(pa.policy_ids, [base]);
  const pb = await effectiveAgentPolicy(sql, b.id);
  t.same(pb.tools, ['fetch_sheet', 'send_email'], 'team grant added; denied render_chart removed');
  t.equal(pb.models, null, 'a null list lifts the restriction');
  t.same(pb.policy_ids, [base, data]);
  t.notOk(policyAllows(pb, 'tool', 'render_chart'));
  t.ok(policyAllows(pb, 'model', 'anything'));
  t.same((await effectiveAgentPolicy(sql, c.id)).policy_ids, [], 'not a member: no policy');

  t.same(await rewriteAgentPolicies(sql, [a.id, b.id]), [a.id, b.id]);
  t.same(await rewriteAgentPolicies(sql, [a.id, b.id]), [], 'unchanged: nothing rewritten');
});

t.test('checkCallbackUrl: only absolute URLs on the public origin', async (t) => {
  const origin = 'https://chat.example.test';
  t.equal(checkCallbackUrl('https://chat.example.test/after?x=1#y', origin), 'https://chat.example.test/after?x=1#y');
  for (const bad of [
    '/relative',
    '//evil.test/x',
    'https://evil.test/',
    'http://chat.example.test/',
    'https://chat.example.test:444/',
    'https://user:pw@chat.example.test/',
    'javascript:alert(1)',
    'https://chat.example.test.evil.test/',
    '',
    42,
  ]) {
    t.throws(() => checkCallbackUrl(bad, origin), { code: 'ERR_SSO_CALLBACK_URL' }, String(bad));
  }
});
