import t from 'tap';
import { handleOperatorRequest, parseOperatorRequest, type OperatorTarget } from '../../daemon/runtime/operator.js';

t.test('operator requests are checked before anything runs', async (t) => {
  t.same(parseOperatorRequest({ cmd: 'ls' }), { cmd: 'ls' });
  t.same(parseOperatorRequest({ cmd: 'kill', id: 'abc123' }), { cmd: 'kill', id: 'abc123' });
  t.same(parseOperatorRequest({ cmd: 'inspect' }), { cmd: 'inspect', id: '' }, 'a missing id finds nothing later');
  t.same(parseOperatorRequest({ cmd: 'kill-user', userId: 4 }), { cmd: 'kill-user', userId: 4 });
  t.same(parseOperatorRequest({ cmd: 'policy-changed', userIds: [1, 2] }), { cmd: 'policy-changed', userIds: [1, 2] });
  for (const bad of [null, 'ls', [], { cmd: 'rm -rf' }, { cmd: 'kill-user', userId: '4' }, { cmd: 'kill-user', userId: 0 }, { cmd: 'kill-user', userId: 1.5 }, { cmd: 'policy-changed', userIds: [1, -2] }, { cmd: 'policy-changed' }]) {
    t.throws(() => parseOperatorRequest(bad), { code: 'ERR_CLI_USAGE', status: 400 }, JSON.stringify(bad));
  }
});

t.test('each request reaches its operation', async (t) => {
  const calls: string[] = [];
  const info = { slot: 's', containerId: 'c', containerName: 'n', sessionId: null, userId: null, state: 'pool' as const, createdAt: 0, claimedAt: null, lastUsedAt: 0, turns: 0, stale: false, adopted: false, fromPool: true };
  const target: OperatorTarget = {
    list: () => (calls.push('list'), [info]),
    inspect: async (id) => (calls.push(`inspect ${id}`), { ...info, container: { name: 'n', image: 'i', status: 'running', startedAt: '', labels: {}, hostConfig: {} }, supervisor: null }),
    kill: async (id) => (calls.push(`kill ${id}`), info),
    restart: async (id) => (calls.push(`restart ${id}`), info),
    restartStale: async () => (calls.push('restart-stale'), { restarted: [], skipped: [] }),
    killForUser: async (u) => (calls.push(`kill-user ${u}`), 2),
    policyChanged: (ids) => void calls.push(`policy ${ids.join(',')}`),
  };
  t.same(await handleOperatorRequest(target, { cmd: 'kill-user', userId: 9 }), { userId: 9, killed: 2 });
  await handleOperatorRequest(target, { cmd: 'ls' });
  await handleOperatorRequest(target, { cmd: 'inspect', id: 'x' });
  await handleOperatorRequest(target, { cmd: 'kill', id: 'y' });
  await handleOperatorRequest(target, { cmd: 'restart', id: 'z' });
  await handleOperatorRequest(target, { cmd: 'restart-stale' });
  t.same(await handleOperatorRequest(target, { cmd: 'policy-changed', userIds: [3] }), { userIds: [3] });
  await t.rejects(handleOperatorRequest(target, { cmd: 'nope' }), { code: 'ERR_CLI_USAGE' });
  t.same(calls, ['kill-user 9', 'list', 'inspect x', 'kill y', 'restart z', 'restart-stale', 'policy 3']);
});
