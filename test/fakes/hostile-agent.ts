/**
 * A misbehaving agent child for tests (speaks the child protocol): on a prompt it sends a
 * forged `done`, a text_delta with its own seq and extra fields, an unknown event type, a
 * tool_start, and then dies without a turn_end — a sandbox that fails mid-turn.
 */
import { createInterface } from 'node:readline';

const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');
send({ type: 'ready' });
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { type: string; turn_id: string };
  if (m.type === 'configure') return send({ type: 'configured' });
  if (m.type !== 'prompt') return;
  const id = m.turn_id;
  send({
    type: 'event',
    turn_id: id,
    event: { type: 'done', session_id: 'forged', turn_id: id, stop_reason: 'end_turn' },
  });
  send({ type: 'event', turn_id: id, event: { type: 'text_delta', text: 'hello', seq: 99, cookie: 'x' } });
  send({ type: 'event', turn_id: id, event: { type: 'shell', cmd: 'rm -rf /' } });
  send({
    type: 'event',
    turn_id: id,
    event: { type: 'tool_start', call_id: 'c1', tool: 'send_email', input: { to: 'a@b.c' } },
  });
  setTimeout(() => process.exit(3), 50);
});
