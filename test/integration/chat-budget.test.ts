import t from 'tap';
import { startChatHarness, streamTurn, waitFor } from '../helpers/chat.js';
import { estimateTokens, type TranscriptItem } from '../../core/transcript.js';

/**
 * A 300-turn chat stays inside its context budget (docs/chat.md "Context budget"): every request
 * the model gets is within the budget, leaves out old turns whole with the marker, and never holds
 * a tool result without its call (the scripted server refuses such a request, as the real API does).
 * Halfway the agent process is killed, so the daemon's own cut of the stored branch is used too.
 */
const BUDGET = 1500;

t.test('a 300-turn chat with tool calls stays inside its budget, with the marker, nothing orphaned', async (t) => {
  const h = await startChatHarness(t, {
    childEnv: { AGENT_CONTEXT_TOKENS: String(BUDGET), AGENT_MODEL_TIMEOUT_S: '30' },
    app: { env: { AIRLOCK_MODEL_CONTEXT_TOKENS: String(BUDGET) } },
    // Every fifth turn calls a tool first; the others answer at once.
    respond: (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'user' && /^turn \d*[05]\b/.test(String(last.content).replace(/^\[[^\]]*\]\n\n/, '')))
        return { kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: 1, b: 2 } }] };
      return {
        kind: 'reply',
        text: `answer ${body.messages.length}: some words to make the chat grow a little faster than a one-word reply would`,
      };
    },
  });
  const c = await h.login('tess');
  let sid: string | undefined;
  for (let i = 0; i < 300; i++) {
    if (i === 150) {
      const pid = h.runner.pidOf!(sid!)!;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => h.runner.pidOf!(sid!) === undefined, 'the agent to be gone');
    }
    const r = await streamTurn(c, { message: `turn ${i} ${'x'.repeat(60)}`, ...(sid ? { session_id: sid } : {}) });
    if (r.events.at(-1)?.stop_reason !== 'end_turn') {
      t.fail(`turn ${i} ended ${JSON.stringify(r.events.at(-1) ?? r.error)}`);
      return;
    }
    sid = r.sessionId;
  }
  const requests = h.model.requests.map((q) => q.body);
  t.ok(requests.length >= 300 + 60, 'every turn asked the model (tool turns twice)');
  let marked = 0;
  let over = 0;
  for (const body of requests) {
    // The conversation as the agent built it (the system prompt and tools are counted beside it).
    const items: TranscriptItem[] = body.messages
      .filter((m: any) => m.role !== 'system')
      .map((m: any) =>
        m.role === 'tool'
          ? { role: 'tool', callId: m.tool_call_id, name: 'add', content: m.content, isError: false }
          : m.role === 'assistant'
            ? {
                role: 'assistant',
                text: m.content ?? '',
                toolCalls: (m.tool_calls ?? []).map((x: any) => ({
                  id: x.id,
                  name: x.function.name,
                  input: JSON.parse(x.function.arguments),
                })),
              }
            : { role: 'user', content: m.content },
      );
    if (estimateTokens(items) > BUDGET) over++;
    if (/earlier turns? (was|were) left out/.test(String(body.messages[1]?.content))) marked++;
  }
  t.equal(over, 0, 'no request past the budget');
  t.ok(marked > 250, `the model is told old turns were left out (${marked} requests)`);
  const last = requests.at(-1);
  t.match(last.messages.at(-1).content, /^turn 299 /, 'the newest turn is always there');
});
