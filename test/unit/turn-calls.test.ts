/**
 * A turn's running tool calls (core/turn-calls.ts): a send binds to a running send_email call once;
 * a send that overtakes its call's tool_start waits for it (bounded); a call of another tool, an
 * ended call or an ended turn binds nothing.
 */
import t from 'tap';
import { TurnCalls } from '../../core/turn-calls.js';

const start = (call_id: string, tool = 'send_email') => ({ type: 'tool_start' as const, call_id, tool, input: {} });
const end = (call_id: string, tool = 'send_email') => ({
  type: 'tool_end' as const,
  call_id,
  tool,
  ok: true,
  duration_ms: 1,
});

t.test('one send per running send_email call', async (t) => {
  const c = new TurnCalls();
  c.observe(start('a'));
  t.equal(await c.claim('a', 'send_email'), 'bound');
  t.equal(await c.claim('a', 'send_email'), 'reused', 'the same call again');
  c.observe(end('a'));
  t.equal(await c.claim('a', 'send_email', 0), 'reused', 'still, after it ended');
  t.equal(await c.claim('b', 'send_email', 0), 'unbound', 'a call never started');
});

t.test("a send that overtakes its call's tool_start waits for it", async (t) => {
  const c = new TurnCalls();
  const early = c.claim('late', 'send_email', 60_000);
  c.observe(start('late'));
  t.equal(await early, 'bound');
});

t.test('another tool, an ended call, an ended turn: unbound at once', async (t) => {
  const c = new TurnCalls();
  c.observe(start('sheet', 'fetch_sheet'));
  t.equal(
    await c.claim('sheet', 'send_email', 60_000),
    'unbound',
    'a running call of another tool binds no send, without waiting',
  );
  c.observe(start('gone'));
  c.observe(end('gone'));
  const waiting = c.claim('gone', 'send_email', 60_000);
  c.end();
  t.equal(await waiting, 'unbound', 'the turn ended: the wait ends with it');
  t.equal(await c.claim('x', 'send_email', 60_000), 'unbound');
});
