import t from 'tap';
import { createLogger } from '../../core/index.js';
import { Lifecycle } from '../../daemon/lifecycle.js';
import { logSink } from '../helpers/app.js';

/**
 * The composition root's start and stop (daemon/lifecycle.ts, used by daemon/serve.ts): stops run
 * in the reverse order of registration, each once, all of them when one fails; a build that throws
 * stops what it had started.
 */
t.test('stops run last-registered first, once, and all of them when one fails', async (t) => {
  const logs = logSink();
  const life = new Lifecycle(createLogger({ level: 'info', destination: logs.stream }));
  const order: string[] = [];
  life.onStop('database', () => void order.push('database'));
  const gateway = await life.start(
    'gateway',
    () => ({ open: true }),
    (g) => {
      g.open = false;
      order.push('gateway');
    },
  );
  life.onStop('broken', () => {
    order.push('broken');
    throw new Error('it would not close');
  });
  await life.start(
    'listener',
    async () => 'port 1',
    async (p) => void order.push(`listener on ${p}`),
  );
  t.same(life.names(), ['database', 'gateway', 'broken', 'listener']);
  const [a, b] = [life.stop(), life.stop()];
  t.equal(a, b, 'a second stop() is the same shutdown');
  await a;
  t.same(
    order,
    ['listener on port 1', 'broken', 'gateway', 'database'],
    'reverse order; the failure did not stop the others',
  );
  t.equal(gateway.open, false, 'the stop got what the start returned');
  t.match(
    logs.text(),
    /"part":"broken","err":"it would not close"[^\n]*"msg":"a part of the daemon did not stop cleanly"/,
  );
  t.throws(() => life.onStop('late', () => undefined), /late: registered while the daemon stops/);
});

t.test('a build that throws stops what it started, then rethrows', async (t) => {
  const life = new Lifecycle(createLogger({ level: 'silent' }));
  const order: string[] = [];
  life.onStop('database', () => void order.push('database'));
  await t.rejects(
    life.run(async (l) => {
      await l.start(
        'runtime',
        () => 'r',
        () => void order.push('runtime'),
      );
      throw new Error('the listener could not start');
    }),
    /the listener could not start/,
  );
  t.same(order, ['runtime', 'database'], 'nothing left running or open');
});
