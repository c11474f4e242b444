/**
 * AIRLOCK_SANDBOX_RUNTIME against a real engine: `airlock doctor` says which runtime is in use
 * and fails on one the engine lacks; the runtime (what `serve` starts) refuses to start on it
 * with ERR_SANDBOX_RUNTIME and runs sandboxes under the configured one otherwise.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createLogger, loadConfig } from '../../core/index.js';
import { checkRuntime, startRuntime, type EngineRuntimes } from '../../daemon/runtime/index.js';
import {
  dataDir,
  DOCKER_SOCKET,
  dockerOrSkip,
  ensureTestImage,
  runCli,
  runtimeConfig,
  SANDBOX_RUNTIME,
  sweep,
  uniqueOwner,
} from './helpers.js';

const log = createLogger({ level: 'silent' });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const runtimes = ((await docker.info()) as { Runtimes?: EngineRuntimes }).Runtimes;
  const runscOk = checkRuntime(runtimes, 'runsc').ok;

  t.test('airlock doctor names the sandbox runtime and fails on one the engine cannot run', async (t) => {
    const dir = dataDir(t);
    const env = { AIRLOCK_DATA_DIR: dir, AIRLOCK_DOCKER_SOCKET: DOCKER_SOCKET };
    const runc = await runCli({ ...env, AIRLOCK_SANDBOX_RUNTIME: 'runc' }, ['doctor']);
    t.match(runc.stdout, /^sandbox runtime\s+runc\b/m, 'runc: named');
    t.equal(runc.code, 0, 'runc: exit 0');
    const runsc = await runCli({ ...env, AIRLOCK_SANDBOX_RUNTIME: 'runsc' }, ['doctor']);
    if (runscOk) {
      t.match(
        runsc.stdout,
        /^sandbox runtime\s+runsc \(.*--host-uds=all/m,
        'runsc registered as needed: named with its flags',
      );
      t.equal(runsc.code, 0);
    } else {
      t.match(
        runsc.stdout,
        /^sandbox runtime\s+UNAVAILABLE: .*runsc/m,
        'an engine without (a usable) runsc: said plainly',
      );
      t.equal(runsc.code, 1, 'and exits 1');
    }
  });

  t.test(
    'the runtime refuses to start on a runtime the engine lacks; runs sandboxes under the configured one',
    async (t) => {
      const image = await ensureTestImage(docker);
      if (!runscOk) {
        const cfg = loadConfig({
          AIRLOCK_DATA_DIR: dataDir(t),
          AIRLOCK_IMAGE: image,
          AIRLOCK_DOCKER_SOCKET: DOCKER_SOCKET,
          AIRLOCK_SANDBOX_RUNTIME: 'runsc',
          AIRLOCK_POOL_SIZE: '0',
        });
        await t.rejects(
          startRuntime({ config: cfg, log, owner: uniqueOwner('rt-refused') }),
          { code: 'ERR_SANDBOX_RUNTIME', message: /no runtime "runsc"|lacks --/ },
          'ERR_SANDBOX_RUNTIME before any container',
        );
      }
      const owner = uniqueOwner('rt');
      t.teardown(() => sweep(docker, owner));
      const rt = await startRuntime({
        config: runtimeConfig(dataDir(t), image, { AIRLOCK_POOL_SIZE: '0' }),
        log,
        owner,
      });
      t.ok(rt, 'started');
      t.teardown(() => rt?.close({ removeContainers: true }));
      const r = await rt!.sessions.runTurn({
        userId: 3,
        sessionId: 'rt-1',
        turnId: randomBytes(4).toString('hex'),
        prompt: 'hi',
        signal: new AbortController().signal,
        onEvent: () => undefined,
      });
      t.equal(r.stop_reason, 'end_turn');
      const c = await docker.getContainer(r.containerId!).inspect();
      t.equal(
        (c.HostConfig as { Runtime?: string }).Runtime,
        SANDBOX_RUNTIME,
        `the sandbox runs under ${SANDBOX_RUNTIME}`,
      );
    },
  );
}
