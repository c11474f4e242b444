import t from 'tap';
import { dbRow } from '../../helpers/db.js';
import { logAction } from '../../../domain/action-log.js';
import { addUser, startTestApp } from '../../helpers/app.js';

const PW = 'password-123456';

t.test(
  'organisations: rename and delete (members, teams and policies go; stored policies recomputed), all in the action log by name',
  async (t) => {
    const app = await startTestApp(t);
    const root = (await addUser(app.database, 'root', PW, { superuser: true })).id;
    const alice = (await addUser(app.database, 'alice', PW)).id;
    const c = app.client();
    t.equal((await c.login('root', PW)).status, 200);

    const org = (await c.json('POST', '/api/identity/organisations', { name: 'Acme' })).body;
    const renamed = await c.json('PATCH', `/api/identity/organisations/${org.id}`, { name: '  Acme Europe ' });
    t.equal(renamed.status, 200);
    t.equal(renamed.body.name, 'Acme Europe', 'renamed, spaces trimmed');
    const other = (await c.json('POST', '/api/identity/organisations', { name: 'Other' })).body;
    const clash = await c.json('PATCH', `/api/identity/organisations/${other.id}`, { name: 'Acme Europe' });
    t.equal(clash.status, 409);
    t.equal(clash.body.error.code, 'ERR_ORG_EXISTS');
    const blank = await c.json('PATCH', `/api/identity/organisations/${org.id}`, { name: '   ' });
    t.equal(blank.status, 400);
    t.equal(blank.body.error.field, 'name');
    t.notMatch(
      blank.body.error.message,
      /must NOT|must match pattern/,
      `a message for people: ${blank.body.error.message}`,
    );
    const long = await c.json('PATCH', `/api/identity/organisations/${org.id}`, { name: 'x'.repeat(101) });
    t.equal(long.status, 400);
    t.match(long.body.error.message, /Name is too long: at most 100 characters/);

    const team = (await c.json('POST', `/api/identity/organisations/${org.id}/teams`, { name: 'Ops' })).body;
    t.equal((await c.json('PUT', `/api/identity/teams/${team.id}/members/${alice}`)).status, 200);
    const view = (await c.json('GET', `/api/identity/organisations/${org.id}/teams`)).body.teams[0];
    t.same(view.members, [{ id: alice, username: 'alice', display_name: null }], 'the team lists its members by name');
    const pol = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
      name: 'no mail',
      applies_to: 'teams',
      team_ids: [team.id],
      denied_tools: ['send_email'],
    });
    t.equal(pol.status, 201);
    const stored = async () =>
      JSON.parse(
        (
          (await dbRow(app.database.sql, 'SELECT policy FROM user_agent_policies WHERE user_id = ?', alice)) as {
            policy: string;
          }
        ).policy,
      );
    t.same((await stored()).denied_tools, ['send_email']);

    t.equal((await c.json('DELETE', `/api/identity/organisations/${org.id}`)).status, 204);
    t.equal((await c.json('GET', `/api/identity/organisations/${org.id}/teams`)).status, 404, 'gone');
    t.equal(
      (
        (await dbRow(app.database.sql, 'SELECT COUNT(*) AS n FROM teams WHERE organisation_id = ?', org.id)) as {
          n: number;
        }
      ).n,
      0,
      'its teams went with it',
    );
    t.same((await stored()).denied_tools, [], "alice's stored policy no longer denies mail");
    t.equal((await c.json('DELETE', `/api/identity/organisations/${org.id}`)).status, 404);

    const log = await c.json('GET', '/api/data-authorization/audit?event=identity.*');
    t.equal(log.status, 200);
    const events = log.body.events as {
      event: string;
      actor: { username: string } | null;
      subject: { username: string } | null;
      data: Record<string, unknown>;
    }[];
    t.same(
      events.map((e) => e.event).reverse(),
      [
        'identity.organisation.created',
        'identity.organisation.renamed',
        'identity.organisation.created',
        'identity.team.created',
        'identity.team.member_added',
        'identity.agent_policy.created',
        'identity.organisation.deleted',
      ],
      'every identity change is logged, failed ones are not',
    );
    t.ok(
      events.every((e) => e.actor?.username === 'root'),
      'the actor by name',
    );
    t.equal(
      events.find((e) => e.event === 'identity.team.member_added')?.subject?.username,
      'alice',
      'the subject by name',
    );
    t.match(events.find((e) => e.event === 'identity.organisation.deleted')?.data, {
      name: 'Acme Europe',
      teams: 1,
      agent_policies: 1,
      users_affected: 1,
    });
    void root;
  },
);

