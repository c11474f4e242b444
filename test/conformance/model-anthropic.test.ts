/**
 * The official `@anthropic-ai/sdk` client (the version in package-lock.json), in its default
 * configuration (it sends the key as Authorization: Bearer), against our Anthropic Messages
 * emulator: streamed text, parallel tool_use blocks (input_json_delta pieces, multi-byte UTF-8),
 * the non-streaming Message, an error event inside the stream, and HTTP errors as typed errors.
 */
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { start } from '../../emulator/model-anthropic.js';
import { closedPortUrl } from '../../emulator/model-script.js';

const KEY = 'sk-ant-conformance-0123456789';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const srv = await start({ apiKey: KEY });
  t.teardown(() => srv.close());
  const client = new Anthropic({ baseURL: srv.url, apiKey: KEY, maxRetries: 2, logLevel: 'off' });
  return { srv, client };
}

const tools: Anthropic.Tool[] = [
  {
    name: 'add',
    description: 'add',
    input_schema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
  },
  { name: 'note', description: 'note', input_schema: { type: 'object', properties: { text: { type: 'string' } } } },
];
const ask = { model: 'claude-x', max_tokens: 100, messages: [{ role: 'user' as const, content: 'go' }] };

t.test('streams text and parallel tool_use blocks messages.stream assembles', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({
    kind: 'reply',
    text: ['Two ', 'calls: ', 'ö€😀'],
    tool_calls: [
      { name: 'add', arguments: { a: 1, b: 2 }, id: 'toolu_a' },
      { name: 'note', arguments: { text: 'grüße, 世界 😀'.repeat(3) }, id: 'toolu_b' },
    ],
  });
  const stream = client.messages.stream({ ...ask, tools });
  const deltas: string[] = [];
  stream.on('text', (d) => deltas.push(d));
  const msg = await stream.finalMessage();
  t.same(deltas, ['Two ', 'calls: ', 'ö€😀']);
  t.equal(msg.stop_reason, 'tool_use');
  t.same(
    msg.content.map((b) =>
      b.type === 'text' ? ['text', b.text] : b.type === 'tool_use' ? [b.id, b.name, b.input] : [b.type],
    ),
    [
      ['text', 'Two calls: ö€😀'],
      ['toolu_a', 'add', { a: 1, b: 2 }],
      ['toolu_b', 'note', { text: 'grüße, 世界 😀'.repeat(3) }],
    ],
  );
  const h = srv.requests[0].headers;
  t.equal(h.authorization, `Bearer ${KEY}`, 'the SDK sends the key as a bearer token; the emulator takes it');
  t.match(h['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/);
  t.equal(srv.requests[0].body.stream, true);
});

t.test('x-api-key works too (how the agent sends it through the sandbox proxy)', async (t) => {
  const { srv } = await setup(t);
  const client = new Anthropic({
    baseURL: srv.url,
    apiKey: KEY,
    defaultHeaders: { authorization: null, 'x-api-key': KEY },
    maxRetries: 0,
    logLevel: 'off',
  });
  srv.push({ kind: 'reply', text: 'hi' });
  const msg = await client.messages.create(ask);
  t.same(msg.content, [{ type: 'text', text: 'hi' }]);
  t.equal(srv.requests[0].headers['x-api-key'], KEY);
  t.notOk(srv.requests[0].headers.authorization);
});

t.test('a non-streaming create gets one Message', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({ kind: 'reply', text: 'whole', tool_calls: [{ name: 'add', arguments: { a: 5, b: 6 } }] });
  const msg = await client.messages.create({ ...ask, tools });
  t.equal(msg.type, 'message');
  t.equal(msg.stop_reason, 'tool_use');
  t.match(msg.content[1], { type: 'tool_use', name: 'add', input: { a: 5, b: 6 } });
});

t.test('errors: HTTP statuses as typed errors, an error event mid-stream, a malformed event', async (t) => {
  const { srv, client } = await setup(t);
  const bad = new Anthropic({ baseURL: srv.url, apiKey: 'wrong', maxRetries: 0, logLevel: 'off' });
  const auth = await bad.messages.create(ask).catch((e) => e);
  t.ok(auth instanceof Anthropic.AuthenticationError);
  t.equal(auth.status, 401);

  srv.push({ kind: 'error', status: 400, message: 'bad things' });
  const e400 = await client.messages.create(ask).catch((e) => e);
  t.ok(e400 instanceof Anthropic.BadRequestError);
  t.match(
    e400.error,
    { type: 'error', error: { type: 'invalid_request_error', message: 'bad things' } },
    'the error body has the API shape',
  );

  srv.push({ kind: 'error', status: 429, retry_after: 1 }, { kind: 'reply', text: 'after' });
  const n = srv.requests.length;
  const ok = await client.messages.create(ask);
  t.same(ok.content, [{ type: 'text', text: 'after' }], 'the SDK retried the 429');
  t.ok(srv.requests[n + 1].at - srv.requests[n].at >= 950, 'after Retry-After');

  srv.push({ kind: 'stream_error', message: 'Overloaded' });
  const mid = await client.messages
    .stream(ask)
    .finalMessage()
    .catch((e) => e);
  t.ok(mid instanceof Anthropic.APIError, 'an error event inside the stream is an APIError');
  t.match(mid.error, { type: 'error', error: { type: 'overloaded_error' } });

  srv.push({ kind: 'malformed' });
  const bad2 = await client.messages
    .stream(ask)
    .finalMessage()
    .catch((e) => e);
  t.ok(bad2 instanceof Error, `malformed → ${bad2?.name}`);
});

/** The failures the bounded-call tests script, as the official client sees them (see model-openai.test.ts). */
t.test('scripted faults: a reset, a silent server, a closed port, a chosen in-stream error type', async (t) => {
  const { srv } = await setup(t);
  const client = new Anthropic({ baseURL: srv.url, apiKey: KEY, maxRetries: 0, logLevel: 'off', timeout: 500 });
  srv.push({ kind: 'reset' });
  t.ok(
    (await client.messages
      .stream(ask)
      .finalMessage()
      .catch((e) => e)) instanceof Anthropic.APIConnectionError,
    'a reset is a connection error',
  );
  srv.push({ kind: 'silent' });
  t.ok(
    (await client.messages
      .stream(ask)
      .finalMessage()
      .catch((e) => e)) instanceof Anthropic.APIConnectionTimeoutError,
    'a silent server times out',
  );
  srv.push({ kind: 'stream_error', type: 'api_error' });
  const mid = await client.messages
    .stream(ask)
    .finalMessage()
    .catch((e) => e);
  t.match(mid?.error, { type: 'error', error: { type: 'api_error' } });
  const closed = new Anthropic({ baseURL: await closedPortUrl(), apiKey: KEY, maxRetries: 0, logLevel: 'off' });
  t.ok(
    (await closed.messages
      .stream(ask)
      .finalMessage()
      .catch((e) => e)) instanceof Anthropic.APIConnectionError,
    'a closed port is a connection error',
  );
});
