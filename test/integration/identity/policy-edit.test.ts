import t from 'tap';
import { sql } from 'kysely';
import { addUser, startTestApp } from '../../helpers/app.js';

/**
 * What the admin page's policy editor and effective-policy view use: a PATCH that changes every
 * field at once (tools, models, mail rules) and is logged with the fields it sent; refusals of bad
 * input (unknown tool or model, a limit out of range, a bad id) that change nothing; and
 * GET /agent-policy naming the policies that apply, with their organisation, and the mail rules
 * in force.
 */

const PW = 'policy-edit-password-1';

t.test(
  'PATCH an agent policy whole; bad input refused and nothing changed; the effective policy names its policies',
  async (t) => {
    const app = await startTestApp(t);
    const db = app.database.sql;
    await addUser(app.database, 'root', PW, { superuser: true });
    const ann = await addUser(app.database, 'ann', PW);
    const bob = await addUser(app.database, 'bob', PW);
    const root = app.client();
    t.equal((await root.login('root', PW)).status, 200);

    const org = (await root.json('POST', '/api/identity/organisations', { name: 'Acme' })).body.id as number;
    t.equal(
      (await root.json('PUT', `/api/identity/organisations/${org}/members/${ann.id}`, { role: 'member' })).status,
      200,
    );
    const created = await root.json('POST', `/api/identity/organisations/${org}/agent-policies`, {
      name: 'sheets only',
      applies_to: 'all',
      allowed_tools: ['fetch_sheet'],
    });
    t.equal(created.status, 201);
    const pid = created.body.id as number;
    const other = (
      await root.json('POST', `/api/identity/organisations/${org}/agent-policies`, {
        name: 'no demo',
        applies_to: 'all',
        denied_models: ['demo'],
      })
    ).body.id as number;

    // The whole form at once, as the page sends it.
    const whole = {
      name: 'sheets and mail',
      applies_to: 'all',
      team_ids: [],
      allowed_tools: ['fetch_sheet', 'send_email'],
      allowed_models: null,
      denied_tools: ['render_chart'],
      denied_models: [],
      mail_allow_domains: ['corp.example'],
      mail_block_domains: ['rival.example'],
      mail_other: 'ask',
      mail_max_recipients: 5,
      mail_max_per_hour: 20,
    };
    const patched = await root.json('PATCH', `/api/identity/agent-policies/${pid}`, whole);
    t.equal(patched.status, 200);
    t.match(patched.body, { ...whole, id: pid, organisation_id: org });
    const logged = await db
      .selectFrom('action_log')
      .select(['data', 'actor_id'])
      .where('event', '=', 'identity.agent_policy.updated')
      .execute();
    t.equal(logged.length, 1, 'one audit entry');
    t.match(JSON.parse(logged[0].data), { policy_id: pid, name: 'sheets and mail', fields: Object.keys(whole).sort() });

    // Bad input: each refused with its code, the policy as it was, no audit entry.
    const before = await db.selectFrom('agent_policies').selectAll().where('id', '=', pid).executeTakeFirstOrThrow();
    const bad: [unknown, number, string][] = [
      [{ allowed_tools: ['shell'] }, 400, 'ERR_POLICY_INVALID'],
      [{ denied_models: ['gpt-9'] }, 400, 'ERR_POLICY_INVALID'],
      [{ mail_max_recipients: 0 }, 400, 'ERR_VALIDATION'],
      [{ mail_other: 'sometimes' }, 400, 'ERR_VALIDATION'],
      [{ mail_allow_domains: 'corp.example' }, 400, 'ERR_VALIDATION'],
      [{ applies_to: 'teams', team_ids: [] }, 400, 'ERR_POLICY_INVALID'],
    ];
    for (const [body, status, code] of bad) {
      const r = await root.json('PATCH', `/api/identity/agent-policies/${pid}`, body);
      t.equal(r.status, status, `${JSON.stringify(body)}: ${status}`);
      t.equal(r.body.error?.code, code, `${JSON.stringify(body)}: ${code}`);
    }
    t.same(
      await db.selectFrom('agent_policies').selectAll().where('id', '=', pid).executeTakeFirstOrThrow(),
      before,
      'unchanged',
    );
    const entries = await db
      .selectFrom('action_log')
      .select(sql<number>`count(*)`.as('n'))
      .where('event', '=', 'identity.agent_policy.updated')
      .executeTakeFirstOrThrow();
    t.equal(Number(entries.n), 1, 'no entry for a refusal');
    t.equal(
      (await root.json('PATCH', '/api/identity/agent-policies/999999', { name: 'x' })).status,
      404,
      'no such policy',
    );
    t.equal((await root.json('PATCH', '/api/identity/agent-policies/abc', { name: 'x' })).status, 400, 'a bad id');

    // The effective policy: the policies by name with their organisation, and the mail rules.
    const eff = await root.json('GET', `/api/identity/agent-policy?user_id=${ann.id}`);
    t.equal(eff.status, 200);
    t.same(eff.body.policy.policy_ids, [pid, other]);
    t.same(eff.body.policies, [
      { id: pid, name: 'sheets and mail', organisation_id: org, organisation_name: 'Acme' },
      { id: other, name: 'no demo', organisation_id: org, organisation_name: 'Acme' },
    ]);
    // Allowed lists combine as a union ("no demo" restricts no tool); denials add up.
    t.match(eff.body.policy, { tools: null, denied_tools: ['render_chart'], denied_models: ['demo'] });
    t.match(eff.body.mail, { other: 'ask', max_recipients: 5, max_per_hour: 20 });
    t.ok(
      eff.body.mail.allow_domains.includes('corp.example') && eff.body.mail.block_domains.includes('rival.example'),
      "the policy's domains are in force",
    );
    const none = await root.json('GET', `/api/identity/agent-policy?user_id=${bob.id}`);
    t.same(none.body.policies, [], 'not a member: no policy');
    for (const q of ['abc', '0', '-1'])
      t.equal(
        (await root.json('GET', `/api/identity/agent-policy?user_id=${q}`)).body.error?.code,
        'ERR_VALIDATION',
        `user_id=${q}`,
      );
    const plain = app.client();
    t.equal((await plain.login('bob', PW)).status, 200);
    t.equal(
      (await plain.json('GET', `/api/identity/agent-policy?user_id=${ann.id}`)).status,
      403,
      "a plain user cannot read another's",
    );
    t.equal(
      (await plain.json('PATCH', `/api/identity/agent-policies/${pid}`, { name: 'mine' })).status,
      403,
      'nor change a policy',
    );
  },
);
