/**
 * A start on a port in use (issue 41): `airlock demo` and `airlock serve` stop with
 * ERR_PORT_IN_USE before anything starts: no emulator, no database, no demo secrets and no
 * sandbox container (the pool's first one used to be left behind in "Created" after a bare
 * "listen EADDRINUSE").
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, isAppError } from '../../core/index.js';
import { startDemo } from '../../daemon/dev/demo.js';
import { serve } from '../../daemon/serve.js';
import { LABEL_OWNER } from '../../daemon/runtime/sandbox-driver.js';
import { dockerOrSkip, sweep, uniqueOwner } from '../docker/helpers.js';
import { logSink, testConfig } from '../helpers/app.js';

async function busyPort(t: { teardown(fn: () => unknown): void }): Promise<number> {
  const s: Server = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((r) => s.close(r)));
  return (s.address() as AddressInfo).port;
}

function emptyDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-port-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** No sandbox container of this owner exists (checked where an engine answers). */
async function noContainer(t: Test, owner: string): Promise<void> {
  await t.test('no container left behind', async (t) => {
    const docker = await dockerOrSkip(t);
    if (!docker) return;
    t.teardown(() => sweep(docker, owner));
    t.same(
      await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } }),
      [],
      'none with its owner label',
    );
  });
}

const log = createLogger({ level: 'warn', destination: logSink().stream });

t.test('airlock demo on a port in use: ERR_PORT_IN_USE, nothing started', async (t) => {
  const port = await busyPort(t);
  const dir = emptyDir(t);
  const owner = uniqueOwner('port-demo');
  const err = await startDemo({
    env: { AIRLOCK_DATA_DIR: dir, AIRLOCK_HOST: '127.0.0.1', AIRLOCK_PORT: String(port), AIRLOCK_POOL_SIZE: '1' },
    owner,
    print: () => undefined,
    log,
  }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(isAppError(err, 'ERR_PORT_IN_USE'), `refused with its code (${String(err)})`);
  t.match((err as Error).message, new RegExp(`127\\.0\\.0\\.1:${port} is in use`), 'the message names the address');
  t.notMatch((err as Error).message, /EADDRINUSE/, 'not the bare system error');
  t.same(readdirSync(dir), [], 'no secrets, no database in the data folder');
  await noContainer(t, owner);
});

t.test('airlock serve on a port in use: ERR_PORT_IN_USE before the database and the pool', async (t) => {
  const port = await busyPort(t);
  const dir = emptyDir(t);
  const owner = uniqueOwner('port-serve');
  const config = testConfig(dir, { AIRLOCK_HOST: '127.0.0.1', AIRLOCK_PORT: String(port), AIRLOCK_POOL_SIZE: '1' });
  const err = await serve(config, { log, runtime: { owner } }).then(
    async (d) => (await d.close(), null),
    (e: unknown) => e,
  );
  t.ok(isAppError(err, 'ERR_PORT_IN_USE'), `refused with its code (${String(err)})`);
  t.same(readdirSync(dir), [], 'no database made');
  await noContainer(t, owner);
});
