/**
 * The send policy in agent policies (docs/proxy.md#send-policy) through the admin API: mail
 * fields are stored, validated (domains, limits), shown, and combined into the effective send
 * policy with the server's AIRLOCK_MAIL_* — domain lists add up, `other` and the limits only get
 * stricter — as GET /api/identity/agent-policy reports it and the session start hands it to the proxy.
 */
import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { queryActionLog } from '../../domain/action-log.js';

const PW = 'password-123456';

t.test('agent policies carry a send policy; the effective one is the strictest combination', async (t) => {
  const app = await startTestApp(t, {
    env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example', AIRLOCK_MAIL_OTHER: 'allow', AIRLOCK_MAIL_MAX_PER_HOUR: '60' },
  });
  await addUser(app.database, 'root', PW, { superuser: true });
  const alice = (await addUser(app.database, 'alice', PW)).id;
  const bob = (await addUser(app.database, 'bob', PW)).id;
  const c = app.client();
  t.equal((await c.login('root', PW)).status, 200);
  const org = (await c.json('POST', '/api/identity/organisations', { name: 'Acme' })).body;
  for (const u of [alice, bob])
    t.equal((await c.json('PUT', `/api/identity/organisations/${org.id}/members/${u}`, {})).status, 200);
  const team = (await c.json('POST', `/api/identity/organisations/${org.id}/teams`, { name: 'Sales' })).body;
  t.equal((await c.json('PUT', `/api/identity/teams/${team.id}/members/${alice}`)).status, 200);

  const all = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'everyone',
    applies_to: 'all',
    mail_block_domains: ['evil.example'],
    mail_other: 'ask',
    mail_max_per_hour: 100,
  });
  t.equal(all.status, 201, JSON.stringify(all.body));
  t.same(
    [
      all.body.mail_block_domains,
      all.body.mail_other,
      all.body.mail_max_per_hour,
      all.body.mail_allow_domains,
      all.body.mail_max_recipients,
    ],
    [['evil.example'], 'ask', 100, [], null],
    'stored and shown',
  );
  const sales = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'sales',
    applies_to: 'teams',
    team_ids: [team.id],
    mail_allow_domains: ['partner.example'],
    mail_other: 'block',
    mail_max_recipients: 5,
    mail_max_per_hour: 20,
  });
  t.equal(sales.status, 201);

  const eff = async (uid: number) => (await c.json('GET', `/api/identity/agent-policy?user_id=${uid}`)).body.mail;
  t.same(
    await eff(alice),
    {
      allow_domains: ['corp.example', 'partner.example'],
      block_domains: ['evil.example'],
      other: 'block',
      max_recipients: 5,
      max_per_hour: 20,
      approval_timeout_s: 90,
    },
    'alice: both policies, the strictest wins',
  );
  t.same(
    await eff(bob),
    {
      allow_domains: ['corp.example'],
      block_domains: ['evil.example'],
      other: 'ask',
      max_recipients: 50,
      max_per_hour: 60,
      approval_timeout_s: 90,
    },
    "bob: a looser per-hour limit than the server's does not loosen it",
  );

  const patched = await c.json('PATCH', `/api/identity/agent-policies/${all.body.id}`, {
    mail_other: null,
    mail_block_domains: [],
  });
  t.equal(patched.status, 200);
  t.same((await eff(bob)).other, 'allow', "null: back to the server's default");

  for (const [body, field] of [
    [{ mail_allow_domains: ['@corp.example'] }, 'mail_allow_domains'],
    [{ mail_block_domains: ['Evil.Example'] }, 'mail_block_domains'],
    [{ mail_other: 'sometimes' }, 'mail_other'],
    [{ mail_max_recipients: 0 }, 'mail_max_recipients'],
  ] as const) {
    const bad = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
      name: 'bad',
      applies_to: 'all',
      ...body,
    });
    t.equal(bad.status, 400, `${field} refused`);
    t.match(String(bad.body.error.field ?? ''), field, 'named');
  }
});

t.test(
  'the server-wide send policy is kept in the database: seeded from env, read and changed by an admin, audited',
  async (t) => {
    const app = await startTestApp(t, {
      env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example', AIRLOCK_MAIL_MAX_PER_HOUR: '60' },
    });
    await addUser(app.database, 'root', PW, { superuser: true });
    const alice = (await addUser(app.database, 'alice', PW)).id;
    const c = app.client();
    t.equal((await c.login('root', PW)).status, 200);

    const first = await c.json('GET', '/api/admin/mail-policy');
    t.equal(first.status, 200);
    t.match(
      first.body,
      {
        allow_domains: ['corp.example'],
        block_domains: [],
        other: 'ask',
        max_recipients: 50,
        max_per_hour: 60,
        approval_timeout_s: 90,
        updated_by: null,
      },
      'seeded from AIRLOCK_MAIL_* (other: ask by default)',
    );

    const put = await c.json('PUT', '/api/admin/mail-policy', {
      allow_domains: ['corp.example', 'partner.example'],
      block_domains: ['rival.example'],
      other: 'block',
      max_per_hour: 5,
      approval_timeout_s: 30,
    });
    t.equal(put.status, 200, JSON.stringify(put.body));
    t.match(put.body, {
      allow_domains: ['corp.example', 'partner.example'],
      block_domains: ['rival.example'],
      other: 'block',
      max_recipients: 50,
      max_per_hour: 5,
      approval_timeout_s: 30,
    });
    t.type(put.body.updated_by, 'number');
    t.same((await c.json('GET', '/api/admin/mail-policy')).body, put.body, 'kept');

    // The effective policy is computed from the stored one, not from env.
    const eff = (await c.json('GET', `/api/identity/agent-policy?user_id=${alice}`)).body.mail;
    t.same(eff, {
      allow_domains: ['corp.example', 'partner.example'],
      block_domains: ['rival.example'],
      other: 'block',
      max_recipients: 50,
      max_per_hour: 5,
      approval_timeout_s: 30,
    });

    const log = await queryActionLog(app.database.sql, { event: 'mail.policy_changed' });
    t.equal(log.length, 1, 'one action-log entry');
    t.match(log[0].data, {
      fields: ['allow_domains', 'block_domains', 'other', 'max_per_hour', 'approval_timeout_s'],
      other: 'block',
    });
    t.equal(log[0].actor_id, put.body.updated_by);

    for (const [body, field] of [
      [{ allow_domains: ['@corp.example'] }, 'allow_domains.0'],
      [{ block_domains: ['Evil.Example'] }, 'block_domains.0'],
      [{ other: 'sometimes' }, 'other'],
      [{ max_recipients: 0 }, 'max_recipients'],
      [{ max_per_hour: 1.5 }, 'max_per_hour'],
      [{ approval_timeout_s: 200 }, 'approval_timeout_s'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const bad = await c.json('PUT', '/api/admin/mail-policy', body);
      t.equal(bad.status, 400, `${field} refused`);
      t.equal(bad.body.error.code, 'ERR_VALIDATION');
      t.equal(bad.body.error.field, field, 'named');
    }
    t.equal(
      (await queryActionLog(app.database.sql, { event: 'mail.policy_changed' })).length,
      1,
      'a refused change is not logged',
    );

    const user = app.client();
    t.equal((await user.login('alice', PW)).status, 200);
    t.equal((await user.json('GET', '/api/admin/mail-policy')).status, 403, 'a plain user cannot read it');
    t.equal((await user.json('PUT', '/api/admin/mail-policy', { other: 'allow' })).status, 403, 'nor change it');
    t.equal((await c.json('GET', '/api/admin/mail-policy')).body.other, 'block', 'unchanged');
  },
);
