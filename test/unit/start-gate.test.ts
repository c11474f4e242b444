import t from 'tap';
import { StartGate } from '../../daemon/runtime/start-gate.js';

t.test('at most `limit` holders; waiters enter in arrival order as places free up', async (t) => {
  const seen: string[] = [];
  const gate = new StartGate(2, (g) => seen.push(`${g.active}/${g.waiting}`));
  const order: string[] = [];
  const holders = new Map<string, () => void>();
  const enter = (name: string) =>
    gate.enter().then((release) => {
      order.push(name);
      holders.set(name, release);
    });
  const all = ['a', 'b', 'c', 'd', 'e'].map(enter);
  await new Promise((r) => setImmediate(r));
  t.same(order, ['a', 'b'], 'two enter at once');
  t.same(gate.stats, { active: 2, waiting: 3 });

  holders.get('b')!();
  holders.get('b')!(); // a second release of the same place changes nothing
  await new Promise((r) => setImmediate(r));
  t.same(order, ['a', 'b', 'c'], 'the first waiter takes the freed place');
  t.same(gate.stats, { active: 2, waiting: 2 });

  holders.get('a')!();
  holders.get('c')!();
  await new Promise((r) => setImmediate(r));
  t.same(order, ['a', 'b', 'c', 'd', 'e'], 'arrival order kept');
  holders.get('d')!();
  holders.get('e')!();
  await Promise.all(all);
  t.same(gate.stats, { active: 0, waiting: 0 }, 'every place returned');
  t.same(seen.slice(0, 5), ['1/0', '2/0', '2/1', '2/2', '2/3'], 'every change is reported (for the waiting gauge)');
  t.equal(seen.at(-1), '0/0');
});

t.test('a limit below one is refused', async (t) => {
  t.throws(() => new StartGate(0), RangeError);
  t.throws(() => new StartGate(1.5), RangeError);
});
