/**
 * The per-user cap on live sandboxes (AIRLOCK_MAX_SANDBOXES_PER_USER, docs/runtime.md): with real
 * containers and a cap of 2, a user's third chat ends that user's oldest idle sandbox to make
 * room; another user is not affected; when every sandbox of the user runs a turn, a new chat is
 * refused with 429 ERR_SESSION_USER_LIMIT and no container is started.
 */
import t from 'tap';
import { recordHooks, manager, turn } from './sandbox-kit.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('a cap of 2 per user: the oldest idle sandbox makes room; none idle, 429', async (t) => {
    const { calls, hooks } = recordHooks();
    const { m } = await manager(
      t,
      docker,
      image,
      { AIRLOCK_MAX_SESSIONS: '6', AIRLOCK_MAX_SANDBOXES_PER_USER: '2', AIRLOCK_POOL_SIZE: '0' },
      { hooks },
    );
    const live = (userId: number) =>
      m
        .list()
        .filter((s) => s.userId === userId)
        .map((s) => s.sessionId)
        .sort();
    t.equal((await turn(m, 'u7-a', 'one')).stop_reason, 'end_turn');
    t.equal((await turn(m, 'u7-b', 'two')).stop_reason, 'end_turn');
    t.same(live(7), ['u7-a', 'u7-b'], 'two sandboxes of user 7');
    const containerA = (await m.inspect('u7-a')).containerId;

    // Third chat: u7-a (used longest ago, idle) ends first, then u7-c starts.
    t.equal((await turn(m, 'u7-c', 'three')).stop_reason, 'end_turn');
    t.same(live(7), ['u7-b', 'u7-c'], 'still two: the oldest idle one made room');
    t.ok(calls.includes('ended u7-a per-user cap'), 'u7-a ended with the reason "per-user cap"');
    await t.rejects(
      docker.getContainer(containerA).inspect(),
      { statusCode: 404 } as unknown as Error,
      "u7-a's container is gone",
    );

    // Another user has a cap of their own.
    t.equal((await turn(m, 'u8-a', 'hi', 8)).stop_reason, 'end_turn');
    t.same(live(8), ['u8-a'], 'user 8 starts a sandbox');
    t.same(live(7), ['u7-b', 'u7-c'], "user 7's sandboxes untouched");

    // Both of user 7's sandboxes run a turn: nothing idle to end, so a new chat is refused.
    const running = [turn(m, 'u7-b', 'busy b'), turn(m, 'u7-c', 'busy c')];
    const before = m.list().length;
    await t.rejects(
      turn(m, 'u7-d', 'four'),
      { code: 'ERR_SESSION_USER_LIMIT', status: 429, message: /wait for one to finish/ },
      'none idle: 429 ERR_SESSION_USER_LIMIT',
    );
    t.equal(m.list().length, before, 'no container started for it');
    for (const r of await Promise.all(running)) t.equal(r.stop_reason, 'end_turn', 'the running turns finish');
    t.notOk(
      calls.some((c) => c.startsWith('ended u7-b') || c.startsWith('ended u7-c')),
      'a sandbox running a turn is never ended for room',
    );

    // Idle again: the next chat makes room as before.
    t.equal((await turn(m, 'u7-d', 'four')).stop_reason, 'end_turn', 'once idle, the next chat makes room');
    t.equal(live(7).length, 2, 'and the user still holds two');
  });
}
