import t from 'tap';
import { baseBuildProblems } from '../../daemon/runtime/image.js';

t.test('the offline image build names what the host lacks before running anything', async (t) => {
  t.same(baseBuildProblems(0, true), [], 'root with debootstrap: nothing missing');
  const both = baseBuildProblems(1000, false);
  t.equal(both.length, 2);
  t.match(both[0], /must run as root/);
  t.match(both[1], /apt-get install debootstrap/);
  t.same(baseBuildProblems(0, false).length, 1);
});
