import t from 'tap';
import { shape, startChatHarness, streamTurn, waitFor, MODEL_PLACEHOLDER, type ChatHarness } from '../helpers/chat.js';
import { responseClosed } from '../helpers/wait.js';

/**
 * The chat stream end to end over HTTP: the real chat route, the real agent child (spawned
 * by the local development runner, swappable for the Docker session manager), a real MCP
 * stdio tool server and the scripted OpenAI-compatible model server.
 */

/** Concurrency test: answers depend only on the request, so users cannot share a script. */
function respond(body: any) {
  const msgs = body.messages as any[];
  let u = msgs.length - 1;
  while (u >= 0 && msgs[u].role !== 'user') u--;
  const m = /^user(\d+)/.exec(String(msgs[u]?.content ?? ''));
  if (!m) return { kind: 'reply' as const, text: 'ok' };
  const tool = msgs.slice(u + 1).find((x) => x.role === 'tool');
  if (!tool) return { kind: 'reply' as const, tool_calls: [{ name: 'add', arguments: { a: Number(m[1]), b: 1000 } }] };
  return { kind: 'reply' as const, text: `user${m[1]} gets ${tool.content}` };
}

let h: ChatHarness;
t.before(async () => {
  h = await startChatHarness(t, { respond, childEnv: { AGENT_MODEL_TIMEOUT_S: '60' } });
});

t.test(
  'a turn with two tool calls streams in order; the next prompt reuses the warm child and the model sees the earlier turn',
  async (t) => {
    const alice = await h.login('alice');
    h.model.push(
      {
        kind: 'reply',
        text: 'Let me compute. ',
        tool_calls: [
          { name: 'slow', arguments: { ms: 400 } },
          { name: 'add', arguments: { a: 2, b: 3 } },
        ],
      },
      { kind: 'reply', text: 'The sum of 2 and 3 is 5.' },
    );
    let slowRunningAtStart: boolean | undefined;
    const first = await streamTurn(alice, { message: 'please add 2 and 3' }, (e) => {
      if (e.type === 'tool_start' && e.tool === 'slow') {
        // The tool_start line reached us while the tool is still running.
        const evs = h.mcpEvents().filter((x) => x.tool === 'slow');
        slowRunningAtStart = evs.some((x) => x.ev === 'start') ? !evs.some((x) => x.ev === 'end') : true;
      }
    });
    t.equal(first.status, 200);
    t.match(first.headers.get('content-type'), /^application\/x-ndjson/);
    t.same(shape(first.events), [
      'text_delta',
      'tool_start',
      'tool_end',
      'tool_start',
      'tool_end',
      'text_delta',
      'done',
    ]);
    t.equal(slowRunningAtStart, true, 'first tool_start arrived before that tool ended');
    t.same(
      first.events.map((e) => e.seq),
      first.events.map((_, i) => i + 1),
      'seq increases by one from 1',
    );
    const ends = first.events.filter((e) => e.type === 'tool_end');
    t.match(ends[0], { tool: 'slow', ok: true, output: 'slept 400' });
    t.match(ends[1], { tool: 'add', ok: true, output: 5 });
    t.ok(ends.every((e) => typeof e.duration_ms === 'number'));
    const starts = first.events.filter((e) => e.type === 'tool_start');
    t.same(starts[1].input, { a: 2, b: 3 });
    t.equal(starts[0].call_id, ends[0].call_id);
    const done = first.events[first.events.length - 1];
    t.match(done, { type: 'done', stop_reason: 'end_turn' });
    t.equal(first.events.filter((e) => e.type === 'done').length, 1);
    t.equal(done.session_id, first.sessionId);
    const sid = done.session_id as string;
    const pid = h.runner.pidOf!(sid);
    t.ok(pid, 'a warm child runs for the session');

    // The model got the tool results back in the second request of the turn.
    const second = h.model.requests[h.model.requests.length - 1].body;
    const toolMsgs = second.messages.filter((m: any) => m.role === 'tool');
    t.same(
      toolMsgs.map((m: any) => m.content),
      ['slept 400', '5'],
    );
    t.equal(h.model.requests[0].headers.authorization, `Bearer ${MODEL_PLACEHOLDER}`);
    t.same(h.model.requests[0].body.tools.map((x: any) => x.function.name).sort(), [
      'add',
      'env_names',
      'fail',
      'slow',
    ]);

    h.model.push({ kind: 'reply', text: 'You asked me to add 2 and 3.' });
    const spawnedBefore = h.runner.spawned;
    const again = await streamTurn(alice, { message: 'what did I ask before?', session_id: sid });
    t.same(shape(again.events), ['text_delta', 'done']);
    t.equal(again.events[again.events.length - 1].session_id, sid);
    t.equal(h.runner.pidOf!(sid), pid, 'same warm process');
    t.equal(h.runner.spawned, spawnedBefore, 'no new process');
    const seen = h.model.requests[h.model.requests.length - 1].body.messages;
    t.ok(
      seen.some((m: any) => m.role === 'user' && m.content === 'please add 2 and 3'),
      'model saw the earlier prompt',
    );
    t.ok(
      seen.some((m: any) => m.role === 'assistant' && m.content === 'The sum of 2 and 3 is 5.'),
      'model saw the earlier answer',
    );

    // History for the UI.
    const list = await alice.json('GET', '/api/chat/sessions');
    t.equal(list.status, 200);
    const s = list.body.sessions.find((x: any) => x.id === sid);
    t.match(s, { title: 'please add 2 and 3', turn_count: 2 });
    const msgs = await alice.json('GET', `/api/chat/sessions/${sid}/messages`);
    t.equal(msgs.status, 200);
    t.equal(msgs.body.turns.length, 2);
    t.match(msgs.body.turns[0], {
      prompt: 'please add 2 and 3',
      text: 'Let me compute. The sum of 2 and 3 is 5.',
      stop_reason: 'end_turn',
    });
    t.match(msgs.body.turns[0].tool_calls, [
      { tool: 'slow', status: 'ok', input: { ms: 400 } },
      { tool: 'add', status: 'ok', output: 5 },
    ]);
    t.ok(msgs.body.turns[0].tool_calls.every((c: any) => c.duration_ms >= 0));

    // Another user sees none of it.
    const bob = await h.login('bob');
    const foreign = await streamTurn(bob, { message: 'hi', session_id: sid });
    t.equal(foreign.status, 404);
    t.equal(foreign.error.error.code, 'ERR_CHAT_SESSION_NOT_FOUND');
    t.equal((await bob.json('GET', `/api/chat/sessions/${sid}/messages`)).status, 404);
    t.same((await bob.json('GET', '/api/chat/sessions')).body.sessions, []);
  },
);

