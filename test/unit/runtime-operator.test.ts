import t from 'tap';
import { handleOperatorRequest, parseOperatorRequest, type OperatorTarget } from '../../daemon/runtime/operator.js';

t.test('operator requests are checked before anything runs', async (t) => {
  t.same(parseOperatorRequest({ cmd: 'ls' }), { cmd: 'ls' });
  t.same(parseOperatorRequest({ cmd: 'kill', id: 'abc123' }), { cmd: 'kill', id: 'abc123' });
  t.same(parseOperatorRequest({ cmd: 'inspect' }), { cmd: 'inspect', id: '' }, 'a missing id finds nothing later');
  t.same(parseOperatorRequest({ cmd: 'kill-user', userId: 4 }), { cmd: 'kill-user', userId: 4 });
  t.same(parseOperatorRequest({ cmd: 'policy-changed', userIds: [1, 2] }), { cmd: 'policy-changed', userIds: [1, 2] });
  t.same(
    parseOperatorRequest({ cmd: 'logs', id: 'abc' }),
    { cmd: 'logs', id: 'abc', tail: 200 },
    'logs: the last 200 lines unless told',
  );
  t.same(parseOperatorRequest({ cmd: 'logs', id: 'abc', tail: 10_000 }), { cmd: 'logs', id: 'abc', tail: 10_000 });
  for (const bad of [
    null,
    'ls',
    [],
    { cmd: 'rm -rf' },
    { cmd: 'kill-user', userId: '4' },
    { cmd: 'kill-user', userId: 0 },
    { cmd: 'kill-user', userId: 1.5 },
    { cmd: 'policy-changed', userIds: [1, -2] },
    { cmd: 'policy-changed' },
    { cmd: 'logs', id: 'a', tail: 0 },
    { cmd: 'logs', id: 'a', tail: 10_001 },
    { cmd: 'logs', id: 'a', tail: '5' },
    { cmd: 'logs', id: 'a', tail: 2.5 },
  ]) {
    t.throws(() => parseOperatorRequest(bad), { code: 'ERR_CLI_USAGE', status: 400 }, JSON.stringify(bad));
  }
});

t.test('each request reaches its operation', async (t) => {
  const calls: string[] = [];
  const info = {
    slot: 's',
    containerId: 'c',
    containerName: 'n',
    sessionId: null,
    userId: null,
    state: 'pool' as const,
    createdAt: 0,
    claimedAt: null,
    lastUsedAt: 0,
    turns: 0,
    stale: false,
    adopted: false,
    fromPool: true,
    turn: null,
  };
  const target: OperatorTarget = {
    list: () => (calls.push('list'), [info]),
    inspect: async (id) => (
      calls.push(`inspect ${id}`),
      {
        ...info,
        container: { name: 'n', image: 'i', status: 'running', startedAt: '', labels: {}, hostConfig: {} },
        supervisor: null,
      }
    ),
    kill: async (id) => (calls.push(`kill ${id}`), info),
    restart: async (id) => (calls.push(`restart ${id}`), info),
    restartStale: async () => (calls.push('restart-stale'), { restarted: [], skipped: [] }),
    killForUser: async (u) => (calls.push(`kill-user ${u}`), 2),
    policyChanged: (ids) => void calls.push(`policy ${ids.join(',')}`),
    containerOf: (id) => (calls.push(`container ${id}`), `container-of-${id}`),
  };
  // The engine's log, demultiplexed by the driver: the chunks come back in order, as base64.
  const engine = {
    logs: async (id: string, tail: number, out: { stdout(c: Buffer): void; stderr(c: Buffer): void }) => {
      calls.push(`logs ${id} ${tail}`);
      out.stdout(Buffer.from('ready\n'));
      out.stderr(Buffer.from([0xff, 0x00, 0x0a]));
    },
  };
  t.same(await handleOperatorRequest(target, { cmd: 'kill-user', userId: 9 }, engine), { userId: 9, killed: 2 });
  await handleOperatorRequest(target, { cmd: 'ls' }, engine);
  await handleOperatorRequest(target, { cmd: 'inspect', id: 'x' }, engine);
  await handleOperatorRequest(target, { cmd: 'kill', id: 'y' }, engine);
  await handleOperatorRequest(target, { cmd: 'restart', id: 'z' }, engine);
  await handleOperatorRequest(target, { cmd: 'restart-stale' }, engine);
  t.same(await handleOperatorRequest(target, { cmd: 'policy-changed', userIds: [3] }, engine), { userIds: [3] });
  t.same(
    await handleOperatorRequest(target, { cmd: 'logs', id: 'w', tail: 7 }, engine),
    {
      chunks: [
        { stream: 'stdout', data: Buffer.from('ready\n').toString('base64') },
        { stream: 'stderr', data: Buffer.from([0xff, 0x00, 0x0a]).toString('base64') },
      ],
    },
    'logs: every chunk, bytes kept',
  );
  await t.rejects(handleOperatorRequest(target, { cmd: 'nope' }, engine), { code: 'ERR_CLI_USAGE' });
  t.same(calls, [
    'kill-user 9',
    'list',
    'inspect x',
    'kill y',
    'restart z',
    'restart-stale',
    'policy 3',
    'container w',
    'logs container-of-w 7',
  ]);
});
