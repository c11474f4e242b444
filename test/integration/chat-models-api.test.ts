import t from 'tap';
import { start as startAnthropic } from '../../emulator/model-anthropic.js';
import { addUser } from '../helpers/app.js';
import { MODEL_PLACEHOLDER, startChatHarness, streamTurn } from '../helpers/chat.js';
import { TEST_ENGINE, dbRows } from '../helpers/db.js';

/**
 * A model per chat over HTTP (docs/chat.md "A model per chat"): the admin API (superuser only,
 * validated, logged in the same transaction, never a key in an answer or a log), the picker as the
 * user's agent policy allows it, choosing a model for a new chat, and what happens to chats whose
 * model is disabled or deleted. Runs on SQLite and PostgreSQL.
 */
const KEY = 'sk-ant-very-secret-key-0123456789';
const PW = 'password-123456';

t.test(`chat models: admin API, picker, choice and fallback (${TEST_ENGINE})`, async (t) => {
  const h = await startChatHarness(t, { chatModels: true });
  const an = await startAnthropic({ apiKey: KEY });
  t.teardown(() => an.close());
  await addUser(h.app.database, 'root', PW, { superuser: true });
  const admin = h.app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const bob = await h.login('bob');
  const alice = await h.login('alice');
  const anon = h.app.client();
  await anon.fetchCsrf();

  // Access: a plain user gets 403 on every admin route, an anonymous caller 401.
  const body = { id: 'x', label: 'X', provider: 'demo', model: 'demo', context_tokens: 1000 };
  for (const [m, p] of [
    ['GET', '/api/admin/chat-models'],
    ['POST', '/api/admin/chat-models'],
    ['PATCH', '/api/admin/chat-models/default'],
    ['DELETE', '/api/admin/chat-models/default'],
  ] as const) {
    const u = await bob.json(m, p, m === 'GET' || m === 'DELETE' ? undefined : body);
    t.equal(u.status, 403, `${m} ${p} as a user`);
    t.equal(u.body.error.code, 'ERR_AUTH_FORBIDDEN');
    t.equal(
      (await anon.json(m, p, m === 'GET' || m === 'DELETE' ? undefined : body)).status,
      401,
      `${m} ${p} anonymous`,
    );
  }

  // The default entry, from AIRLOCK_MODEL_*: shown with has_key, never the key.
  const list = await admin.json('GET', '/api/admin/chat-models');
  t.match(list.body.models, [
    {
      id: 'default',
      provider: 'openai',
      model: 'gpt-scripted',
      base_url: h.model.url,
      has_key: true,
      default: true,
      enabled: true,
      env_managed: true,
      chats: 0,
    },
  ]);
  t.notMatch(JSON.stringify(list.body), MODEL_PLACEHOLDER, 'the env key is not shown');

  // Create; bad bodies are refused with the field named.
  const bad = [
    [{ ...body, id: 'Bad Id' }, 'id'],
    [{ id: 'gpt', label: 'GPT', provider: 'openai', model: 'gpt-4o', context_tokens: 8000 }, 'base_url'],
    [{ ...body, context_tokens: 10 }, 'context_tokens'],
    [{ ...body, base_url: 'ftp://x' }, 'base_url'],
    [{ ...body, api_key: 'has space' }, 'api_key'],
    [{ ...body, colour: 'red' }, 'colour'],
  ] as const;
  for (const [b, field] of bad) {
    const r = await admin.json('POST', '/api/admin/chat-models', b);
    t.equal(r.status, 400, `refused: ${field}`);
    t.equal(r.body.error.code, 'ERR_VALIDATION');
    t.equal(r.body.error.field, field, 'the field is named');
  }
  const claude = {
    id: 'claude',
    label: 'Claude',
    provider: 'anthropic',
    model: 'claude-scripted',
    base_url: an.url,
    api_key: KEY,
    context_tokens: 40_000,
  };
  const made = await admin.json('POST', '/api/admin/chat-models', claude);
  t.equal(made.status, 201, JSON.stringify(made.body));
  t.match(made.body, { id: 'claude', has_key: true, enabled: true, default: false, version: 1 });
  t.equal((await admin.json('POST', '/api/admin/chat-models', claude)).body.error.code, 'ERR_CHAT_MODEL_EXISTS');
  t.equal(
    (
      await admin.json('POST', '/api/admin/chat-models', {
        id: 'gpt-mini',
        label: 'GPT mini',
        provider: 'openai',
        model: 'gpt-mini',
        base_url: h.model.url,
        context_tokens: 8000,
      })
    ).status,
    201,
  );

  // Update: the key left out stays; the default cannot be disabled or deleted; a missing id is 404.
  const upd = await admin.json('PATCH', '/api/admin/chat-models/claude', { label: 'Claude Scripted' });
  t.match(upd.body, { label: 'Claude Scripted', has_key: true, version: 2 });
  t.equal((await admin.json('PATCH', '/api/admin/chat-models/claude', { api_key: `${KEY}-2` })).body.has_key, true);
  t.equal((await admin.json('PATCH', '/api/admin/chat-models/claude', { api_key: KEY })).status, 200);
  t.equal(
    (await admin.json('PATCH', '/api/admin/chat-models/default', { enabled: false })).body.error.code,
    'ERR_CHAT_MODEL_DEFAULT',
  );
  t.equal((await admin.json('DELETE', '/api/admin/chat-models/default')).body.error.code, 'ERR_CHAT_MODEL_DEFAULT');
  t.equal((await admin.json('PATCH', '/api/admin/chat-models/nope', { label: 'x' })).status, 404);
  t.equal(
    (await admin.json('PATCH', '/api/admin/chat-models/claude', { id: 'other' })).status,
    400,
    'the id does not change',
  );

  // The picker honours the agent policy: alice's organisation allows only the default's model.
  const org = (await admin.json('POST', '/api/identity/organisations', { name: 'Acme' })).body;
  const aliceId = (await dbRows(h.app.database.sql, "SELECT id FROM users WHERE username = 'alice'"))[0].id;
  t.equal((await admin.json('PUT', `/api/identity/organisations/${org.id}/members/${aliceId}`, {})).status, 200);
  const pol = await admin.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
    name: 'gpt only',
    applies_to: 'all',
    allowed_models: ['gpt-scripted'],
  });
  t.equal(pol.status, 201, JSON.stringify(pol.body));
  t.same(
    (await alice.json('GET', '/api/chat/models')).body.models.map((m: any) => m.id),
    ['default'],
    'alice: only what her policy allows',
  );
  t.same(
    (await bob.json('GET', '/api/chat/models')).body.models.map((m: any) => m.id),
    ['default', 'claude', 'gpt-mini'],
    'bob: everything enabled',
  );
  const denied = await streamTurn(alice, { message: 'hi', model_id: 'claude' });
  t.equal(denied.status, 403);
  t.equal(denied.error.error.code, 'ERR_POLICY_MODEL_DENIED');
  t.equal((await streamTurn(bob, { message: 'hi', model_id: 'no-such' })).error.error.code, 'ERR_CHAT_MODEL_NOT_FOUND');
  t.equal((await streamTurn(bob, { message: 'hi', model_id: 'Not An Id' })).status, 400);
  t.same((await alice.json('GET', '/api/chat/sessions')).body.sessions, [], 'a refused choice leaves no chat');

  // Bob starts a chat on Claude: the turn goes to the Anthropic server with its key.
  an.push({ kind: 'reply', text: 'Hello from Claude.' });
  const first = await streamTurn(bob, { message: 'hello', model_id: 'claude' });
  t.equal(first.events.at(-1).stop_reason, 'end_turn', JSON.stringify(first.events.at(-1)));
  t.equal(an.requests.length, 1);
  const sid = first.sessionId!;
  t.equal(
    (await bob.json('GET', '/api/chat/sessions')).body.sessions[0].model_id,
    'claude',
    'the list carries the model',
  );
  t.equal(
    (await bob.json('GET', `/api/chat/sessions/${sid}/messages`)).body.session.model_id,
    'claude',
    'and the history',
  );
  t.match((await bob.json('GET', `/api/chat/model?session_id=${sid}`)).body, {
    id: 'claude',
    provider: 'anthropic',
    model: 'claude-scripted',
    demo: false,
    context_tokens: 40_000,
  });
  t.equal((await alice.json('GET', `/api/chat/model?session_id=${sid}`)).status, 404, "another user's chat");
  t.equal((await bob.json('GET', '/api/chat/model')).body.id, 'default', 'no chat: the default');
  t.equal((await alice.json('PATCH', `/api/chat/sessions/${sid}`, { model_id: 'default' })).status, 404);
  t.equal((await bob.json('PATCH', `/api/chat/sessions/${sid}`, {})).status, 400, 'an empty change is refused');

  // Disabled: not offered, not choosable, and its chats run with the default (their choice kept).
  t.equal((await admin.json('PATCH', '/api/admin/chat-models/claude', { enabled: false })).body.enabled, false);
  t.notOk((await bob.json('GET', '/api/chat/models')).body.models.some((m: any) => m.id === 'claude'));
  t.equal(
    (await bob.json('PATCH', `/api/chat/sessions/${sid}`, { model_id: 'claude' })).body.error.code,
    'ERR_CHAT_MODEL_NOT_FOUND',
  );
  t.equal((await bob.json('GET', '/api/chat/sessions')).body.sessions[0].model_id, 'default');
  const fallback = await streamTurn(bob, { session_id: sid, message: 'still there?' });
  t.equal(fallback.events.at(-1).stop_reason, 'end_turn');
  t.equal(an.requests.length, 1, 'the disabled model got nothing');
  t.match(
    JSON.stringify(h.model.requests.at(-1)!.body.messages),
    /Hello from Claude/,
    'the default got the whole conversation',
  );
  t.equal((await admin.json('PATCH', '/api/admin/chat-models/claude', { enabled: true })).status, 200);
  t.equal(
    (await bob.json('GET', '/api/chat/sessions')).body.sessions[0].model_id,
    'claude',
    'enabled again: the chat is on it again',
  );
  t.equal((await admin.json('GET', '/api/admin/chat-models')).body.models.find((m: any) => m.id === 'claude').chats, 1);

  // Deleted: its chats fall back to the default.
  t.equal((await admin.json('DELETE', '/api/admin/chat-models/claude')).status, 204);
  t.equal((await bob.json('GET', `/api/chat/sessions/${sid}/messages`)).body.session.model_id, 'default');
  // The default counts the chats on it (they store no model): never 0 while there are some (issue 41).
  const onDefault = Number(
    (await dbRows(h.app.database.sql, 'SELECT COUNT(*) AS n FROM chat_sessions WHERE model_id IS NULL'))[0].n,
  );
  t.ok(onDefault >= 1, `chats on the default: ${onDefault}`);
  t.equal(
    (await admin.json('GET', '/api/admin/chat-models')).body.models.find((m: any) => m.id === 'default').chats,
    onDefault,
    "the default's Chats count",
  );

  // The action log has each change, and no key anywhere: not in the log entries, not in the server's log.
  const log = await dbRows(
    h.app.database.sql,
    "SELECT event, data FROM action_log WHERE event LIKE 'chat_model.%' OR event = 'chat.model_changed' ORDER BY id",
  );
  t.same(
    log.map((r: any) => r.event),
    [
      'chat_model.created',
      'chat_model.created',
      'chat_model.updated',
      'chat_model.updated',
      'chat_model.updated',
      'chat.model_changed',
      'chat_model.updated',
      'chat_model.updated',
      'chat_model.deleted',
    ],
  );
  t.match(JSON.parse(log[3].data), { id: 'claude', key_changed: true, has_key: true });
  t.match(JSON.parse(log.at(-1).data), { id: 'claude', chats_moved_to_default: 1 });
  const everything = JSON.stringify(log) + h.app.logs.text();
  t.notOk(everything.includes(KEY), 'the key is in no log');
  t.notOk(everything.includes('very-secret'), 'not even in part');
});