t.test('model failures end the turn with one done, stop_reason error and a coded error', async (t) => {
  // Its own harness: a short stall timeout (1 s) that would be flaky under load elsewhere.
  const h = await startChatHarness(t, { childEnv: { AGENT_MODEL_TIMEOUT_S: '1' } });
  const c = await h.login('carol');
  const cases = [
    { step: { kind: 'error' as const, status: 500, times: 4 }, code: 'ERR_MODEL_HTTP' },
    { step: { kind: 'malformed' as const }, code: 'ERR_MODEL_STREAM' },
    { step: { kind: 'stall' as const, text: 'thinking…' }, code: 'ERR_MODEL_TIMEOUT' },
  ];
  let sid: string | undefined;
  for (const k of cases) {
    h.model.push(k.step);
    const r = await streamTurn(c, { message: `fail with ${k.code}`, ...(sid ? { session_id: sid } : {}) });
    t.equal(r.status, 200);
    const dones = r.events.filter((e) => e.type === 'done');
    t.equal(dones.length, 1, `${k.code}: one done`);
    t.equal(r.events[r.events.length - 1].type, 'done', 'done is last');
    t.match(dones[0], { stop_reason: 'error', error: { code: k.code } });
    sid = dones[0].session_id;
  }
  // The session still works afterwards, in the same process.
  h.model.push({ kind: 'reply', text: 'back again' });
  const ok = await streamTurn(c, { message: 'hello?', session_id: sid });
  t.match(ok.events[ok.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
  const turns = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
  t.same(
    turns.map((x: any) => x.error?.code ?? x.stop_reason),
    ['ERR_MODEL_HTTP', 'ERR_MODEL_STREAM', 'ERR_MODEL_TIMEOUT', 'end_turn'],
  );
});

t.test('a failing tool is reported and the model carries on', async (t) => {
  const c = await h.login('dave');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'fail', arguments: {} }] },
    { kind: 'reply', text: 'The tool failed, sorry.' },
  );
  const r = await streamTurn(c, { message: 'try the failing tool' });
  t.same(shape(r.events), ['tool_start', 'tool_end', 'text_delta', 'done']);
  t.match(r.events[1], { ok: false, error: /always fails/ });
  t.match(r.events[r.events.length - 1], { stop_reason: 'end_turn' });
});

