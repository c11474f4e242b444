/**
 * test/run.ts finds test files by folder (an area: test/<area>/, recursively), so a new file needs
 * no list. What it cannot find is a folder it does not know: every folder under test/ that holds a
 * `*.test.ts` is one of its AREAS, and each runsc file it names exists. The runner is read as text
 * (importing it would run the suite).
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/source-tree.js';

const ROOT = repoRoot();
const RUNNER = readFileSync(join(ROOT, 'test', 'run.ts'), 'utf8');

/** The string items of the array literal `const NAME = [ ... ]` in the runner. */
function listOf(name: string): string[] {
  const body = new RegExp(`const ${name} = \\[([^\\]]*)\\]`).exec(RUNNER)?.[1] ?? '';
  return [...body.matchAll(/'([^']+)'/g)].map((m) => m[1]);
}

/** Whether `dir` holds a `*.test.ts` file, at any depth. */
function holdsTests(dir: string): boolean {
  return readdirSync(dir).some((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? holdsTests(p) : name.endsWith('.test.ts');
  });
}

t.test('every folder of test files is an area the runner runs', async (t) => {
  const areas = listOf('AREAS');
  t.ok(areas.includes('unit') && areas.includes('docker'), `the runner's areas: ${areas.join(', ')}`);
  const folders = readdirSync(join(ROOT, 'test')).filter(
    (d) => statSync(join(ROOT, 'test', d)).isDirectory() && holdsTests(join(ROOT, 'test', d)),
  );
  t.ok(folders.length >= 5, `folders with tests: ${folders.join(', ')}`);
  for (const f of folders) t.ok(areas.includes(f), `test/${f}/ is run (add it to AREAS in test/run.ts)`);
  t.same(
    readdirSync(join(ROOT, 'test')).filter((f) => f.endsWith('.test.ts')),
    [],
    'no test file at the top of test/ (it would belong to no area)',
  );
});

t.test('the runsc files the runner names exist', async (t) => {
  const names = listOf('RUNSC_FILES');
  t.ok(names.length >= 5, `${names.length} runsc files`);
  for (const n of names)
    t.ok(existsSync(join(ROOT, 'test', 'docker', `${n}.test.ts`)), `test/docker/${n}.test.ts exists`);
});
