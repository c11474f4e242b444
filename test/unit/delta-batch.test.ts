import t from 'tap';
import { Agent } from '../../agent/loop.js';
import { DELTA_MAX_CHARS, DeltaBatcher } from '../../agent/delta-batch.js';
import type { AgentEvent } from '../../core/sandbox-protocol.js';
import type { ModelAdapter, ModelReply, ModelRequest } from '../../agent/types.js';

/** Resolves once `emitted` holds more than `n` events (the window's timer sends a batch). */
function waitFor(emitted: AgentEvent[], n: number, waiters: (() => void)[]): Promise<void> {
  return new Promise((res) => {
    const check = () => (emitted.length > n ? res() : void waiters.push(check));
    check();
  });
}

/**
 * A model that streams token-sized chunks in bursts (one tick each) and asks for one tool in
 * its first reply. It records, right after its first chunk, whether that chunk had already
 * been sent on: the first token must not wait for a batch.
 */
class BurstModel implements ModelAdapter {
  readonly name = 'burst';
  calls = 0;
  firstSentAtOnce: boolean[] = [];
  constructor(
    private readonly emitted: AgentEvent[],
    private readonly waiters: (() => void)[],
    private readonly batched: boolean,
  ) {}
  async complete(_req: ModelRequest, onText: (text: string) => void): Promise<ModelReply> {
    const call = this.calls++;
    const words = Array.from({ length: 120 }, (_, i) => `w${call}.${i} `);
    const before = this.emitted.length;
    onText(words[0]);
    this.firstSentAtOnce.push(this.emitted.length === before + 1);
    // Three bursts: the batcher's window closes between them (waited for, not slept).
    for (const burst of [words.slice(1, 40), words.slice(40, 80), words.slice(80)]) {
      const seen = this.emitted.length;
      for (const w of burst) onText(w);
      if (this.batched) await waitFor(this.emitted, seen, this.waiters);
    }
    const text = words.join('');
    if (call === 0) return { text, toolCalls: [{ id: 'c1', name: 'echo', input: { x: 1 } }] };
    return { text, toolCalls: [], usage: { input_tokens: 10, output_tokens: 240 } };
  }
}

async function runOnce(windowMs: number): Promise<{ events: AgentEvent[]; items: string; model: BurstModel }> {
  const events: AgentEvent[] = [];
  const waiters: (() => void)[] = [];
  const model = new BurstModel(events, waiters, windowMs > 0);
  const agent = new Agent({
    model,
    tools: {
      defs: () => [{ name: 'echo', description: 'echo', inputSchema: { type: 'object' } }],
      call: async () => ({ ok: true, output: { y: 2 }, text: '{"y":2}' }),
    },
    system: 'sys',
    maxSteps: 4,
    toolTimeoutMs: 1000,
    contextTokens: 100_000,
    deltaWindowMs: windowMs,
  });
  const emit = (e: AgentEvent) => {
    events.push(e);
    for (const w of waiters.splice(0)) w();
  };
  const r = await agent.runTurn('t1', 'hello', emit, new AbortController().signal);
  return { events, items: JSON.stringify(r), model };
}

const texts = (events: AgentEvent[]) =>
  events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text);
const shape = (events: AgentEvent[]) =>
  events.map((e) => e.type).filter((ty, i, a) => !(ty === 'text_delta' && a[i - 1] === 'text_delta'));

t.test('batched deltas: first token at once, fewer events, same text, order and transcript', async (t) => {
  const each = await runOnce(0);
  const batched = await runOnce(20);
  t.equal(texts(each.events).length, 240, 'unbatched: one event per chunk');
  t.same(
    batched.model.firstSentAtOnce,
    [true, true],
    'the first chunk of each reply went out before the next was produced',
  );
  t.equal(texts(batched.events)[0], 'w0.0 ', 'the first delta is the first chunk alone');
  t.ok(texts(batched.events).length <= 8, `at most 4 deltas per reply (got ${texts(batched.events).length})`);
  t.equal(texts(batched.events).join(''), texts(each.events).join(''), 'the concatenated text is exact');
  t.same(shape(batched.events), shape(each.events), 'the order of events is unchanged');
  t.same(shape(batched.events), ['text_delta', 'tool_start', 'tool_end', 'text_delta']);
  t.equal(batched.items, each.items, "the turn's transcript and outcome are byte-identical");
});

t.test('a batch is sent before any other event and when it grows large', async (t) => {
  const out: AgentEvent[] = [];
  const b = new DeltaBatcher((e) => out.push(e), 60_000);
  b.event({ type: 'text_delta', text: 'a' });
  b.event({ type: 'text_delta', text: 'b' });
  b.event({ type: 'text_delta', text: 'c' });
  t.same(out, [{ type: 'text_delta', text: 'a' }], 'later chunks wait in the window');
  b.event({ type: 'status', text: 'retrying', attempt: 1, of: 3 });
  t.same(
    out.map((e) => e.type),
    ['text_delta', 'text_delta', 'status'],
  );
  t.same(out[1], { type: 'text_delta', text: 'bc' }, 'pending text goes out first');
  b.event({ type: 'text_delta', text: 'd' });
  t.same(out[3], { type: 'text_delta', text: 'd' }, 'after another event the next delta is at once again');
  b.event({ type: 'text_delta', text: 'x'.repeat(DELTA_MAX_CHARS) });
  t.equal(out.length, 5, 'a full batch goes out without waiting');
  b.event({ type: 'text_delta', text: '' });
  b.flush();
  t.equal(out.length, 5, 'nothing pending, nothing sent');
});
