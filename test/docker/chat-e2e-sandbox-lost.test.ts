/**
 * A chat's conversation outlives its sandbox: the container killed mid-turn ends the turn with
 * ERR_SANDBOX_LOST, and after an idle reap, a pool claim, an operator restart or a docker kill
 * the next prompt's new sandbox gets the whole conversation.
 */
import t from 'tap';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { TestClock } from '../helpers/clock.js';
import { dockerOrSkip, ensureTestImage, SANDBOX_RUNTIME } from './helpers.js';
import { chatRig, said } from './chat-e2e-rig.js';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start, startStalling } = chatRig(docker, image);

  t.test(
    'the container killed from outside mid-turn: the stream ends with one done ERR_SANDBOX_LOST; the next prompt gets a new container and the whole conversation',
    async (t) => {
      // The model starts answering and never finishes, so only the kill can end the turn.
      const { d, c, model } = await startStalling(t, 'Fresh sandbox here.');
      let killed: string | undefined;
      let guard: NodeJS.Timeout | undefined;
      const turn = streamTurn(c, { message: 'take your time' }, async (e, _all, sessionId) => {
        if (e.type !== 'text_delta' || killed) return;
        // The model's first words arrived: the turn is under way inside the container.
        const sb = d.runtime!.sessions.list().find((s) => s.sessionId === sessionId);
        killed = sb!.containerId;
        await docker!.getContainer(killed).kill();
      });
      const r = await Promise.race([
        turn,
        new Promise<'hang'>((res) => (guard = setTimeout(() => res('hang'), 60_000))),
      ]);
      clearTimeout(guard);
      t.not(r, 'hang', 'the stream ended (hang guard)');
      if (r === 'hang') return;
      t.ok(killed, 'the container was killed mid-turn');
      t.equal(r.status, 200);
      t.same(
        r.events.map((e) => e.seq),
        r.events.map((_, i) => i + 1),
        'seq increases by one',
      );
      t.equal(r.events.filter((e) => e.type === 'done').length, 1, 'exactly one done');
      const done = r.events.at(-1);
      t.match(
        done,
        { type: 'done', stop_reason: 'error', error: { code: 'ERR_SANDBOX_LOST' } },
        'the turn ends naming the lost sandbox',
      );
      t.equal(
        r.events
          .filter((e) => e.type === 'text_delta')
          .map((e) => e.text)
          .join(''),
        'Thinking',
        'the words before the kill were delivered',
      );
      const sid = done.session_id;
      const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
      t.match(stored[0], { stop_reason: 'error', error: { code: 'ERR_SANDBOX_LOST' } }, 'stored with the same outcome');

      const next = await streamTurn(c, { message: 'hello again', session_id: sid });
      t.equal(next.status, 200);
      t.notOk(
        next.events.some((e) => e.type === 'text_delta' && /stopped unexpectedly|context/.test(e.text)),
        'no notice: the model simply continues',
      );
      t.same(
        said(model.requests.at(-1)!.body),
        ['user:take your time', 'assistant:Thinking\n\n[This answer ended early with an error.]', 'user:hello again'],
        "the new sandbox's first request holds the conversation",
      );
      t.match(next.events.at(-1), { type: 'done', stop_reason: 'end_turn', session_id: sid });
      t.match(
        next.events
          .filter((e) => e.type === 'text_delta')
          .map((e) => e.text)
          .join(''),
        /Fresh sandbox here/,
      );
      const now = d.runtime!.sessions.list().filter((s) => s.sessionId === sid);
      t.equal(now.length, 1, 'one sandbox for the session');
      t.not(now[0]?.containerId, killed, 'served by a new container');
      await t.rejects(
        docker!.getContainer(killed!).inspect(),
        { statusCode: 404 } as unknown as Error,
        'the killed container was removed',
      );
    },
  );

  t.test('the conversation outlives every sandbox: idle reap, pool claim, operator restart, docker kill', async (t) => {
    // The demo model says how many user messages its request held ("message N of this conversation").
    // The daemon's clock is the test's: the session goes idle when the test advances it.
    const clock = new TestClock();
    const { d, c } = await start(
      t,
      { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_POOL_SIZE: '1', AIRLOCK_SESSION_IDLE_S: '600' },
      { clock },
    );
    const sessions = d.runtime!.sessions;
    const said = (r: { events: any[] }) =>
      r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join('');
    const first = await streamTurn(c, { message: 'hello one' });
    const sid = first.events.at(-1).session_id;
    t.match(said(first), /message 1 of this conversation/);
    t.match(
      said(await streamTurn(c, { message: 'hello two', session_id: sid })),
      /message 2 of this conversation/,
      'warm',
    );
    const live = () => sessions.list().find((s) => s.sessionId === sid);
    const before = live()!.containerId;
    // Idle reap (AIRLOCK_SESSION_IDLE_S=600, passed on the clock): the sandbox goes; the next prompt claims the pool member.
    t.same(await sessions.reap(), [], 'not idle yet');
    clock.advance(601_000);
    await sessions.reap(); // (the daemon's own reaper may have got there first: either removes it)
    t.notOk(live(), 'reaped when idle');
    await sessions.poolReady(); // the member the first prompt claimed has been replaced
    const afterReap = await streamTurn(c, { message: 'hello three', session_id: sid });
    t.match(
      said(afterReap),
      /message 3 of this conversation/,
      'after the idle reap, in a pool member: the whole conversation',
    );
    t.not(live()?.containerId, before);
    // Under gVisor the pool is off (docs/runtime.md): there a new sandbox cold-starts.
    if (SANDBOX_RUNTIME === 'runc') t.equal(live()?.fromPool, true, 'a pool member claimed for an old chat');
    // Operator restart.
    const restarted = await sessions.restart(sid);
    t.match(
      said(await streamTurn(c, { message: 'hello four', session_id: sid })),
      /message 4 of this conversation/,
      'after an operator restart',
    );
    t.equal(live()?.containerId, restarted.containerId);
    // Killed from outside.
    await docker!.getContainer(restarted.containerId).kill();
    await waitFor(() => !live() || live()?.state === 'dead', 'the runtime to see the sandbox die');
    const afterKill = await streamTurn(c, { message: 'hello five', session_id: sid });
    t.match(said(afterKill), /message 5 of this conversation/, 'after a docker kill');
    t.notMatch(said(afterKill), /stopped unexpectedly|context/, 'no notice');
  });
}