t.test('max_steps stops a model that never stops calling tools', async (t) => {
  const c = await h.login('erin');
  for (let i = 0; i < 6; i++) h.model.push({ kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: i, b: 1 } }] });
  const r = await streamTurn(c, { message: 'loop forever' });
  t.equal(r.events.filter((e) => e.type === 'tool_start').length, 6);
  t.match(r.events[r.events.length - 1], { type: 'done', stop_reason: 'max_steps' });
});

t.test('a client disconnect leaves the turn running; the stop API cancels it in the child', async (t) => {
  const c = await h.login('frank');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 120_000 } }] },
    { kind: 'reply', text: 'never reached' },
  );
  const before = h.model.requests.length;
  const left = responseClosed(h.app.web.server, '/api/chat/messages');
  const r = await streamTurn(c, { message: 'take your time' }, (e) => (e.type === 'tool_start' ? 'abort' : undefined));
  t.equal(r.events[r.events.length - 1].type, 'tool_start');
  const sid = r.sessionId!;
  const turnId = r.headers.get('x-chat-turn-id')!;
  t.ok(sid && turnId);
  // The reader left (the server saw its stream close); the turn did not.
  await left;
  t.notOk(
    h.mcpEvents().some((x) => x.tool === 'slow' && x.ev === 'cancelled'),
    'the tool still runs after the client left',
  );
  const listed = (await c.json('GET', '/api/chat/sessions')).body.sessions.find((s: any) => s.id === sid);
  t.equal(listed.running_turn_id, turnId, 'the list names the running turn');
  const stop = await c.json('POST', `/api/chat/sessions/${sid}/turns/${turnId}/cancel`);
  t.equal(stop.status, 202);
  t.same(stop.body, { turn_id: turnId, cancelling: true });
  // The child told the tool server to stop, and the turn was recorded as cancelled.
  await waitFor(
    () => h.mcpEvents().some((x) => x.tool === 'slow' && x.ev === 'cancelled'),
    'the slow tool to be cancelled',
  );
  const turns = await waitFor(async () => {
    const b = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body;
    return b.turns[0]?.status === 'done' ? b.turns : undefined;
  }, 'the turn to end');
  t.equal(turns[0].stop_reason, 'cancelled');
  t.equal(turns[0].tool_calls[0].status, 'cancelled');
  t.equal(h.model.requests.length, before + 1, 'the model was not called again');
  t.equal(h.model.clearScript(), 1, 'the second scripted reply was never asked for');
  const again = await c.json('POST', `/api/chat/sessions/${sid}/turns/${turnId}/cancel`);
  t.equal(again.status, 200, 'stopping an ended turn is not an error');
  t.equal(again.body.cancelling, false);
  // The warm process survived and takes the next prompt.
  h.model.push({ kind: 'reply', text: 'still here' });
  const next = await streamTurn(c, { message: 'are you there?', session_id: sid });
  t.match(next.events[next.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
});

