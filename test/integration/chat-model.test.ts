/**
 * The model as the chat sees it: GET /api/chat/model names the model that answers (the offline
 * demo one as such), and the SDK-based adapters retry rate limits and server errors.
 */
import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { startChatHarness, streamTurn } from '../helpers/chat.js';

const cases: Array<[string, Record<string, string>, unknown]> = [
  [
    'the default demo model',
    {},
    { id: 'default', label: 'Demo model', provider: 'demo', model: 'demo', demo: true, context_tokens: 100_000 },
  ],
  [
    'an OpenAI-compatible model',
    {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-test-1',
      AIRLOCK_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
      AIRLOCK_MODEL_API_KEY: 'sk-never-shown-0123456789',
    },
    {
      id: 'default',
      label: 'gpt-test-1',
      provider: 'openai',
      model: 'gpt-test-1',
      demo: false,
      context_tokens: 100_000,
    },
  ],
];

for (const [name, env, want] of cases) {
  t.test(name, async (t) => {
    const app = await startTestApp(t, { env });
    t.equal((await app.client().json('GET', '/api/chat/model')).status, 401, 'signed-in users only');
    await addUser(app.database, 'mo', 'mo-password-123');
    const c = app.client();
    t.equal((await c.login('mo', 'mo-password-123')).status, 200);
    const r = await c.json('GET', '/api/chat/model');
    t.equal(r.status, 200);
    t.same(r.body, want);
    t.notOk(JSON.stringify(r.body).includes('sk-never-shown'), 'no key in the answer');
  });
}

/**
 * Retries through the SDK-based adapters, for both providers: a 429 with Retry-After: 1 on the
 * first model request is waited out and retried (it used to end the turn with ERR_MODEL_HTTP);
 * a Retry-After past AGENT_MODEL_RETRY_AFTER_MAX_S (30 s) is not waited for; a 5xx that persists ends the turn after
 * the retries; a 400 is not retried.
 */
for (const provider of ['openai', 'anthropic'] as const) {
  t.test(`${provider}: 429 and 5xx are retried within the stall timeout`, async (t) => {
    const h = await startChatHarness(t, { provider, childEnv: { AGENT_MODEL_TIMEOUT_S: '5' } });
    const c = await h.login('rita');

    h.model.push({ kind: 'error', status: 429, retry_after: 1 }, { kind: 'reply', text: 'after the wait' });
    const n0 = h.model.requests.length;
    const t0 = Date.now();
    const r = await streamTurn(c, { message: 'first request is rate limited' });
    const took = Date.now() - t0;
    t.match(r.events[r.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
    t.same(
      r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join(''),
      'after the wait',
      'the text streamed once',
    );
    t.equal(h.model.requests.length - n0, 2, 'one retry');
    const gap = h.model.requests[n0 + 1].at - h.model.requests[n0].at;
    t.ok(gap >= 950, `the retry waited for Retry-After (${gap} ms)`);
    t.ok(took >= 950, 'the turn took the wait');
    const sid = r.sessionId!;

    h.model.push({ kind: 'error', status: 429, retry_after: 120 }, { kind: 'reply', text: 'never asked' });
    const n1 = h.model.requests.length;
    const late = await streamTurn(c, { message: 'a long Retry-After', session_id: sid });
    t.match(late.events[late.events.length - 1], {
      type: 'done',
      stop_reason: 'error',
      error: { code: 'ERR_MODEL_HTTP' },
    });
    t.equal(h.model.requests.length - n1, 1, 'a wait past the cap is not taken');
    t.equal(h.model.clearScript(), 1);

    h.model.push({ kind: 'error', status: 503, times: 4 }, { kind: 'reply', text: 'never asked' });
    const n2 = h.model.requests.length;
    const down = await streamTurn(c, { message: 'the model is down', session_id: sid });
    t.match(down.events[down.events.length - 1], {
      type: 'done',
      stop_reason: 'error',
      error: { code: 'ERR_MODEL_HTTP' },
    });
    t.equal(h.model.requests.length - n2, 4, 'the first request and three retries');
    t.same(
      down.events.filter((e) => e.type === 'status').map((e) => [e.attempt, e.of]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
      'each retry was shown in the stream',
    );
    t.equal(h.model.clearScript(), 1);

    h.model.push({ kind: 'error', status: 400 }, { kind: 'reply', text: 'never asked' });
    const n3 = h.model.requests.length;
    const bad = await streamTurn(c, { message: 'a bad request', session_id: sid });
    t.match(bad.events[bad.events.length - 1], {
      type: 'done',
      stop_reason: 'error',
      error: { code: 'ERR_MODEL_HTTP' },
    });
    t.equal(h.model.requests.length - n3, 1, 'a 400 is not retried');
    t.equal(h.model.clearScript(), 1);

    h.model.push({ kind: 'reply', text: 'fine again' });
    const ok = await streamTurn(c, { message: 'and now?', session_id: sid });
    t.match(ok.events[ok.events.length - 1], { type: 'done', stop_reason: 'end_turn' });
  });
}