t.test('agent policies: only tools and models that exist; "chosen teams" needs a team', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', PW, { superuser: true });
  const c = app.client();
  await c.login('root', PW);
  const org = (await c.json('POST', '/api/identity/organisations', { name: 'Acme' })).body;
  const cat = await c.json('GET', '/api/identity/agent-catalog');
  t.same(cat.body.models, ['demo'], 'the configured model');
  t.ok(cat.body.tools.includes('send_email') && cat.body.tools.includes('rasterize_chart'), "the agent's tools");

  const bad = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'p',
    applies_to: 'all',
    allowed_tools: ['send_email', 'sned_email'],
    allowed_models: ['gpt-9'],
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'ERR_POLICY_INVALID');
  t.same(
    bad.body.error.problems.map((p: { field: string }) => p.field),
    ['allowed_tools', 'allowed_models'],
    'both lists named',
  );
  t.match(bad.body.error.problems[0].message, /"sned_email" is not a tool/);
  const badDeny = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'p',
    applies_to: 'all',
    denied_models: ['nope'],
  });
  t.equal(badDeny.body.error.field, 'denied_models', 'deny lists are checked too');
  const noTeams = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'p',
    applies_to: 'teams',
    team_ids: [],
  });
  t.equal(noTeams.status, 400);
  t.equal(noTeams.body.error.field, 'team_ids');
  const noTeams2 = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'p',
    applies_to: 'teams',
  });
  t.equal(noTeams2.body.error.field, 'team_ids', 'also when team_ids is left out');
  t.equal(
    ((await dbRow(app.database.sql, 'SELECT COUNT(*) AS n FROM agent_policies')) as { n: number }).n,
    0,
    'nothing stored',
  );

  const ok = await c.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'p',
    applies_to: 'all',
    allowed_tools: ['send_email'],
    allowed_models: ['demo'],
  });
  t.equal(ok.status, 201);
  const toTeams = await c.json('PATCH', `/api/identity/agent-policies/${ok.body.id}`, { applies_to: 'teams' });
  t.equal(toTeams.status, 400, 'a PATCH to "teams" without teams is refused too');
  t.equal(toTeams.body.error.field, 'team_ids');
});

