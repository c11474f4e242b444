/**
 * The sandbox processes' Node flags are written in three places that must agree: SANDBOX_NODE_FLAGS
 * (the supervisor and the agent pass them to the processes they spawn), the images' ENTRYPOINT (the
 * supervisor) and the images' compile-cache step (Node keeps one cache folder per V8 flag set: a
 * cache made under other flags would never be read).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SANDBOX_NODE_FLAGS, SANDBOX_MALLOC_ENV } from '../../core/sandbox-env.js';
import { childBaseEnv } from '../../supervisor/idle-child.js';
import { supervisorEntrypoint } from '../../daemon/runtime/image.js';
import { repoRoot } from '../helpers/source-tree.js';

// The repository root from the sources (test/unit/) or from the build (dist/test/unit/) alike.
const ROOT = repoRoot();

for (const file of ['images/Dockerfile.app', 'images/Dockerfile']) {
  t.test(file, async (t) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(text);
    t.ok(entry, 'has an ENTRYPOINT');
    const argv = JSON.parse(entry![1]) as string[];
    t.same(argv.slice(1, -1), SANDBOX_NODE_FLAGS, 'the supervisor runs with SANDBOX_NODE_FLAGS');
    const runs = [...text.matchAll(/\/usr\/local\/bin\/node ((?:--[^\s]+ )*)\/opt\/airlock\/dist\/(\w+)\/main\.js/g)];
    t.same(
      runs.map((r) => r[2]).sort(),
      ['agent', 'supervisor'],
      'the compile-cache step runs the agent (with its servers) and the supervisor',
    );
    for (const r of runs)
      t.same(r[1].trim().split(' '), SANDBOX_NODE_FLAGS, `${r[2]}: the cache is made under the same flags`);
    t.match(text, /^ENV .*NODE_COMPILE_CACHE=\/opt\/airlock\/compile-cache/m, 'the processes find the cache');
    for (const [k, v] of Object.entries(SANDBOX_MALLOC_ENV))
      t.ok(text.split('\n').includes(`ENV ${k}=${v}`), `the supervisor runs with ${k} of SANDBOX_MALLOC_ENV`);
  });
}

t.test('the agent child gets SANDBOX_MALLOC_ENV too', async (t) => {
  const env = childBaseEnv();
  for (const [k, v] of Object.entries(SANDBOX_MALLOC_ENV)) t.equal(env[k], v, k);
});

// The offline image starts the supervisor from its startup snapshot (a blob fits only the flags
// that built it), and falls back to the entry module the Dockerfile names when the build made none.
t.test('startup snapshots: built and run under SANDBOX_NODE_FLAGS', async (t) => {
  const text = readFileSync(join(ROOT, 'images/Dockerfile.app'), 'utf8');
  const build =
    /--no-warnings ((?:--[^\s]+ )*)--snapshot-blob snapshot\.blob --build-snapshot-config snapshot\.json/.exec(text);
  t.ok(build, 'Dockerfile.app builds the blobs');
  const config = /echo '(\{.*\})' >snapshot\.json/.exec(text);
  t.same(
    JSON.parse(config![1]),
    { builder: 'snapshot.cjs', withoutCodeCache: true },
    'from snapshot.cjs, without V8 code cache in the blob (docs/runtime.md#density)',
  );
  t.same(build![1].trim().split(' '), SANDBOX_NODE_FLAGS, 'each blob is built under the flags its process runs with');
  const snap = supervisorEntrypoint(true);
  t.same(
    snap,
    ['/usr/local/bin/node', ...SANDBOX_NODE_FLAGS, '--snapshot-blob', '/opt/airlock/dist/supervisor/snapshot.blob'],
    'the ENTRYPOINT when the build made the supervisor blob',
  );
  const entry = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(text)![1]) as string[];
  t.same(supervisorEntrypoint(false), entry, 'without a blob, the ENTRYPOINT Dockerfile.app names');
});
