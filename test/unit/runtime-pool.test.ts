import t from 'tap';
import { silentLogger } from '../../core/index.js';
import { WarmPool } from '../../daemon/runtime/pool.js';
import type { SandboxClient } from '../../daemon/runtime/sandbox-client.js';
import type { Sandbox } from '../../daemon/runtime/sandbox.js';
import { StartGate } from '../../daemon/runtime/start-gate.js';

function member(n: number, closed = false): Sandbox {
  // A member as the pool sees it: only its connection state matters to the pool.
  const client = { closed } as SandboxClient;
  return {
    slot: `s${n}`,
    dir: `/x/s${n}`,
    runDir: `/x/s${n}/run`,
    containerId: `c${n}`,
    containerName: `airlock-pool-s${n}`,
    state: 'pool',
    createdAt: n,
    lastUsedAt: n,
    turns: 0,
    adopted: false,
    fromPool: false,
    client,
  };
}

function rig(size: number, opts: { failAt?: number } = {}) {
  let made = 0;
  const removed: string[] = [];
  let closed = false;
  const gate = new StartGate(1);
  const pool = new WarmPool(
    {
      size,
      gate,
      create: async () => {
        made++;
        if (made === opts.failAt) throw new Error('engine said no');
        return member(made);
      },
      remove: async (sb, why) => void removed.push(`${sb.slot}:${why}`),
      onChange: () => undefined,
      isClosed: () => closed,
      log: silentLogger(),
    },
    size > 0,
  );
  return { pool, removed, made: () => made, close: () => (closed = true) };
}

t.test('fill tops up to the size, once at a time; claim hands over healthy members in order', async (t) => {
  const r = rig(3);
  await Promise.all([r.pool.fill(), r.pool.fill()]);
  t.equal(r.pool.size, 3);
  t.equal(r.made(), 3, 'concurrent fills share one');
  await r.pool.ready(1000);
  const a = r.pool.claim()!;
  t.equal(a.slot, 's1');
  t.ok(a.fromPool, 'a claimed member knows it came from the pool');
  t.equal(r.pool.size, 2);
  // A member whose supervisor went away is skipped and removed, not handed over.
  r.pool.list()[0].client = { closed: true } as SandboxClient;
  t.equal(r.pool.claim()!.slot, 's3');
  t.same(r.removed, ['s2:pool member lost']);
  t.equal(r.pool.claim(), undefined, 'empty');
  await r.pool.ready(1000);
  t.equal(r.pool.size, 3, 'ready fills again');
});

t.test('a failed start stops this fill (the next one tries again); a disabled pool hands nothing over', async (t) => {
  const r = rig(2, { failAt: 2 });
  await r.pool.fill();
  t.equal(r.pool.size, 1);
  await r.pool.fill();
  t.equal(r.pool.size, 2, 'the next fill tries again');
  const never = rig(1, { failAt: 1 });
  never.pool.disable();
  await never.pool.ready(10);
  t.equal(never.pool.claim(), undefined, 'a disabled pool hands nothing over');
});

t.test('after close nothing is added', async (t) => {
  const r = rig(2);
  r.close();
  await r.pool.fill();
  t.equal(r.pool.size, 0);
  t.equal(r.made(), 0);
});
