/**
 * A session's sandbox over its life, with real containers: idle reap, kill, restart and
 * restart --stale from the operator API, a container killed from outside (reaped, or replaced on
 * the next prompt with a notice), and one killed during a turn (ERR_SANDBOX_LOST at once).
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger, createMetrics, loadConfig } from '../../core/index.js';
import type { PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { EgressGatewayService, egressTarget } from '../../daemon/host/egress.js';
import { agentSettings, buildRoutes } from '../../daemon/host/overlay.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';
import { manager, recordHooks, textOf, turn, until } from './sandbox-kit.js';
import { TestClock } from '../helpers/clock.js';

const log = createLogger({ level: 'warn', destination: process.stderr });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('idle reap, kill, restart and restart --stale', async (t) => {
    const { calls, hooks } = recordHooks();
    // The runtime's clock is the test's: idleness passes when the test advances it, not by sleeping.
    const clock = new TestClock();
    const { m } = await manager(
      t,
      docker,
      image,
      { AIRLOCK_SESSION_IDLE_S: '60', AIRLOCK_POOL_SIZE: '0' },
      { reapIntervalMs: 60_000, hooks, clock },
    );
    const a = await turn(m, 'reap', 'x');
    clock.advance(59_000);
    t.same(await m.reap(), [], 'not idle long enough yet');
    clock.advance(2_000);
    t.same(await m.reap(), ['reap'], 'idle session reaped');
    await t.rejects(
      docker.getContainer(a.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      'its container is gone',
    );
    const a2 = await turn(m, 'reap', 'again');
    t.not(a2.containerId, a.containerId, 'next prompt gets a fresh sandbox');

    const k = await turn(m, 'killme', 'x');
    await m.kill('killme');
    await t.rejects(
      docker.getContainer(k.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      'kill removes the container',
    );
    await t.rejects(m.kill('killme'), { code: 'ERR_SESSION_NOT_FOUND' }, 'unknown id');
    await t.rejects(m.inspect('nope-nope'), { code: 'ERR_SESSION_NOT_FOUND' });

    const r1 = await turn(m, 'restartme', 'x');
    const info = await m.restart('restartme');
    t.not(info.containerId, r1.containerId, 'restart gives a new container');
    const r2 = await turn(m, 'restartme', 'y');
    t.equal(r2.containerId, info.containerId, 'next prompt uses the restarted container');
    t.match(textOf(r2.events), /message 1 of this conversation/, 'a fresh agent');

    // The user's sandboxes end (deactivated, or the account disconnected).
    const u = await turn(m, 'user-9', 'x', 9);
    t.equal(await m.killForUser(9), 1);
    await t.rejects(
      docker.getContainer(u.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      'killForUser removes the container',
    );

    // Every end of a sandbox is reported (serve untracks the session from token rotation).
    t.same(calls, [
      'live reap',
      'ended reap idle',
      'live reap',
      'live killme',
      'ended killme killed by operator',
      'live restartme',
      'ended restartme restart',
      'live restartme',
      'live user-9',
      'ended user-9 user deactivated',
    ]);
  });

  t.test(
    'a container killed from outside is reaped (container and folder gone); the next prompt runs in a new one without a notice',
    async (t) => {
      const { calls, hooks } = recordHooks();
      const metrics = createMetrics();
      const { m, dir } = await manager(
        t,
        docker,
        image,
        { AIRLOCK_POOL_SIZE: '0' },
        { reapIntervalMs: 60_000, hooks, metrics },
      );
      const a = await turn(m, 'dies', 'x');
      const [sb] = m.list();
      t.ok(existsSync(join(dir, 'sandboxes', sb.slot)), 'the slot folder exists');
      await docker.getContainer(a.containerId!).kill();
      await until(
        () => m.list().find((s) => s.sessionId === 'dies' && s.state === 'dead'),
        'the sandbox to be seen dead',
      );
      const exited = await docker.getContainer(a.containerId!).inspect();
      t.equal(exited.State.Running, false, 'an exited container is left behind until reaped');
      t.same(await m.reap(), ['dies'], 'the dead sandbox is reaped');
      await t.rejects(
        docker.getContainer(a.containerId!).inspect(),
        { statusCode: 404 } as unknown as Error,
        'its container is removed',
      );
      t.notOk(existsSync(join(dir, 'sandboxes', sb.slot)), 'its slot folder is removed');
      t.same(m.list(), [], 'nothing listed');
      t.match(
        await metrics.registry.metrics(),
        /^airlock_sessions_reaped_total\{reason="dead"\} 1$/m,
        'counted as reason="dead"',
      );
      const b = await turn(m, 'dies', 'after');
      t.equal(b.stop_reason, 'end_turn');
      t.notOk(
        b.events.some((e) => e.type === 'text_delta' && /stopped unexpectedly/.test(e.text)),
        'no notice (the chat route hands the new sandbox the conversation)',
      );
      const c = await turn(m, 'dies', 'again');
      t.equal(c.stop_reason, 'end_turn');
      t.same(calls, ['live dies', 'ended dies dead', 'live dies']);
    },
  );

  t.test('restart --stale restarts only stale sessions', async (t) => {
    // An injected clock: 'old' is claimed, then an hour passes, then 'fresh' is claimed.
    const clock = new TestClock();
    const { m } = await manager(
      t,
      docker,
      image,
      { AIRLOCK_SESSION_STALE_S: '3600', AIRLOCK_POOL_SIZE: '0' },
      { clock },
    );
    const old = await turn(m, 'old', 'x');
    clock.advance(3601_000);
    const fresh = await turn(m, 'fresh', 'x');
    t.same(
      m
        .list()
        .filter((s) => s.stale)
        .map((s) => s.sessionId),
      ['old'],
    );
    const r = await m.restartStale();
    t.same(r.restarted, ['old']);
    const after = await turn(m, 'old', 'y');
    t.not(after.containerId, old.containerId, 'stale session got a new container');
    t.equal((await turn(m, 'fresh', 'y')).containerId, fresh.containerId, 'fresh session untouched');
  });

  t.test('a container killed from outside is replaced on the next prompt', async (t) => {
    const { m } = await manager(t, docker, image);
    await m.poolReady();
    const a = await turn(m, 'outside', 'x');
    await docker.getContainer(a.containerId!).kill();
    const b = await turn(m, 'outside', 'after');
    t.equal(b.stop_reason, 'end_turn');
    t.not(b.containerId, a.containerId, 'a new container');
    t.notOk(
      b.events.some((e) => e.type === 'text_delta' && /stopped unexpectedly/.test(e.text)),
      'no notice',
    );
    t.match(textOf(b.events), /message 1 of this conversation/, 'a fresh agent answers (this turn brought no context)');
  });

  t.test('a container killed during a turn: the turn ends at once with ERR_SANDBOX_LOST', async (t) => {
    // A model that starts answering and then never finishes: the turn cannot end on its own.
    const KEY = 'sk-stall-model-key-0123456789';
    const model = await openaiModel.start({
      apiKey: KEY,
      script: [
        { kind: 'stall', text: 'Thinking' },
        { kind: 'reply', text: 'fresh sandbox here' },
      ],
    });
    t.teardown(() => model.close());
    const egress = new EgressGatewayService({ log });
    t.teardown(() => egress.close());
    const modelConfig = loadConfig({
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-stall',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: KEY,
      AIRLOCK_MODEL_TIMEOUT_S: '600',
    });
    const preparer: SessionPreparer = {
      async prepare(): Promise<PreparedSession> {
        const routes = buildRoutes({
          google: modelConfig.google,
          model: modelConfig.model,
          hasAccountToken: false,
          hasModelKey: true,
        });
        return {
          routes,
          tokens: { MODEL_API_KEY_REAL: KEY },
          placeholders: { AGENT_MODEL_API_KEY: `placeholder-${randomBytes(8).toString('hex')}` },
          agentEnv: agentSettings(modelConfig),
          egressAllow: [egressTarget(model.url)],
        };
      },
    };
    const { calls, hooks } = recordHooks();
    const { m } = await manager(
      t,
      docker,
      image,
      { AIRLOCK_POOL_SIZE: '0', AIRLOCK_MODEL_TIMEOUT_S: '600' },
      { preparer, egress, hooks },
    );
    let streaming!: () => void;
    const inFlight = new Promise<void>((res) => (streaming = res));
    const pending = turn(m, 'midturn', 'take your time', 7, (e) => e.type === 'text_delta' && streaming());
    await inFlight; // the model's first words arrived: the turn is under way and will not end by itself
    const [sb] = m.list();
    t.equal(sb.state, 'busy');
    const t0 = Date.now();
    await docker.getContainer(sb.containerId).kill();
    const r = await Promise.race([
      pending,
      new Promise<'hang'>((res) => setTimeout(() => res('hang'), 15_000).unref()),
    ]);
    t.not(r, 'hang', 'the turn resolved (no hang)');
    if (r === 'hang') return;
    t.equal(r.stop_reason, 'error');
    t.equal(r.error?.code, 'ERR_SANDBOX_LOST', 'a clear error code: the sandbox was lost');
    t.ok(Date.now() - t0 < 10_000, `it resolved soon after the kill (${Date.now() - t0} ms), not at a deadline`);
    t.match(textOf(r.events), /Thinking/, 'the events before the kill were delivered');
    // The next prompt runs in a new sandbox, without a notice.
    const next = await turn(m, 'midturn', 'hello again');
    t.notOk(next.events.some((e) => e.type === 'text_delta' && /stopped unexpectedly/.test(e.text)));
    t.equal(next.stop_reason, 'end_turn');
    t.not(next.containerId, sb.containerId, 'a new container');
    t.same(calls, ['live midturn', 'ended midturn lost', 'live midturn']);
  });
}
