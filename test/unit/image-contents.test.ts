/**
 * What the image ships is listed once: HOST_ONLY_DEPS (daemon/runtime/image-contents.ts) and
 * SANDBOX_DIST (daemon/runtime/image.ts) feed the offline build, and images/Dockerfile (the
 * registry path) must drop and copy the same things. Also: every production dependency is
 * imported by product code (an unused one, or one only tests use, belongs out of `dependencies`).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_ONLY_DEPS } from '../../daemon/runtime/image-contents.js';
import { SANDBOX_DIST } from '../../daemon/runtime/image.js';
import { PRODUCT, repoRoot, tsFiles } from '../helpers/source-tree.js';

const ROOT = repoRoot();

/** What a Dockerfile removes from node_modules after `npm ci` and which dist/ folders it copies. */
function dockerfileContents(text: string): { removed: string[]; dists: string[] } {
  const joined = text.replace(/\\\n/g, ' ');
  const removed = [...joined.matchAll(/\brm -rf ([^&\n]*)/g)].flatMap((m) =>
    [...m[1].matchAll(/node_modules\/((?:@[^/\s]+\/)?[^/\s]+)/g)].map((n) => n[1]),
  );
  const dists = [...joined.matchAll(/^COPY dist\/([\w-]+) /gm)].map((m) => m[1]);
  return { removed: removed.sort(), dists: dists.sort() };
}

t.test('the parser reads what a Dockerfile drops and copies (so a pass means something)', async (t) => {
  const planted =
    'RUN npm ci \\\n && rm -rf node_modules/a node_modules/@s/b \\\n   node_modules/c\nCOPY dist/core /x/dist/core\nCOPY dist/agent /x/dist/agent\n';
  t.same(dockerfileContents(planted), { removed: ['@s/b', 'a', 'c'], dists: ['agent', 'core'] });
});

t.test('images/Dockerfile drops HOST_ONLY_DEPS and copies SANDBOX_DIST, no more, no less', async (t) => {
  const { removed, dists } = dockerfileContents(readFileSync(join(ROOT, 'images', 'Dockerfile'), 'utf8'));
  t.same(removed, [...HOST_ONLY_DEPS].sort(), 'the packages it removes are HOST_ONLY_DEPS');
  t.same(dists, [...SANDBOX_DIST].sort(), 'the dist/ folders it copies are SANDBOX_DIST');
});

t.test('HOST_ONLY_DEPS names production dependencies only', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const d of HOST_ONLY_DEPS)
    t.ok(d in pkg.dependencies, `${d} is in dependencies (a stale name here would hide nothing)`);
});

t.test('every production dependency is imported by product code', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const imported = new Set<string>();
  let files = 0;
  for (const folder of PRODUCT) {
    for (const file of tsFiles(join(ROOT, folder))) {
      files++;
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(
        /(?:from\s+|import\s*\(\s*|^import\s+)['"]((?:@[^/'"]+\/)?[^/'".][^/'"]*)(?:\/[^'"]*)?['"]/gm,
      ))
        imported.add(m[1]);
    }
  }
  t.ok(files > 100 && imported.has('zod'), `${files} product files read`);
  const unused = Object.keys(pkg.dependencies).filter((d) => !imported.has(d));
  t.same(unused, [], 'no dependency that product code never imports (tests only: devDependencies)');
});
