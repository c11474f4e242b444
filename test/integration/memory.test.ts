import t from 'tap';
import { mintAgentUserToken } from '../../core/index.js';
import { TEST_SECRETS, addUser, startTestApp, tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const app = await startTestApp(t);
  const alice = await addUser(app.database, 'alice', 'alice-password-1');
  const bob = await addUser(app.database, 'bob', 'bob-password-1');
  const a = app.client();
  const b = app.client();
  await a.login('alice', 'alice-password-1');
  await b.login('bob', 'bob-password-1');
  return { app, alice, bob, a, b };
}

t.test('users add, list and delete only their own memories', async (t) => {
  const { app, a, b } = await setup(t);
  t.equal((await app.client().json('GET', '/api/memories')).status, 401);
  const m1 = await a.json('POST', '/api/memories', { content: 'Prefers charts as bars' });
  t.equal(m1.status, 201);
  t.equal(m1.body.source, 'user');
  t.match(m1.body.created_at, /^\d{4}-\d\d-\d\dT/);
  const bad = await a.json('POST', '/api/memories', { content: 'x', source: 'Not Valid!' });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'ERR_VALIDATION');
  t.equal((await a.json('POST', '/api/memories', { content: '' })).status, 400);
  const noCsrf = await a.json('POST', '/api/memories', { content: 'x' }, { 'x-csrf-token': 'wrong' });
  t.equal(noCsrf.status, 403);
  await b.json('POST', '/api/memories', { content: 'bob secret' });
  const listA = await a.json('GET', '/api/memories');
  t.same(
    listA.body.memories.map((m: { content: string }) => m.content),
    ['Prefers charts as bars'],
  );
  const delOther = await b.json('DELETE', `/api/memories/${m1.body.id}`);
  t.equal(delOther.status, 404, "bob cannot delete alice's entry");
  t.equal(delOther.body.error.code, 'ERR_MEMORY_NOT_FOUND');
  t.equal((await a.json('DELETE', `/api/memories/${m1.body.id}`)).status, 204);
  t.equal((await a.json('DELETE', `/api/memories/${m1.body.id}`)).status, 404);
  t.equal((await a.json('DELETE', '/api/memories/abc')).status, 404);
});

t.test('fetch_memory: bi refused, others returned, other users invisible', async (t) => {
  const { app, alice, bob, a, b } = await setup(t);
  await a.json('POST', '/api/memories', { content: 'Team meets on Mondays', source: 'chat' });
  const bi = await a.json('POST', '/api/memories', { content: 'Payroll total 1.2M', source: 'bi' });
  await a.json('POST', '/api/memories', { content: 'Prefers bar charts' });
  const bobs = await b.json('POST', '/api/memories', { content: 'Bob private note' });
  await b.json('POST', '/api/memories', { content: 'Bob bi note', source: 'bi' });

  const token = mintAgentUserToken(TEST_SECRETS.AGENT_USER_TOKEN_SECRET, { userId: alice.id, sessionId: 'sess-a' });
  const tools = await startMcp(t, 'tools', {
    AGENT_API_BASE_URL: app.url,
    AGENT_USER_TOKEN: token,
    AGENT_ATTACHMENTS_DIR: tempDir(t),
  });

  const all = await tools.call('fetch_memory', {});
  t.notOk(all.isError, JSON.stringify(all.content));
  const got = all.structuredContent as { memories: { content: string; source: string }[]; withheld: number };
  t.same(
    got.memories.map((m) => m.content),
    ['Prefers bar charts', 'Team meets on Mondays'],
    "alice's non-bi entries, newest first",
  );
  t.equal(got.withheld, 1, 'one bi entry withheld');
  t.notMatch(JSON.stringify(all), /Payroll|Bob/, 'no bi content and nothing of bob');

  const refused = await tools.call('fetch_memory', { source: 'bi' });
  t.equal(errorCode(refused), 'ERR_TOOL_MEMORY_REFUSED');
  const filtered = await tools.call('fetch_memory', { query: 'monday' });
  t.same(
    (filtered.structuredContent as typeof got).memories.map((m) => m.content),
    ['Team meets on Mondays'],
  );
  const payroll = await tools.call('fetch_memory', { query: 'payroll' });
  t.same((payroll.structuredContent as typeof got).memories, [], 'search never reaches bi entries');

  // The agent API directly, as the proxy's host route would call it.
  const auth = { authorization: `Bearer ${token}` };
  const api = app.client();
  const direct = await api.json('GET', '/api/agent/memories?source=bi', undefined, auth);
  t.equal(direct.status, 403);
  t.equal(direct.body.error.code, 'ERR_MEMORY_SOURCE_REFUSED');
  const byId = await api.json('GET', `/api/agent/memories/${bi.body.id}`, undefined, auth);
  t.equal(byId.body.error.code, 'ERR_MEMORY_SOURCE_REFUSED');
  const bobById = await api.json('GET', `/api/agent/memories/${bobs.body.id}`, undefined, auth);
  t.equal(bobById.status, 404, "bob's entry is not visible with alice's token");
  t.equal((await api.json('GET', '/api/agent/memories')).body.error.code, 'ERR_AGENT_TOKEN_INVALID');
  t.equal((await api.json('GET', '/api/agent/memories', undefined, { authorization: `Bearer ${token}x` })).status, 401);
  const bobToken = mintAgentUserToken(TEST_SECRETS.AGENT_USER_TOKEN_SECRET, { userId: bob.id, sessionId: 'sess-b' });
  const asBob = await api.json('GET', '/api/agent/memories', undefined, { authorization: `Bearer ${bobToken}` });
  t.same(
    asBob.body.memories.map((m: { content: string }) => m.content),
    ['Bob private note'],
  );

  // An expired token: the tool says to start a new session.
  const old = mintAgentUserToken(TEST_SECRETS.AGENT_USER_TOKEN_SECRET, {
    userId: alice.id,
    sessionId: 'sess-a',
    ttlS: 1,
    now: Date.now() - 10_000,
  });
  const tools2 = await startMcp(t, 'tools', {
    AGENT_API_BASE_URL: app.url,
    AGENT_USER_TOKEN: old,
    AGENT_ATTACHMENTS_DIR: tempDir(t),
  });
  t.equal(errorCode(await tools2.call('fetch_memory', {})), 'ERR_TOOL_MEMORY_UNAVAILABLE');
  const expired = await api.json('GET', '/api/agent/memories', undefined, { authorization: `Bearer ${old}` });
  t.equal(expired.body.error.code, 'ERR_AGENT_TOKEN_EXPIRED');

  t.notOk(app.logs.text().includes(token), 'the token never reaches the log');
  t.notOk(app.logs.text().includes('Payroll'), 'memory content never reaches the log');
  const stored = await app.database.sql.selectFrom('memories').select(['user_id', 'content']).execute();
  t.ok(
    // Words of six letters or more: a short one like "Bob" turns up in random base64 now and then.
    stored.every((r) => r.content.startsWith('v1.') && !/Payroll|Monday/.test(r.content)),
    'content encrypted at rest',
  );
  // A row moved to another user no longer decrypts (owner id is the associated data).
  await app.database.sql.updateTable('memories').set({ user_id: alice.id }).where('id', '=', bobs.body.id).execute();
  const moved = await api.json('GET', `/api/agent/memories/${bobs.body.id}`, undefined, auth);
  t.equal(moved.status, 500, 'tampered row fails closed');
  t.notMatch(JSON.stringify(moved.body), /Bob private/);
});
