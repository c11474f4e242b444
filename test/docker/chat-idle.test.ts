/**
 * Idle chats cost nothing (docs/runtime.md, "Idle chats"): a chat's sandbox is released after
 * AIRLOCK_SESSION_IDLE_S by the daemon's own reaper, the chat stays, and its next prompt claims a
 * sandbox and answers with the earlier conversation. A release that races a new prompt leaves no
 * half-written state: whichever wins, the prompt answers with the whole conversation, the session
 * ends with exactly one live sandbox and a released container is really gone.
 */
import t from 'tap';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { TestClock } from '../helpers/clock.js';
import { dbRow } from '../helpers/db.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';
import { chatRig } from './chat-e2e-rig.js';

const docker = await dockerOrSkip(t);
const said = (r: { events: any[] }) =>
  r.events
    .filter((e) => e.type === 'text_delta')
    .map((e) => e.text)
    .join('');
const gone = (id: string) =>
  docker!
    .getContainer(id)
    .inspect()
    .then(
      () => false,
      (err: { statusCode?: number }) => err.statusCode === 404,
    );

if (docker) {
  const image = await ensureTestImage(docker);
  const { start } = chatRig(docker, image);

  t.test(
    'an idle chat: the reaper releases its sandbox; the next prompt answers with the earlier context',
    async (t) => {
      // A short idle time and the real clock: the daemon's own reaper (every 0.5 s here) does it.
      const { d, c } = await start(t, {
        AIRLOCK_MODEL_PROVIDER: 'demo',
        AIRLOCK_POOL_SIZE: '1',
        AIRLOCK_SESSION_IDLE_S: '2',
      });
      const sessions = d.runtime!.sessions;
      const first = await streamTurn(c, { message: 'hello, the word is heron' });
      const sid = first.events.at(-1).session_id;
      t.match(said(first), /message 1 of this conversation/);
      const live = () => sessions.list().find((s) => s.sessionId === sid);
      const before = live()!.containerId;
      await waitFor(() => gone(before), 'the idle sandbox to be released and its container removed');
      t.notOk(live(), 'no sandbox holds the chat any more');
      const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
      t.equal(stored.length, 1, 'the chat itself stays, with its turn');
      // The held time is in usage: its user's row for the chat's model (docs/usage.md).
      const held = await waitFor(
        () =>
          dbRow<{ s: number }>(d.database.sql, 'SELECT sum(sandbox_seconds) AS s FROM usage_daily').then((r) =>
            Number(r?.s) > 0 ? Number(r!.s) : 0,
          ),
        'the sandbox time recorded',
      );
      t.ok(held >= 2, `the released sandbox's time counted in usage (${held} s)`);
      const prom = await (await fetch(`${d.web.url}/metrics`)).text();
      const metric = /^airlock_usage_sandbox_seconds_total\{[^}]*model="([^"]+)"[^}]*\} ([\d.e+-]+)$/m.exec(prom);
      t.ok(metric && Number(metric[2]) >= 2, `and in /metrics by model (${metric?.[1]}: ${metric?.[2]} s)`);
      const next = await streamTurn(c, { message: 'hello again', session_id: sid });
      t.equal(next.status, 200);
      t.match(next.events.at(-1), { type: 'done', stop_reason: 'end_turn', session_id: sid });
      t.match(said(next), /message 2 of this conversation/, 'the new sandbox got the earlier conversation');
      t.notMatch(said(next), /stopped unexpectedly|context/, 'no notice: the user sees no difference');
      t.not(live()?.containerId, before, 'in another sandbox');
    },
  );

  t.test('a release racing a new prompt: no half-written state, whichever wins', async (t) => {
    // The test's clock decides idleness, so the test chooses when the release happens.
    const clock = new TestClock();
    const { d, c } = await start(
      t,
      { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_POOL_SIZE: '1', AIRLOCK_SESSION_IDLE_S: '60' },
      { clock },
    );
    const sessions = d.runtime!.sessions;
    const first = await streamTurn(c, { message: 'turn 1' });
    const sid = first.events.at(-1).session_id;
    const live = () => sessions.list().filter((s) => s.sessionId === sid);
    let n = 1;
    const orders: Record<string, () => Promise<{ turn: Awaited<ReturnType<typeof streamTurn>>; reaped: string[] }>> = {
      // The release is under way (its container being removed) when the prompt arrives.
      'release first': async () => {
        const reaping = sessions.reap();
        const turn = await streamTurn(c, { message: `turn ${n}`, session_id: sid });
        return { turn, reaped: await reaping };
      },
      // The prompt's turn runs when the reaper looks: the busy session is not released.
      'prompt first': async () => {
        const turns = live()[0]!.turns;
        const turning = streamTurn(c, { message: `turn ${n}`, session_id: sid });
        // Busy, or (a fast demo answer) already done: either way the turn took the sandbox first.
        await waitFor(() => live()[0]?.state === 'busy' || live()[0]!.turns > turns, 'the turn to start');
        const reaped = await sessions.reap();
        return { turn: await turning, reaped };
      },
      // Both at once, no order imposed.
      together: async () => {
        const [turn, reaped] = await Promise.all([
          streamTurn(c, { message: `turn ${n}`, session_id: sid }),
          sessions.reap(),
        ]);
        return { turn, reaped };
      },
    };
    for (const [name, run] of Object.entries(orders)) {
      n++;
      const old = live()[0]?.containerId;
      t.ok(old, `${name}: the chat holds a sandbox before`);
      clock.advance(61_000); // idle now
      const { turn, reaped } = await run();
      t.match(
        turn.events.at(-1),
        { type: 'done', stop_reason: 'end_turn', session_id: sid },
        `${name}: the prompt answered`,
      );
      t.match(said(turn), new RegExp(`message ${n} of this conversation`), `${name}: with the whole conversation`);
      const now = live();
      t.equal(now.length, 1, `${name}: exactly one live sandbox for the chat`);
      t.equal(now[0]?.state, 'ready', `${name}: and it is ready`);
      if (reaped.includes(sid)) {
        t.not(now[0]?.containerId, old, `${name}: released, so served by another sandbox`);
        t.ok(await gone(old!), `${name}: the released container is removed`);
      } else {
        t.equal(now[0]?.containerId, old, `${name}: not released, the warm sandbox served it`);
      }
      await sessions.poolReady(); // the next round starts from a full pool
    }
    // Whatever the orders, the store holds every turn once, in order.
    const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
    t.same(
      stored.map((s: { prompt: string }) => s.prompt),
      ['turn 1', 'turn 2', 'turn 3', 'turn 4'],
      'every turn stored once',
    );
  });
}
