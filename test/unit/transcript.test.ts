import t from 'tap';
import fc from 'fast-check';
import {
  boundToolResult,
  closeToolCalls,
  estimateTokens,
  fitToBudget,
  omittedNote,
  type TranscriptItem,
} from '../../core/transcript.js';
import { childrenOf, newestLeaf, pathTo, siblingsAlong, type TurnNode } from '../../domain/chat/branches.js';
import { turnItems } from '../../domain/chat/transcript.js';

/** One turn: a prompt, `tools` tool calls with their results, an answer. */
function turnOf(i: number, tools: number, size = 40): TranscriptItem[] {
  const out: TranscriptItem[] = [{ role: 'user', content: `question ${i} ${'q'.repeat(size)}` }];
  for (let k = 0; k < tools; k++) {
    out.push({ role: 'assistant', text: '', toolCalls: [{ id: `c${i}_${k}`, name: 'add', input: { a: i, b: k } }] });
    out.push({ role: 'tool', callId: `c${i}_${k}`, name: 'add', content: 'r'.repeat(size), isError: false });
  }
  out.push({ role: 'assistant', text: `answer ${i}`, toolCalls: [] });
  return out;
}

/** Every tool result follows the assistant item that called it, and every call has its result. */
function wellFormed(items: readonly TranscriptItem[]): boolean {
  const open = new Set<string>();
  for (const it of items) {
    if (it.role === 'tool') {
      if (!open.delete(it.callId)) return false;
      continue;
    }
    if (open.size) return false;
    if (it.role === 'assistant') for (const c of it.toolCalls) open.add(c.id);
  }
  return open.size === 0;
}

t.test('fitToBudget leaves out whole old turns with a marker, never half a tool pair', async (t) => {
  const items = Array.from({ length: 300 }, (_, i) => turnOf(i, i % 3)).flat();
  const full = estimateTokens(items);
  const { items: kept, omitted } = fitToBudget(items, 2000);
  t.ok(omitted > 250, 'most turns left out');
  t.ok(estimateTokens(kept) <= 2000 + 40, 'inside the budget (the marker adds a few tokens)');
  t.ok(kept[0].role === 'user' && kept[0].content.startsWith(omittedNote(omitted)), 'the model sees the marker');
  t.ok(wellFormed(kept), 'no orphaned tool result');
  t.same(kept.at(-1), items.at(-1), 'the newest turn is kept');
  t.same(fitToBudget(items, full + 400).items, items, 'nothing left out when it fits (each turn rounds up once)');
  t.equal(fitToBudget(turnOf(1, 2, 10_000), 100).items.length, 6, 'the newest turn is kept even past the budget');

  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 50, max: 3000 }),
      (tools, budget) => {
        const all = tools.flatMap((n, i) => turnOf(i, n));
        const r = fitToBudget(all, budget);
        return (
          wellFormed(r.items) && r.items[0].role === 'user' && (r.omitted === 0 || r.items.length < all.length + 1)
        );
      },
    ),
  );
});

t.test('closeToolCalls answers open calls and drops stray results', async (t) => {
  const items: TranscriptItem[] = [
    { role: 'user', content: 'x' },
    {
      role: 'assistant',
      text: '',
      toolCalls: [
        { id: 'a', name: 'add', input: {} },
        { id: 'b', name: 'add', input: {} },
      ],
    },
    { role: 'tool', callId: 'a', name: 'add', content: '1', isError: false },
    { role: 'tool', callId: 'zzz', name: 'add', content: 'stray', isError: false },
    { role: 'user', content: 'y' },
  ];
  const out = closeToolCalls(items, 'not run');
  t.ok(wellFormed(out));
  t.same(
    out.map((i) => (i.role === 'tool' ? `${i.callId}:${i.content}` : i.role)),
    ['user', 'assistant', 'a:1', 'b:not run', 'user'],
  );
  t.match(boundToolResult('x'.repeat(20), 10), /^x{10}\n\[… the result was cut here: 10 more characters/);
});

t.test('branches: path, siblings, newest leaf', async (t) => {
  const n = (id: string, parent: string | null, at: number): TurnNode => ({
    id,
    parent_id: parent,
    started_at: new Date(at).toISOString(),
  });
  // a → b → c ; a → b2 (edit of b) → d ; a → b3 (regenerate of b)
  const nodes = [n('a', null, 1), n('b', 'a', 2), n('c', 'b', 3), n('b2', 'a', 4), n('d', 'b2', 5), n('b3', 'a', 6)];
  t.same(pathTo(nodes, 'd'), ['a', 'b2', 'd']);
  t.same(pathTo(nodes, null), []);
  t.same(childrenOf(nodes, 'a'), ['b', 'b2', 'b3']);
  t.equal(newestLeaf(nodes, 'b'), 'c');
  t.equal(newestLeaf(nodes, 'a'), 'b3');
  t.same(siblingsAlong(nodes, ['a', 'b2', 'd']).get('b2'), ['b', 'b2', 'b3']);
});

t.test('a turn without reported items is rebuilt from its record, well-formed', async (t) => {
  const items = turnItems({
    turn_id: 't',
    prompt: 'p',
    text: 'partial',
    status: 'running',
    stop_reason: null,
    started_at: '',
    ended_at: null,
    parent_id: null,
    siblings: ['t'],
    tool_calls: [
      { call_id: 'c1', tool: 'add', input: { a: 1 }, status: 'ok', output: { sum: 2 }, duration_ms: 1, started_at: '' },
      { call_id: 'c2', tool: 'slow', input: {}, status: 'running', duration_ms: null, started_at: '' },
    ],
  });
  t.ok(wellFormed(items));
  t.match(items.at(-1), { role: 'assistant', text: 'partial', interrupted: 'error' }, 'a turn cut off is marked');
  t.match(
    items.find((i) => i.role === 'tool' && i.callId === 'c2'),
    { isError: true, content: /outcome of this call is unknown/ },
    'a call cut off is not said to have failed (it may have taken effect)',
  );
});
