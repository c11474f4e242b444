import t from 'tap';
import { start as startAnthropic } from '../../emulator/model-anthropic.js';
import { addUser } from '../helpers/app.js';
import { MODEL_PLACEHOLDER, startChatHarness, streamTurn } from '../helpers/chat.js';

/**
 * A model per chat (docs/chat.md "A model per chat"), end to end through the chat routes and the
 * local runner's agent child: one chat goes OpenAI (the default) → Anthropic → OpenAI with tool
 * calls in its history. Each switch replaces the agent process (a new child with the chat's
 * model), the new one gets the stored conversation, and every request is accepted by the scripted
 * servers, which refuse what the real APIs refuse (emulator/model-wire.ts), and holds the whole
 * conversation in order.
 */
t.test('one chat: OpenAI → Anthropic → OpenAI with tool calls; every request well-formed and whole', async (t) => {
  const h = await startChatHarness(t, { chatModels: true, childEnv: { AGENT_MODEL_TIMEOUT_S: '30' } });
  const ANT_KEY = 'sk-ant-test-key-0123456789';
  const an = await startAnthropic({ apiKey: ANT_KEY });
  t.teardown(() => an.close());

  const admin = h.app.client();
  await addUser(h.app.database, 'root', 'root-password-123', { superuser: true });
  t.equal((await admin.login('root', 'root-password-123')).status, 200);
  const created = await admin.json('POST', '/api/admin/chat-models', {
    id: 'claude',
    label: 'Claude (scripted)',
    provider: 'anthropic',
    model: 'claude-scripted',
    base_url: an.url,
    api_key: ANT_KEY,
    context_tokens: 50_000,
  });
  t.equal(created.status, 201, JSON.stringify(created.body));

  const c = await h.login('alice');
  const picker = (await c.json('GET', '/api/chat/models')).body;
  t.same(
    picker.models.map((m: any) => [m.id, m.provider, m.default]),
    [
      ['default', 'openai', true],
      ['claude', 'anthropic', false],
    ],
    'the picker offers both',
  );

  // Turn 1, OpenAI (the default): a tool call and its result, then an answer.
  h.model.push(
    { kind: 'reply', text: 'Adding.', tool_calls: [{ name: 'add', arguments: { a: 1, b: 2 }, id: 'call_first' }] },
    { kind: 'reply', text: 'It is 3.' },
  );
  const t1 = await streamTurn(c, { message: 'add 1 and 2' });
  const sid = t1.sessionId!;
  t.equal(t1.events.at(-1).stop_reason, 'end_turn', JSON.stringify(t1.events.at(-1)));
  t.equal((await c.json('GET', `/api/chat/model?session_id=${sid}`)).body.id, 'default');

  // Switch to Anthropic mid-chat; turn 2 runs in a new agent process with the chat's transcript.
  const spawned = h.runner.spawned!;
  const sw = await c.json('PATCH', `/api/chat/sessions/${sid}`, { model_id: 'claude' });
  t.equal(sw.status, 200, JSON.stringify(sw.body));
  t.equal(sw.body.model_id, 'claude');
  an.push(
    { kind: 'reply', text: 'Claude adds.', tool_calls: [{ name: 'add', arguments: { a: 3, b: 4 } }] },
    { kind: 'reply', text: 'It is 7.' },
  );
  const t2 = await streamTurn(c, { session_id: sid, message: 'now add 3 and 4' });
  t.equal(t2.events.at(-1).stop_reason, 'end_turn', JSON.stringify(t2.events.at(-1)));
  t.equal(h.runner.spawned, spawned + 1, 'the switch replaced the agent process');
  t.equal(an.requests.length, 2, 'both Anthropic requests accepted');
  t.equal(an.requests[0].body.model, 'claude-scripted');
  const antWire = JSON.stringify(an.requests[0].body.messages);
  for (const part of ['add 1 and 2', 'tool_use', 'tool_result', 'It is 3.', 'now add 3 and 4'])
    t.match(antWire, part, `Anthropic's first request holds ${part}`);
  t.ok(
    an.requests[0].body.messages.every((m: any, i: number, all: any[]) => i === 0 || m.role !== all[i - 1].role),
    'roles alternate',
  );
  t.equal((await c.json('GET', `/api/chat/model?session_id=${sid}`)).body.id, 'claude');

  // A switch is refused while a turn runs.
  an.push(
    { kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 20_000 } }] },
    { kind: 'reply', text: 'Slept.' },
  );
  let busy: any;
  const t3 = await streamTurn(c, { session_id: sid, message: 'wait a while' }, async (e) => {
    if (e.type !== 'tool_start' || busy) return;
    busy = await c.json('PATCH', `/api/chat/sessions/${sid}`, { model_id: 'default' });
    const running = (await c.json('GET', '/api/chat/sessions')).body.sessions.find(
      (x: any) => x.id === sid,
    ).running_turn_id;
    await c.json('POST', `/api/chat/sessions/${sid}/turns/${running}/cancel`);
  });
  t.equal(busy?.status, 409);
  t.equal(busy?.body.error.code, 'ERR_SESSION_BUSY');
  t.equal(t3.events.at(-1).stop_reason, 'cancelled');
  t.equal(
    (await c.json('GET', `/api/chat/model?session_id=${sid}`)).body.id,
    'claude',
    'the refused switch changed nothing',
  );
  an.clearScript();

  // Back to OpenAI: its request holds the whole conversation, Claude's tool call answered under its own id.
  t.equal((await c.json('PATCH', `/api/chat/sessions/${sid}`, { model_id: 'default' })).status, 200);
  const before = h.model.requests.length;
  h.model.push({ kind: 'reply', text: 'OpenAI again.' });
  const t4 = await streamTurn(c, { session_id: sid, message: 'back to you' });
  t.equal(t4.events.at(-1).stop_reason, 'end_turn', JSON.stringify(t4.events.at(-1)));
  const req = h.model.requests[before].body;
  t.equal(req.model, 'gpt-scripted');
  t.equal(h.model.requests[before].headers.authorization, `Bearer ${MODEL_PLACEHOLDER}`, "the default's key");
  const users = req.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
  t.same(
    users.slice(-4),
    ['add 1 and 2', 'now add 3 and 4', 'wait a while', 'back to you'],
    'every user message, in order',
  );
  const calls = req.messages.flatMap((m: any) => m.tool_calls ?? []);
  const claudeCall = calls.find((x: any) => JSON.parse(x.function.arguments).a === 3);
  t.ok(claudeCall, "Claude's tool call is in OpenAI's request");
  t.ok(
    req.messages.some((m: any) => m.role === 'tool' && m.tool_call_id === claudeCall.id),
    "answered under Claude's id",
  );
  t.ok(
    req.messages.some((m: any) => m.role === 'tool' && m.tool_call_id === 'call_first'),
    'the first call answered too',
  );
  t.match(JSON.stringify(req.messages), /It is 7\./);
  t.equal(h.runner.spawned, spawned + 2, 'switched back: another new process');
});
