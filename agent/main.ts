/**
 * The agent child (runs as uid 1001 in the sandbox). Speaks ChildInbound/ChildOutbound
 * NDJSON on stdin/stdout; logs go to stderr.
 *
 * PLACEHOLDER until the agent-loop issue lands: echoes the prompt as one text_delta and
 * ends the turn. Kept deliberately tiny so the runtime can be tested end to end.
 */
import { createInterface } from 'node:readline';
import type { ChildInbound, ChildOutbound } from '../core/sandbox-protocol.js';

function send(m: ChildOutbound): void {
  process.stdout.write(JSON.stringify(m) + '\n');
}

const history: string[] = [];
send({ type: 'ready' });
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m: ChildInbound;
  try {
    m = JSON.parse(line) as ChildInbound;
  } catch {
    // A malformed line from the supervisor is a bug there; ignore it rather than die.
    return;
  }
  if (m.type === 'prompt') {
    history.push(m.prompt);
    send({ type: 'event', turn_id: m.turn_id, event: { type: 'text_delta', text: `echo(${history.length}): ${m.prompt}` } });
    send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'end_turn' });
  } else if (m.type === 'cancel') {
    send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'cancelled' });
  }
});
rl.on('close', () => process.exit(0));
