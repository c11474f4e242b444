/**
 * Every model failure ends the turn as docs/chat.md ("Bounds") says, through the chat route
 * (POST /api/chat/messages, NDJSON) with the local runner's agent child, for both providers:
 * a refused port, accept-and-silence, one chunk then silence, 429 with Retry-After (within and
 * past the cap), 503 once and persisting, a reset connection, an error inside the stream
 * (Anthropic's overloaded_error), 529. Retries show in the stream as `status` events, the
 * stored history does not keep them; a tool call that hangs ends at its timeout with a sentence.
 */
import t, { type Test } from 'tap';
import { closedPortUrl } from '../../emulator/model-script.js';
import { startChatHarness, streamTurn, FAKE_MCP } from '../helpers/chat.js';
import { FAULT_AGENT_ENV, faultCases, REFUSED_CASE, type FaultCase } from '../helpers/model-faults.js';

function check(t: Test, r: { events: any[] }, k: Omit<FaultCase, 'steps'>, took: number): void {
  const done = r.events.filter((e) => e.type === 'done');
  t.equal(done.length, 1, 'one done');
  t.equal(r.events.at(-1)?.type, 'done', 'done is last');
  t.match(
    done[0],
    { stop_reason: k.stop_reason, ...(k.code ? { error: { code: k.code } } : {}) },
    JSON.stringify(done[0]),
  );
  t.same(
    r.events.filter((e) => e.type === 'status').map((e) => e.text),
    k.statuses,
    'the retries shown',
  );
  t.equal(
    r.events
      .filter((e) => e.type === 'text_delta')
      .map((e) => e.text)
      .join(''),
    k.text ?? '',
    'the text shown, once',
  );
  if (k.atLeastMs) t.ok(took >= k.atLeastMs, `waited for Retry-After (${took} ms)`);
  t.comment(`${k.name}: ended in ${took} ms`);
}

for (const provider of ['openai', 'anthropic'] as const) {
  t.test(`${provider}: each model failure ends as documented`, async (t) => {
    const h = await startChatHarness(t, { provider, childEnv: FAULT_AGENT_ENV });
    const c = await h.login('faye');
    let sid: string | undefined;
    for (const k of faultCases(provider)) {
      await t.test(k.name, async (t) => {
        h.model.push(...k.steps);
        const n0 = h.model.requests.length;
        const t0 = Date.now();
        const r = await streamTurn(c, { message: k.name, ...(sid ? { session_id: sid } : {}) });
        check(t, r, k, Date.now() - t0);
        t.equal(h.model.requests.length - n0, k.requests, 'model requests');
        t.equal(h.model.clearScript(), 0, 'every scripted step was played');
        sid = r.sessionId;
      });
    }
    const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
    t.equal(stored.length, faultCases(provider).length, 'every turn is in the history');
    t.notOk(JSON.stringify(stored).includes('retrying ('), 'the retry notices are not stored');
  });

  t.test(`${provider}: a refused port ends after three retries, each shown`, async (t) => {
    const url = await closedPortUrl(provider === 'openai' ? '/v1' : '');
    const h = await startChatHarness(t, { provider, childEnv: { ...FAULT_AGENT_ENV, AGENT_MODEL_BASE_URL: url } });
    const c = await h.login('rey');
    const t0 = Date.now();
    const r = await streamTurn(c, { message: 'anyone there?' });
    check(t, r, REFUSED_CASE, Date.now() - t0);
  });
}

t.test('a tool call that hangs ends at AGENT_TOOL_TIMEOUT_S with a sentence; the model carries on', async (t) => {
  const h = await startChatHarness(t, {
    childEnv: { ...FAULT_AGENT_ENV, AGENT_TOOL_TIMEOUT_S: '1' },
    mcpServers: [{ name: 'fake', command: process.execPath, args: [FAKE_MCP] }],
  });
  const c = await h.login('tom');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 120_000 } }] },
    { kind: 'reply', text: 'the tool timed out' },
  );
  const r = await streamTurn(c, { message: 'run the slow tool' });
  const end = r.events.find((e) => e.type === 'tool_end');
  t.match(end, { ok: false, error: /^ERR_TOOL_TIMEOUT: the tool slow did not answer within 1 s$/ });
  t.match(r.events.at(-1), { type: 'done', stop_reason: 'end_turn' });
  const toolMsg = h.model.requests[1].body.messages.find((m: any) => m.role === 'tool');
  t.equal(
    toolMsg?.content,
    'Error: the tool slow did not answer within 1 s and was stopped.',
    'the model was told in a sentence',
  );
});

t.test('a turn past AGENT_TURN_TIMEOUT_S ends with ERR_TURN_TIMEOUT, its running tool stopped', async (t) => {
  const h = await startChatHarness(t, {
    childEnv: { ...FAULT_AGENT_ENV, AGENT_TURN_TIMEOUT_S: '2', AGENT_TOOL_TIMEOUT_S: '60' },
    mcpServers: [{ name: 'fake', command: process.execPath, args: [FAKE_MCP] }],
  });
  const c = await h.login('tina');
  h.model.push({ kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 60_000 } }] });
  const r = await streamTurn(c, { message: 'run the slow tool for a minute' });
  t.match(
    r.events.find((e) => e.type === 'tool_end'),
    { ok: false, error: 'cancelled' },
    'the running tool was stopped',
  );
  t.match(r.events.at(-1), {
    type: 'done',
    stop_reason: 'error',
    error: { code: 'ERR_TURN_TIMEOUT', message: 'the turn ran longer than 2 s and was stopped' },
  });
  h.model.push({ kind: 'reply', text: 'still here' });
  const next = await streamTurn(c, { message: 'and now?', session_id: r.sessionId });
  t.match(next.events.at(-1), { type: 'done', stop_reason: 'end_turn' }, 'the next turn runs');
});
