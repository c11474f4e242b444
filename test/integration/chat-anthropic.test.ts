import t from 'tap';
import { shape, startChatHarness, streamTurn, MODEL_PLACEHOLDER } from '../helpers/chat.js';

/** The same end-to-end treatment with the Anthropic Messages adapter and its scripted server. */

t.test(
  'anthropic: two tool calls stream in order, the warm session remembers, x-api-key is the placeholder',
  async (t) => {
    const h = await startChatHarness(t, { provider: 'anthropic' });
    const c = await h.login('alice');
    h.model.push(
      {
        kind: 'reply',
        text: 'Working on it. ',
        tool_calls: [
          { name: 'add', arguments: { a: 1, b: 2 } },
          { name: 'add', arguments: { a: 3, b: 4 } },
        ],
      },
      { kind: 'reply', text: 'Results: 3 and 7.' },
    );
    const r = await streamTurn(c, { message: 'add 1+2 and 3+4' });
    t.same(shape(r.events), ['text_delta', 'tool_start', 'tool_end', 'tool_start', 'tool_end', 'text_delta', 'done']);
    t.same(
      r.events.map((e) => e.seq),
      r.events.map((_, i) => i + 1),
    );
    t.same(
      r.events.filter((e) => e.type === 'tool_end').map((e) => e.output),
      [3, 7],
    );
    t.match(r.events[r.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
    const req0 = h.model.requests[0];
    t.equal(req0.headers['x-api-key'], MODEL_PLACEHOLDER);
    t.match(req0.headers['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/, 'the SDK names its API version');
    t.equal(req0.body.stream, true);
    t.ok(
      req0.body.tools.every((x: any) => x.input_schema),
      'tools carry input_schema',
    );
    // Tool results went back as one user message of tool_result blocks.
    const req1 = h.model.requests[1].body.messages;
    const last = req1[req1.length - 1];
    t.equal(last.role, 'user');
    t.same(
      last.content.map((b: any) => [b.type, b.content]),
      [
        ['tool_result', '3'],
        ['tool_result', '7'],
      ],
    );
    t.same(
      req1[req1.length - 2].content.map((b: any) => b.type),
      ['text', 'tool_use', 'tool_use'],
    );

    const sid = r.sessionId!;
    const pid = h.runner.pidOf!(sid);
    h.model.push({ kind: 'reply', text: 'You asked for two sums.' });
    const again = await streamTurn(c, { message: 'what did I ask?', session_id: sid });
    t.match(again.events[again.events.length - 1], { type: 'done', stop_reason: 'end_turn', session_id: sid });
    t.equal(h.runner.pidOf!(sid), pid, 'same warm process');
    const seen = h.model.requests[h.model.requests.length - 1].body.messages;
    t.equal(seen[0].content[0].text, 'add 1+2 and 3+4', 'the model saw the earlier prompt');
    t.ok(
      seen.some((m: any) => m.role === 'assistant' && m.content.some((b: any) => b.text === 'Results: 3 and 7.')),
      'and the earlier answer',
    );
    t.same(
      seen.map((m: any) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user'],
      'roles alternate',
    );
  },
);

t.test('anthropic: 500, malformed stream, in-stream error and stall each end with one coded done', async (t) => {
  const h = await startChatHarness(t, { provider: 'anthropic', childEnv: { AGENT_MODEL_TIMEOUT_S: '1' } });
  const c = await h.login('bob');
  const cases = [
    { step: { kind: 'error' as const, status: 500, times: 4 }, code: 'ERR_MODEL_HTTP' },
    { step: { kind: 'malformed' as const }, code: 'ERR_MODEL_STREAM' },
    // An in-stream overloaded_error is retried (3 retries): it persists for all 4 requests here.
    { step: { kind: 'stream_error' as const, times: 4 }, code: 'ERR_MODEL_STREAM' },
    { step: { kind: 'stall' as const, text: 'hmm' }, code: 'ERR_MODEL_TIMEOUT' },
  ];
  let sid: string | undefined;
  for (const k of cases) {
    h.model.push(k.step);
    const r = await streamTurn(c, { message: `case ${k.step.kind}`, ...(sid ? { session_id: sid } : {}) });
    t.equal(r.events.filter((e) => e.type === 'done').length, 1);
    t.match(
      r.events[r.events.length - 1],
      { type: 'done', stop_reason: 'error', error: { code: k.code } },
      k.step.kind,
    );
    sid = r.sessionId;
  }
  h.model.push({ kind: 'reply', text: 'fine now' });
  const ok = await streamTurn(c, { message: 'and now?', session_id: sid });
  t.match(ok.events[ok.events.length - 1], { stop_reason: 'end_turn' });
});

t.test('anthropic: a wrong key is ERR_MODEL_AUTH', async (t) => {
  const h = await startChatHarness(t, {
    provider: 'anthropic',
    childEnv: { AGENT_MODEL_API_KEY: 'not-the-placeholder' },
  });
  const c = await h.login('carol');
  const r = await streamTurn(c, { message: 'hello' });
  t.match(r.events[r.events.length - 1], { type: 'done', stop_reason: 'error', error: { code: 'ERR_MODEL_AUTH' } });
  t.equal(h.model.requests.length, 0, 'the server refused before recording');
});