t.test(
  'validation messages name the field and the reason (no schema paths); row filters say which condition',
  async (t) => {
    const app = await startTestApp(t);
    await addUser(app.database, 'root', PW, { superuser: true });
    const c = app.client();
    await c.login('root', PW);
    const emptyName = await c.json('POST', '/api/data-authorization/roles', { name: '' });
    t.equal(emptyName.status, 400);
    t.equal(emptyName.body.error.message, 'Role name must not be empty.'.replace('Role name', 'Name'));
    const badName = await c.json('POST', '/api/data-authorization/roles', { name: '9 lives' });
    t.match(badName.body.error.message, /^Name: letters, digits, _ \. and - only, starting with a letter\.$/);
    const longDesc = await c.json('POST', '/api/data-authorization/roles', { name: 'r', description: 'd'.repeat(501) });
    t.match(longDesc.body.error.message, /Description is too long: at most 500 characters/);
    const role = (await c.json('POST', '/api/data-authorization/roles', { name: 'r', description: 'd'.repeat(500) }))
      .body;
    t.equal(role.description.length, 500, '500 characters are fine');

    const put = (body: unknown) => c.json('PUT', `/api/data-authorization/roles/${role.id}/policies/sales`, body);
    const unknownOp = await put({ allowed_columns: ['*'], row_filter: { column: 'region', op: 'like', value: 'EU%' } });
    t.equal(unknownOp.status, 400);
    t.equal(unknownOp.body.error.code, 'ERR_DATA_INVALID');
    t.equal(unknownOp.body.error.problems.length, 1, 'one problem, not one per schema branch');
    t.match(unknownOp.body.error.message, /^Row filter: "like" is not an operator; use one of eq, neq/);
    t.equal(unknownOp.body.error.field, 'row_filter.op');

    const emptyColumn = await put({
      allowed_columns: ['*'],
      row_filter: {
        all: [
          { column: 'region', op: 'eq', value: 'EU' },
          { column: '', op: 'eq', value: 1 },
        ],
      },
    });
    t.equal(emptyColumn.status, 400, 'an empty column is refused');
    t.equal(emptyColumn.body.error.message, 'Row filter, condition 2: the column is empty.');
    t.equal(emptyColumn.body.error.field, 'row_filter.all.1.column');

    const extra = await put({
      allowed_columns: ['*'],
      row_filter: { column: 'region', op: 'eq', value: 'EU', colour: 'red' },
    });
    t.equal(extra.body.error.problems.length, 1);
    t.match(extra.body.error.message, /"colour" is not a known field of a condition/);
    const badList = await put({ allowed_columns: ['*'], row_filter: { column: 'region', op: 'in', value: [] } });
    t.match(badList.body.error.message, /in takes a list of at least one value/);
    const badCols = await put({ allowed_columns: ['a b'] });
    t.match(badCols.body.error.message, /^Allowed columns, item 1: each column must be a column name/);
    const several = await put({ allowed_columns: [], row_filter: { any: [{ op: 'eq', value: 1 }] } });
    t.same(
      several.body.error.problems.map((p: { field: string }) => p.field),
      ['allowed_columns', 'row_filter.any.0.column'],
      'every problem listed once',
    );
    t.match(several.body.error.message, /\(and 1 more problem\)$/);
    const good = await put({
      allowed_columns: ['region'],
      row_filter: { column: 'owner', op: 'eq', value: '$user_id' },
    });
    t.equal(good.status, 201, 'a good filter still saves');

    for (const body of [emptyName, badName, longDesc, unknownOp, emptyColumn, extra, badList, badCols, several]) {
      t.notMatch(
        JSON.stringify(body.body),
        /must NOT|must match|additional properties|#\/\$defs|instancePath/,
        'no schema wording',
      );
    }
  },
);

t.test('action log: keyset paging without overlap, names, and a last page without a cursor', async (t) => {
  const app = await startTestApp(t);
  const root = (await addUser(app.database, 'root', PW, { superuser: true })).id;
  const bob = (await addUser(app.database, 'bob', PW)).id;
  for (let i = 0; i < 60; i++)
    await logAction(app.database.sql, { event: 'test.paging', actorId: root, subjectId: bob, data: { i } });
  const c = app.client();
  await c.login('root', PW);
  const first = await c.json('GET', '/api/data-authorization/audit?event=test.*&limit=50');
  t.equal(first.body.events.length, 50);
  t.ok(first.body.next_before, 'a cursor for the older page');
  const second = await c.json(
    'GET',
    `/api/data-authorization/audit?event=test.*&limit=50&before=${first.body.next_before}`,
  );
  t.equal(second.body.events.length, 10);
  t.equal(second.body.next_before, null, 'the last page has no cursor');
  const ids = [...first.body.events, ...second.body.events].map((e: { data: { i: number } }) => e.data.i);
  t.same(
    ids,
    Array.from({ length: 60 }, (_, i) => 59 - i),
    'every entry once, newest first',
  );
  t.same(first.body.events[0].subject, { id: bob, username: 'bob', display_name: null });
  const few = await c.json('GET', '/api/data-authorization/audit?event=auth.*&limit=50');
  t.equal(few.body.next_before, null, 'fewer than a page: no cursor');
});
