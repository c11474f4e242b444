/**
 * `airlock demo`'s own wiring (daemon/dev/demo.ts startDemo: emulators, pool, settings) in a data
 * folder of its own, for the Docker tests that drive the demo: its containers carry an owner
 * label swept at teardown, its workspace mounts are undone and the folder removed.
 */
import type { Test } from 'tap';
import type Docker from 'dockerode';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { startDemo, type Demo } from '../../daemon/dev/demo.js';
import { sweep, uniqueOwner, unmountUnder } from './helpers.js';

/** Start the demo on a free port with `image` and `env` on top; closed (containers removed) at the test's end. */
export async function startTestDemo(
  t: Test,
  docker: Docker,
  image: string,
  name: string,
  env: Record<string, string> = {},
): Promise<Demo> {
  const dir = mkdtempSync(join(tmpdir(), `airlock-${name}-`));
  t.teardown(() => {
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  const owner = uniqueOwner(name.replace(/[^a-z]/g, ''));
  t.teardown(() => sweep(docker, owner));
  const demo = await startDemo({
    env: { AIRLOCK_DATA_DIR: dir, AIRLOCK_PORT: '0', AIRLOCK_IMAGE: image, ...env },
    owner,
    print: () => undefined,
    log: createLogger({ level: process.env.DEMO_TEST_LOG ? 'info' : 'silent', destination: process.stderr }),
  });
  t.teardown(() => demo.close({ removeContainers: true }));
  return demo;
}
