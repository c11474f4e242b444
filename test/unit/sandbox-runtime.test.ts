/**
 * AIRLOCK_SANDBOX_RUNTIME against the engine's runtime table (`docker info` → Runtimes): runc
 * always, runsc only when registered with the flags the sandbox needs; the host pids limit.
 */
import t from 'tap';
import { loadConfig } from '../../core/index.js';
import { hostPidsLimit, sandboxHostConfig } from '../../daemon/runtime/docker-driver.js';
import { checkRuntime, requireRuntime } from '../../daemon/runtime/sandbox-runtime.js';

const RUNC = { runc: { path: 'runc' }, 'io.containerd.runc.v2': { path: 'runc' } };

t.test('runc is accepted when the engine has it', async (t) => {
  t.equal(checkRuntime(RUNC, 'runc').ok, true);
  t.match(requireRuntime(RUNC, 'runc'), /^runc/);
});

t.test(
  'a runtime the engine lacks is refused with ERR_SANDBOX_RUNTIME, naming what it has and how to register runsc',
  async (t) => {
    const c = checkRuntime(RUNC, 'runsc');
    t.equal(c.ok, false);
    t.match(c.problem, /no runtime "runsc".*runc.*apt-get install runsc.*--host-uds=all/);
    t.throws(() => requireRuntime(RUNC, 'runsc'), { code: 'ERR_SANDBOX_RUNTIME', status: 503 });
    t.throws(() => requireRuntime(undefined, 'runc'), { code: 'ERR_SANDBOX_RUNTIME' });
  },
);

t.test('runsc needs --network=none and --host-uds=all in its runtimeArgs', async (t) => {
  const bare = { ...RUNC, runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--platform=ptrace'] } };
  t.match(checkRuntime(bare, 'runsc').problem, /--network=none --host-uds=all/);
  const noUds = { ...RUNC, runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none', '--platform=ptrace'] } };
  t.match(checkRuntime(noUds, 'runsc').problem, /lacks --host-uds=all/);
  const open = { ...RUNC, runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none', '--host-uds=open'] } };
  t.equal(
    checkRuntime(open, 'runsc').ok,
    false,
    '--host-uds=open is not enough (the supervisor creates the control socket)',
  );
  const good = {
    ...RUNC,
    runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network', 'none', '-host-uds=all', '--platform=ptrace'] },
  };
  const c = checkRuntime(good, 'runsc');
  t.equal(c.ok, true, 'both spellings of a flag are read');
  t.match(c.summary, /^runsc \(\/usr\/bin\/runsc --network none/);
});

t.test(
  'the host pids limit: the setting under runc, room for gVisor under runsc; Runtime set on the container',
  async (t) => {
    const runc = loadConfig({ AIRLOCK_SANDBOX_PIDS: '100' }).sandbox;
    const runsc = loadConfig({ AIRLOCK_SANDBOX_PIDS: '100', AIRLOCK_SANDBOX_RUNTIME: 'runsc' }).sandbox;
    t.equal(runc.runtime, 'runc', 'runc by default');
    t.equal(hostPidsLimit(runc), 100);
    t.equal(hostPidsLimit(runsc), 256 + 12 * 100);
    t.equal(sandboxHostConfig(runsc, []).Runtime, 'runsc');
    t.equal(sandboxHostConfig(runc, []).Runtime, 'runc');
    t.equal(sandboxHostConfig(runc, []).ShmSize, 16 * 1024 * 1024, '/dev/shm is 16 MiB');
    t.throws(() => loadConfig({ AIRLOCK_SANDBOX_RUNTIME: 'kata' }), /AIRLOCK_SANDBOX_RUNTIME/);
  },
);