t.test('a second prompt while a turn runs gets 409 ERR_SESSION_BUSY before any stream', async (t) => {
  const c = await h.login('gina');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 5000 } }] },
    { kind: 'reply', text: 'finished' },
  );
  let conflict: any;
  const first = await streamTurn(c, { message: 'slow one' }, async (e, _all, sid) => {
    if (e.type === 'tool_start') conflict = await streamTurn(c, { message: 'me too', session_id: sid });
  });
  t.equal(conflict?.status, 409);
  t.equal(conflict?.error.error.code, 'ERR_SESSION_BUSY');
  t.match(first.events[first.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
  const turns = (await c.json('GET', `/api/chat/sessions/${first.sessionId}/messages`)).body.turns;
  t.equal(turns.length, 1, 'the refused prompt left no turn');
});

t.test('10 concurrent users each get only their own events', async (t) => {
  const clients = await Promise.all(Array.from({ length: 10 }, (_, i) => h.login(`user${i}`)));
  const results = await Promise.all(clients.map((c, i) => streamTurn(c, { message: `user${i} here` })));
  const sessions = new Set<string>();
  results.forEach((r, i) => {
    t.equal(r.status, 200);
    t.same(
      shape(r.events),
      ['tool_start', 'tool_end', 'text_delta', 'done'],
      `user${i} shape ${JSON.stringify(r.events[r.events.length - 1])}`,
    );
    t.same(r.events[0].input, { a: i, b: 1000 }, `user${i} tool input is its own`);
    t.equal(r.events[1].output, 1000 + i, `user${i} tool output is its own ${JSON.stringify(r.events[1])}`);
    const text = r.events
      .filter((e) => e.type === 'text_delta')
      .map((e) => e.text)
      .join('');
    t.equal(text, `user${i} gets ${1000 + i}`);
    sessions.add(r.events[r.events.length - 1].session_id);
  });
  t.equal(sessions.size, 10);
});

t.test('input checks: login, CSRF, body', async (t) => {
  const anon = h.app.client();
  t.equal((await anon.json('POST', '/api/chat/messages', { message: 'x' }, { 'x-csrf-token': 'nope' })).status, 403);
  await anon.fetchCsrf();
  const r401 = await anon.json('POST', '/api/chat/messages', { message: 'x' });
  t.equal(r401.status, 401);
  t.equal(r401.body.error.code, 'ERR_AUTH_REQUIRED');
  const c = await h.login('hank');
  const noCsrf = await c.json('POST', '/api/chat/messages', { message: 'x' }, { 'x-csrf-token': 'wrong' });
  t.equal(noCsrf.body.error.code, 'ERR_AUTH_CSRF');
  for (const bad of [
    {},
    { message: '' },
    { message: 5 },
    { message: 'x', extra: 1 },
    { message: 'x', session_id: '../etc' },
  ]) {
    const r = await c.json('POST', '/api/chat/messages', bad);
    t.equal(r.status, 400, JSON.stringify(bad));
    t.equal(r.body.error.code, 'ERR_VALIDATION');
  }
  t.equal((await c.json('GET', '/api/chat/sessions/00000000-0000-0000-0000-000000000000/messages')).status, 404);
});

t.test('the sandbox never receives the session cookie; tool servers get only tool env', async (t) => {
  const c = await h.login('ivy');
  const cookie = [...c.cookies.values()][0];
  h.model.push({ kind: 'reply', tool_calls: [{ name: 'env_names', arguments: {} }] }, { kind: 'reply', text: 'done' });
  const r = await streamTurn(c, { message: 'what env do tools see?' });
  const names = r.events.find((e) => e.type === 'tool_end').output as string[];
  t.ok(names.includes('MAIL_API_KEY') && names.includes('MAIL_BASE_URL'), 'tool env passed on');
  for (const n of names) t.notOk(/^AGENT_MODEL|^AIRLOCK_|SECRET|^AGENT_MCP/.test(n), `${n} not passed to tool servers`);
  const all = JSON.stringify(h.model.requests) + JSON.stringify(h.mcpEvents());
  t.notOk(all.includes(cookie), 'no session cookie reaches the model or the tools');
  t.notOk(all.includes(c.csrf!), 'no CSRF token either');
  const logs = h.app.logs.text();
  t.notOk(logs.includes(cookie), 'the cookie is not logged');
  t.notOk(logs.includes('what env do tools see?'), 'prompts are not logged');
  t.notOk(logs.includes('placeholder-mail-key'), 'tool env values are not logged');
});
