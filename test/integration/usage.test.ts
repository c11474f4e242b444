import t from 'tap';
import { createMetrics } from '../../core/index.js';
import { addUser } from '../helpers/app.js';
import { startChatHarness, streamTurn } from '../helpers/chat.js';
import type { Client } from '../helpers/client.js';
import { TEST_ENGINE } from '../helpers/db.js';

/**
 * Usage, cost and budgets (docs/usage.md) over HTTP with the local runner and the scripted
 * OpenAI-shaped model (it reports usage in its last stream chunk): the report's sums are the
 * provider-reported tokens of every turn and the cost at the admin's price; a user at the cap is
 * refused before any model call with ERR_USAGE_BUDGET_EXCEEDED; an admin's raise lets the next turn
 * run; the 80 % warning in `done`; the CSV; bad input. Runs on SQLite and PostgreSQL.
 */
const PW = 'password-123456';
const PRICE = { price_input_per_mtok: 3, price_output_per_mtok: 15, price_currency: 'EUR' };

async function turnsOf(c: Client, sid: string): Promise<any[]> {
  return (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
}

t.test(`usage and budgets (${TEST_ENGINE})`, async (t) => {
  const metrics = createMetrics();
  const h = await startChatHarness(t, { chatModels: true, metrics });
  await addUser(h.app.database, 'root', PW, { superuser: true });
  const admin = h.app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const bob = await h.login('bob');
  const bobId = Number(
    (await h.app.database.sql.selectFrom('users').select('id').where('username', '=', 'bob').executeTakeFirstOrThrow())
      .id,
  );

  // Prices on the admin chat-models API: checked, one currency per install, the old contract kept.
  t.equal(
    (await admin.json('PATCH', '/api/admin/chat-models/default', { price_input_per_mtok: 1 })).body.error.code,
    'ERR_VALIDATION',
    'a price needs a currency',
  );
  t.equal(
    (await admin.json('PATCH', '/api/admin/chat-models/default', { price_input_per_mtok: -1, price_currency: 'EUR' }))
      .status,
    400,
    'no negative price',
  );
  const priced = await admin.json('PATCH', '/api/admin/chat-models/default', PRICE);
  t.equal(priced.status, 200);
  t.match(priced.body, PRICE);
  const usd = await admin.json('POST', '/api/admin/chat-models', {
    id: 'other',
    label: 'Other',
    provider: 'demo',
    model: 'demo',
    context_tokens: 1000,
    price_output_per_mtok: 1,
    price_currency: 'USD',
  });
  t.equal(usd.body.error?.code, 'ERR_USAGE_CURRENCY_MISMATCH', 'a second currency is refused');
  t.notOk(
    (await admin.json('GET', '/api/admin/chat-models')).body.models.some((m: any) => m.id === 'other'),
    'and nothing was written',
  );
  const plain = await admin.json('POST', '/api/admin/chat-models', {
    id: 'plain',
    label: 'Plain',
    provider: 'demo',
    model: 'demo',
    context_tokens: 1000,
  });
  t.equal(plain.status, 201, 'a model without a price is still added as before');
  t.equal(plain.body.price_currency, null);

  // Two turns in one chat: the rollup's sums are the tokens each turn's record holds (the provider's).
  const first = await streamTurn(bob, { message: 'hello' });
  t.equal(first.events.at(-1).type, 'done');
  t.notOk(first.events.at(-1).budget, 'no budget, no warning');
  const sid = first.sessionId!;
  const second = await streamTurn(bob, { session_id: sid, message: 'and again' });
  t.equal(second.events.at(-1).stop_reason, 'end_turn');
  const turns = await turnsOf(bob, sid);
  t.equal(turns.length, 2);
  const sum = (k: 'input_tokens' | 'output_tokens') => turns.reduce((a, x) => a + x.usage[k], 0);
  t.ok(sum('input_tokens') > 0 && sum('output_tokens') > 0, 'the provider reported tokens');
  // The scripted model's own count of the prompts it was sent (emulator/model-openai.ts).
  const prompted = h.model.requests.reduce((a, r) => a + Math.ceil(JSON.stringify(r.body.messages).length / 4), 0);
  t.equal(sum('input_tokens'), prompted, 'the recorded input tokens are what the provider counted');

  const today = new Date().toISOString().slice(0, 10);
  const byUser = await admin.json('GET', `/api/admin/usage?from=${today}&to=${today}&group=user&period=day`);
  t.equal(byUser.status, 200);
  t.equal(byUser.body.currency, 'EUR');
  const row = byUser.body.rows.find((r: any) => r.key === bobId);
  t.match(row, {
    period: today,
    group: 'user',
    name: 'bob',
    turns: 2,
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    tool_calls: 0,
    mails: 0,
  });
  const cost = Math.round(((sum('input_tokens') * 3 + sum('output_tokens') * 15) / 1e6) * 1e6) / 1e6;
  t.equal(row.cost, cost, 'cost at the admin price');
  const byModel = await admin.json('GET', `/api/admin/usage?group=model&period=month`);
  t.match(byModel.body.rows, [
    { period: today.slice(0, 7), key: 'default', turns: 2, input_tokens: sum('input_tokens') },
  ]);

  // Prometheus: by model, never by user.
  const prom = await (await fetch(`${h.app.url}/metrics`)).text();
  t.match(prom, new RegExp(`airlock_usage_tokens_total\\{model="default",kind="input"\\} ${sum('input_tokens')}\\b`));
  t.notMatch(prom, /airlock_usage_\w+\{[^}]*user/, 'no user label');

  // CSV: a header, one line per row, the currency column.
  const csvRes = await admin.request('GET', `/api/admin/usage.csv?from=${today}&to=${today}`);
  t.equal(csvRes.status, 200);
  t.match(csvRes.headers.get('content-type'), /^text\/csv/);
  const lines = (await csvRes.text()).split('\r\n');
  t.equal(
    lines[0],
    'period,group,key,name,turns,input_tokens,output_tokens,tool_calls,mails,sandbox_minutes,cost,currency',
  );
  t.equal(lines.at(-1), '', 'ends with a line break');
  t.same(lines.slice(1, -1), [
    `${today},user,${bobId},bob,2,${sum('input_tokens')},${sum('output_tokens')},0,0,0,${cost},EUR`,
  ]);

  // Bad input: 400 with its code.
  for (const q of [
    'from=2026-02-30',
    'from=2026-13-01',
    'from=yesterday',
    `from=${today}&to=2020-01-01`,
    'from=2020-01-01&to=2022-01-01',
    'group=org',
    'period=week',
    'from=2026-01-01&from=2026-01-02',
  ]) {
    const r = await admin.json('GET', `/api/admin/usage?${q}`);
    t.equal(r.status, 400, q);
    t.equal(r.body.error.code, 'ERR_USAGE_BAD_QUERY', q);
  }
  const badBudgets: [unknown, string][] = [
    [{ scope: 'user', subject_id: bobId, metric: 'tokens', period: 'day', amount: -1 }, 'ERR_VALIDATION'],
    [
      { scope: 'user', subject_id: 999_999, metric: 'tokens', period: 'day', amount: 10 },
      'ERR_USAGE_SUBJECT_NOT_FOUND',
    ],
    [
      { scope: 'team', subject_id: 999_999, metric: 'cost', period: 'month', amount: 10 },
      'ERR_USAGE_SUBJECT_NOT_FOUND',
    ],
    [{ scope: 'org', subject_id: bobId, metric: 'tokens', period: 'day', amount: 10 }, 'ERR_VALIDATION'],
    [{ scope: 'user', subject_id: bobId, metric: 'tokens', period: 'week', amount: 10 }, 'ERR_VALIDATION'],
  ];
  for (const [body, code] of badBudgets) {
    const r = await admin.json('POST', '/api/admin/budgets', body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body.error.code, code, JSON.stringify(body));
  }
  t.equal((await bob.json('GET', '/api/admin/budgets')).status, 403, 'a user cannot read budgets');
  t.equal((await bob.json('GET', '/api/admin/usage')).status, 403, 'nor usage');

  // At the cap: the next turn is refused before any model call, with its code and a sentence.
  const used = sum('input_tokens') + sum('output_tokens');
  const made = await admin.json('POST', '/api/admin/budgets', {
    scope: 'user',
    subject_id: bobId,
    metric: 'tokens',
    period: 'day',
    amount: used,
  });
  t.equal(made.status, 201);
  t.match(made.body, { scope: 'user', subject: 'bob', used, ratio: 1, since: today });
  t.equal(
    (
      await admin.json('POST', '/api/admin/budgets', {
        scope: 'user',
        subject_id: bobId,
        metric: 'tokens',
        period: 'day',
        amount: 5,
      })
    ).body.error.code,
    'ERR_USAGE_BUDGET_EXISTS',
  );
  const calls = h.model.requests.length;
  const refused = await streamTurn(bob, { session_id: sid, message: 'one more' });
  t.equal(refused.status, 429);
  t.equal(refused.error.error.code, 'ERR_USAGE_BUDGET_EXCEEDED');
  t.match(refused.error.error.message, /used up your daily token budget/);
  t.equal(h.model.requests.length, calls, 'no model call');
  t.equal((await turnsOf(bob, sid)).length, 2, 'no turn stored');

  // The admin's raise counts from the next turn. A new chat's first turn with the same prompt costs
  // what the first one did, so a raise to (used + that) / 0.9 leaves the budget at 90 % after it: a warning.
  const n1 = turns[0].usage.input_tokens + turns[0].usage.output_tokens;
  const amount = Math.ceil((used + n1) / 0.9);
  const raised = await admin.json('PATCH', `/api/admin/budgets/${made.body.id}`, { amount });
  t.equal(raised.status, 200);
  t.match(raised.body, { amount, used });
  const third = await streamTurn(bob, { message: 'hello' });
  t.equal(third.status, 200, 'the turn runs');
  const done = third.events.at(-1);
  t.equal(done.stop_reason, 'end_turn');
  const now = (await admin.json('GET', '/api/admin/usage?group=user')).body.rows.find((r: any) => r.key === bobId);
  const after = now.input_tokens + now.output_tokens;
  t.equal(now.turns, 3, 'the refused turn is not counted');
  const percent = Math.floor((after / amount) * 100);
  t.ok(percent >= 80 && percent < 100, `the budget is at ${percent} %`);
  t.match(done.budget, {
    budget_id: made.body.id,
    scope: 'user',
    metric: 'tokens',
    period: 'day',
    amount,
    used: after,
    percent,
  });
  t.equal(done.budget.message, `You have used ${percent} % of your daily token budget.`);

  // Over 100 % after a turn: the warning says the next one is refused.
  t.equal((await admin.json('PATCH', `/api/admin/budgets/${made.body.id}`, { amount: after + 1 })).status, 200);
  const fourth = await streamTurn(bob, { session_id: sid, message: 'last one' });
  t.match(fourth.events.at(-1).budget, {
    message: /used up your daily token budget: your next message will be refused/,
  });
  t.equal((await streamTurn(bob, { session_id: sid, message: 'refused' })).status, 429);

  // Raised well above: no warning; removed: no budget at all.
  t.equal((await admin.json('PATCH', `/api/admin/budgets/${made.body.id}`, { amount: after * 100 })).status, 200);
  const fifth = await streamTurn(bob, { session_id: sid, message: 'plenty left' });
  t.notOk(fifth.events.at(-1).budget, 'under 80 %: no warning');
  t.equal(
    (await admin.json('PATCH', `/api/admin/budgets/${made.body.id}`, { amount: -5 })).body.error.code,
    'ERR_VALIDATION',
  );
  t.equal((await admin.json('DELETE', `/api/admin/budgets/${made.body.id}`)).status, 204);
  t.equal(
    (await admin.json('DELETE', `/api/admin/budgets/${made.body.id}`)).body.error.code,
    'ERR_USAGE_BUDGET_NOT_FOUND',
  );
  t.same((await admin.json('GET', '/api/admin/budgets')).body.budgets, []);
});

t.test(`team budgets and the report by team (${TEST_ENGINE})`, async (t) => {
  const h = await startChatHarness(t, { chatModels: true });
  await addUser(h.app.database, 'root', PW, { superuser: true });
  const admin = h.app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const carol = await h.login('carol');
  const dave = await h.login('dave');
  const db = h.app.database.sql;
  const id = async (u: string) =>
    Number((await db.selectFrom('users').select('id').where('username', '=', u).executeTakeFirstOrThrow()).id);
  const org = await db.insertInto('organisations').values({ name: 'Acme' }).returning('id').executeTakeFirstOrThrow();
  const team = await db
    .insertInto('teams')
    .values({ organisation_id: org.id, name: 'Sales', external_group_id: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('team_members')
    .values({ team_id: team.id, user_id: await id('carol') })
    .execute();

  const one = await streamTurn(carol, { message: 'hi' });
  t.equal(one.events.at(-1).stop_reason, 'end_turn');
  await streamTurn(dave, { message: 'hi' });
  const rows = (await admin.json('GET', '/api/admin/usage?group=team')).body.rows;
  t.equal(rows.length, 2, 'the team, and the users in none');
  t.match(
    rows.find((r: any) => r.key === team.id),
    { name: 'Sales', turns: 1 },
  );
  t.match(
    rows.find((r: any) => r.key === null),
    { name: null, turns: 1 },
  );

  // A team's cost budget of 0 stops its members (no price: cost 0 ≥ 0), not the others.
  const b = await admin.json('POST', '/api/admin/budgets', {
    scope: 'team',
    subject_id: team.id,
    metric: 'cost',
    period: 'month',
    amount: 0,
  });
  t.equal(b.status, 201);
  const refused = await streamTurn(carol, { message: 'again' });
  t.equal(refused.error?.error.code, 'ERR_USAGE_BUDGET_EXCEEDED');
  t.match(refused.error.error.message, /team's \(Sales\) monthly cost budget/);
  t.equal((await streamTurn(dave, { message: 'again' })).events.at(-1).stop_reason, 'end_turn', 'others chat on');
});
