/**
 * The official `openai` client (the version in package-lock.json), in its default configuration,
 * against our OpenAI-compatible model emulator: streamed text, parallel tool calls (split
 * arguments, multi-byte UTF-8), the non-streaming answer, and error responses as the SDK's typed
 * errors (with its own retries honouring Retry-After).
 */
import t from 'tap';
import OpenAI from 'openai';
import { start } from '../../emulator/model-openai.js';
import { closedPortUrl } from '../../emulator/model-script.js';

const KEY = 'sk-conformance-0123456789';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const srv = await start({ apiKey: KEY });
  t.teardown(() => srv.close());
  const client = new OpenAI({ baseURL: srv.url, apiKey: KEY, maxRetries: 2, logLevel: 'off' });
  return { srv, client };
}

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'add',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    },
  },
  {
    type: 'function',
    function: {
      name: 'note',
      description: 'note',
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
    },
  },
];

t.test('streams text and parallel tool calls the stream helper assembles', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({
    kind: 'reply',
    text: ['Zwei ', 'Aufrufe: ', 'ö€😀 '],
    tool_calls: [
      { name: 'add', arguments: { a: 1, b: 2 }, id: 'call_a' },
      { name: 'note', arguments: { text: 'grüße, 世界 😀'.repeat(3) }, id: 'call_b' },
    ],
  });
  const stream = client.chat.completions.stream({ model: 'gpt-x', messages: [{ role: 'user', content: 'go' }], tools });
  const deltas: string[] = [];
  stream.on('content', (d) => deltas.push(d));
  const final = await stream.finalChatCompletion();
  t.same(deltas, ['Zwei ', 'Aufrufe: ', 'ö€😀 ']);
  const msg = final.choices[0].message;
  t.equal(msg.content, 'Zwei Aufrufe: ö€😀 ');
  t.equal(final.choices[0].finish_reason, 'tool_calls');
  t.same(
    msg.tool_calls?.map((c) =>
      c.type === 'function' ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : [],
    ),
    [
      ['call_a', 'add', { a: 1, b: 2 }],
      ['call_b', 'note', { text: 'grüße, 世界 😀'.repeat(3) }],
    ],
  );
  // What the client sent is what the emulator recorded.
  t.equal(srv.requests[0].headers.authorization, `Bearer ${KEY}`);
  t.equal(srv.requests[0].body.stream, true);
  t.equal(srv.requests[0].body.tools.length, 2);
});

t.test('the raw stream iterator yields chunks the SDK types describe', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({ kind: 'reply', text: 'hello there' });
  const stream = await client.chat.completions.create({
    model: 'gpt-x',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let text = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    t.equal(chunk.object, 'chat.completion.chunk');
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  t.equal(text, 'hello there');
  t.equal(finish, 'stop');
});

t.test('a non-streaming create gets one chat.completion', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({ kind: 'reply', text: 'whole', tool_calls: [{ name: 'add', arguments: { a: 5, b: 6 } }] });
  const r = await client.chat.completions.create({
    model: 'gpt-x',
    messages: [{ role: 'user', content: 'hi' }],
    tools,
  });
  t.equal(r.object, 'chat.completion');
  t.equal(r.choices[0].message.content, 'whole');
  const c = r.choices[0].message.tool_calls![0];
  t.same(c.type === 'function' ? JSON.parse(c.function.arguments) : null, { a: 5, b: 6 });
});

t.test('error responses become the SDK typed errors', async (t) => {
  const { srv, client } = await setup(t);
  const bad = new OpenAI({ baseURL: srv.url, apiKey: 'wrong', maxRetries: 0, logLevel: 'off' });
  const auth = await bad.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    .catch((e) => e);
  t.ok(auth instanceof OpenAI.AuthenticationError, 'a wrong key is AuthenticationError');
  t.equal(auth.status, 401);
  t.equal(auth.type, 'authentication_error');

  srv.push({ kind: 'error', status: 400, message: 'bad things' });
  const e400 = await client.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    .catch((e) => e);
  t.ok(e400 instanceof OpenAI.BadRequestError);
  t.equal(e400.error?.message, 'bad things', 'the error body is read as { error: { message, type } }');

  // 429 with Retry-After: 1, then success: the SDK's own retry waits and succeeds.
  srv.push({ kind: 'error', status: 429, retry_after: 1 }, { kind: 'reply', text: 'after' });
  const n = srv.requests.length;
  const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
  t.equal(r.choices[0].message.content, 'after');
  t.equal(srv.requests.length - n, 2);
  t.ok(srv.requests[n + 1].at - srv.requests[n].at >= 950, 'Retry-After honoured');
  t.equal(srv.requests[n + 1].headers['x-stainless-retry-count'], '1', 'the SDK marked its retry');

  srv.push({ kind: 'error', status: 500, times: 3 });
  const e500 = await client.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { maxRetries: 2 })
    .catch((e) => e);
  t.ok(e500 instanceof OpenAI.InternalServerError);
});

t.test('a malformed stream event is a parse error, a stall honours abort', async (t) => {
  const { srv, client } = await setup(t);
  srv.push({ kind: 'malformed' });
  const s = client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
  const err = await s.finalChatCompletion().catch((e) => e);
  t.ok(err instanceof SyntaxError || err instanceof OpenAI.OpenAIError, `malformed → ${err?.name}`);

  srv.push({ kind: 'stall', text: 'thinking' });
  const ac = new AbortController();
  const stalled = client.chat.completions.stream(
    { model: 'm', messages: [{ role: 'user', content: 'x' }] },
    { signal: ac.signal },
  );
  stalled.on('content', () => ac.abort());
  const aborted = await stalled.finalChatCompletion().catch((e) => e);
  t.ok(aborted instanceof OpenAI.APIUserAbortError, 'abort ends the stalled stream');
});

/**
 * The failures the bounded-call tests script (test/helpers/model-faults.ts), as the official client
 * sees them: the same typed errors a real server's failures give, so agent/models/sdk.ts maps them
 * as it would in production.
 */
t.test('scripted faults: an error chunk, a reset, a silent server, a closed port', async (t) => {
  const { srv } = await setup(t);
  const client = new OpenAI({ baseURL: srv.url, apiKey: KEY, maxRetries: 0, logLevel: 'off', timeout: 500 });
  const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }], stream: true as const };
  const drain = async () => {
    for await (const _ of await client.chat.completions.create(ask));
  };
  srv.push({ kind: 'stream_error', type: 'server_error' });
  const mid = await drain().catch((e) => e);
  t.ok(mid instanceof OpenAI.APIError && mid.status === undefined, 'an error chunk is an APIError without a status');
  t.match(mid.error, { type: 'server_error' });

  srv.push({ kind: 'reset' });
  t.ok((await drain().catch((e) => e)) instanceof OpenAI.APIConnectionError, 'a reset is a connection error');

  srv.push({ kind: 'silent' });
  t.ok((await drain().catch((e) => e)) instanceof OpenAI.APIConnectionTimeoutError, 'a silent server times out');

  const closed = new OpenAI({ baseURL: await closedPortUrl('/v1'), apiKey: KEY, maxRetries: 0, logLevel: 'off' });
  const refused = await closed.chat.completions.create(ask).catch((e) => e);
  t.ok(refused instanceof OpenAI.APIConnectionError, 'a closed port is a connection error');
});
