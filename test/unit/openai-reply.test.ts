/**
 * The OpenAI adapter joins streamed chunks itself (agent/models/openai.ts says why). These tests
 * hold it to the vendor's own assembly: the same chunk sequences go through `Reply` and through
 * the SDK's `ChatCompletionStream`, and both must give the same text and tool calls. Then the
 * streams that break the API's rules, which the adapter must refuse with ERR_MODEL_STREAM.
 */
import t from 'tap';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { Reply } from '../../agent/models/openai.js';
import { ModelError } from '../../agent/types.js';

type Delta = ChatCompletionChunk.Choice.Delta;

function chunk(delta: Delta, finish: ChatCompletionChunk.Choice['finish_reason'] = null): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/** A seeded generator, so a failure names a case that can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function split(text: string, rand: () => number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length;) {
    const n = 1 + Math.floor(rand() * 6);
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

/** A random reply: text pieces, then 0–3 tool calls whose argument pieces interleave by index. */
function randomStream(seed: number): ChatCompletionChunk[] {
  const rand = rng(seed);
  const chunks: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '' })];
  const text = ['', 'Hello', 'Here is the chart: “Q3” — ✓', 'a\nb\n\n```js\nx()\n```'][Math.floor(rand() * 4)];
  for (const piece of split(text, rand)) chunks.push(chunk({ content: piece }));
  const calls = Math.floor(rand() * 4);
  const queues = Array.from({ length: calls }, (_, i) => {
    const args = JSON.stringify({
      to: `user${i}@example.test`,
      n: Math.floor(rand() * 1000),
      note: 'ünïcödé "quoted"',
    });
    return [
      { index: i, id: `call_${seed}_${i}`, type: 'function' as const, function: { name: `tool_${i}`, arguments: '' } },
      ...split(args, rand).map((a) => ({ index: i, function: { arguments: a } })),
    ];
  });
  while (queues.some((q) => q.length)) {
    const open = queues.filter((q) => q.length);
    const q = open[Math.floor(rand() * open.length)];
    chunks.push(chunk({ tool_calls: [q.shift()!] }));
  }
  chunks.push(chunk({}, calls ? 'tool_calls' : 'stop'));
  return chunks;
}

/** What the SDK's own stream helper assembles from the same chunks. */
async function sdkAssembly(chunks: ChatCompletionChunk[]) {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(`${JSON.stringify(ch)}\n`));
      c.close();
    },
  });
  const stream = ChatCompletionStream.fromReadableStream(body);
  const final = await stream.finalChatCompletion();
  const msg = final.choices[0].message;
  return {
    text: msg.content ?? '',
    toolCalls: (msg.tool_calls ?? []).map((c) =>
      c.type === 'function' ? { id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) } : null,
    ),
  };
}

function ours(chunks: ChatCompletionChunk[]) {
  const r = new Reply();
  let streamed = '';
  for (const ch of chunks) streamed += r.add(ch);
  return { streamed, ...r.result() };
}

t.test('the same reply as the SDK stream helper, on 200 generated streams', async (t) => {
  let withCalls = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const chunks = randomStream(seed);
    const sdk = await sdkAssembly(chunks);
    const mine = ours(chunks);
    if (sdk.toolCalls.length) withCalls++;
    t.same({ text: mine.text, toolCalls: mine.toolCalls }, sdk, `seed ${seed}`);
    t.equal(mine.streamed, mine.text, `seed ${seed}: the streamed pieces are the text`);
  }
  t.ok(withCalls > 100, `most streams carry tool calls (${withCalls})`);
});

t.test('a usage-only chunk (no choices) is skipped', async (t) => {
  const chunks = [chunk({ content: 'hi' }), chunk({}, 'stop'), { ...chunk({}), choices: [] }];
  t.same(ours(chunks), { streamed: 'hi', text: 'hi', toolCalls: [] });
});

t.test('streams that break the rules are ERR_MODEL_STREAM', async (t) => {
  const cases: [string, ChatCompletionChunk[], RegExp][] = [
    ['no choice at all', [{ ...chunk({}), choices: [] }], /no choice/],
    ['no finish reason', [chunk({ content: 'cut off' })], /finish reason/],
    [
      'a tool call without a name',
      [chunk({ tool_calls: [{ index: 0, id: 'c', function: { arguments: '{}' } }] }), chunk({}, 'tool_calls')],
      /without a name/,
    ],
    [
      'arguments that are not JSON',
      [
        chunk({ tool_calls: [{ index: 0, id: 'c', function: { name: 'x', arguments: '{"a":' } }] }),
        chunk({}, 'tool_calls'),
      ],
      /malformed arguments for x/,
    ],
    [
      'arguments that are not an object',
      [
        chunk({ tool_calls: [{ index: 0, id: 'c', function: { name: 'x', arguments: '[1]' } }] }),
        chunk({}, 'tool_calls'),
      ],
      /non-object/,
    ],
    [
      'a negative index',
      [chunk({ tool_calls: [{ index: -1, id: 'c', function: { name: 'x', arguments: '{}' } }] })],
      /bad index/,
    ],
    [
      'an index past the limit',
      [chunk({ tool_calls: [{ index: 1e9, id: 'c', function: { name: 'x', arguments: '{}' } }] })],
      /bad index/,
    ],
  ];
  for (const [what, chunks, message] of cases) {
    try {
      ours(chunks);
      t.fail(`${what}: accepted`);
    } catch (err) {
      t.ok(err instanceof ModelError && err.code === 'ERR_MODEL_STREAM', `${what}: ERR_MODEL_STREAM`);
      t.match((err as Error).message, message, what);
    }
  }
});

t.test('a call without an id gets one by position; empty arguments are {}', async (t) => {
  const chunks = [
    chunk({ tool_calls: [{ index: 0, function: { name: 'now', arguments: '' } }] }),
    chunk({}, 'tool_calls'),
  ];
  t.same(ours(chunks).toolCalls, [{ id: 'call_0', name: 'now', input: {} }]);
});
