import t from 'tap';
import { join } from 'node:path';
import { LocalTurnRunner } from '../../daemon/dev/local-runner.js';
import { DIST, startChatHarness, streamTurn } from '../helpers/chat.js';

/** A sandbox that lies and then dies mid-turn: the client still gets one honest `done`. */
t.test(
  'forged events are dropped or rebuilt; a child dying mid-turn ends with one done ERR_SANDBOX_CHILD_EXITED',
  async (t) => {
    const h = await startChatHarness(t, {
      runnerFactory: async (env, log) =>
        new LocalTurnRunner({
          env,
          log,
          agentMain: join(DIST, 'test', 'fakes', 'hostile-agent.js'),
          readyTimeoutMs: 150_000,
        }),
    });
    const c = await h.login('mallory');
    const r = await streamTurn(c, { message: 'hi' });
    t.equal(r.status, 200);
    t.same(
      r.events.map((e) => [e.type, e.seq]),
      [
        ['text_delta', 1],
        ['tool_start', 2],
        ['done', 3],
      ],
    );
    t.same(Object.keys(r.events[0]).sort(), ['seq', 'text', 'type'], 'extra fields dropped');
    const done = r.events[2];
    t.match(done, { stop_reason: 'error', error: { code: 'ERR_SANDBOX_CHILD_EXITED' }, session_id: r.sessionId });
    const turns = (await c.json('GET', `/api/chat/sessions/${r.sessionId}/messages`)).body.turns;
    t.match(turns[0], {
      status: 'done',
      stop_reason: 'error',
      error: { code: 'ERR_SANDBOX_CHILD_EXITED' },
      text: 'hello',
    });
    t.equal(turns[0].tool_calls[0].status, 'error', 'the unfinished tool call is closed');
    // The next prompt gets a fresh process.
    const again = await streamTurn(c, { message: 'again', session_id: r.sessionId });
    t.match(again.events[again.events.length - 1], { type: 'done', error: { code: 'ERR_SANDBOX_CHILD_EXITED' } });
    t.equal(h.runner.spawned, 2);
  },
);
