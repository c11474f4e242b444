import t from 'tap';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Who may import whom (DESIGN.md folder table). Code shipped in the sandbox never imports web/ or daemon/. */
const ALLOWED: Record<string, string[]> = {
  core: ['core'],
  proxy: ['proxy', 'core'],
  supervisor: ['supervisor', 'core', 'proxy', 'agent'],
  agent: ['agent', 'core'],
  tools: ['tools', 'core'],
  extensions: ['extensions', 'core'],
  web: ['web', 'core'],
  emulator: ['emulator', 'core'],
};

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}

function* tsFiles(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'public') continue;
    if (statSync(p).isDirectory()) yield* tsFiles(p);
    else if (/\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}

const IMPORT_RE = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

t.test('folder import boundaries hold', async (t) => {
  const root = repoRoot();
  const violations: string[] = [];
  let checked = 0;
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    for (const file of tsFiles(join(root, folder))) {
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(IMPORT_RE)) {
        const spec = m[1] ?? m[2];
        if (!spec.startsWith('.')) continue;
        checked++;
        const target = relative(root, resolve(dirname(file), spec)).split('/')[0];
        if (!allowed.includes(target)) violations.push(`${relative(root, file)} imports ${spec} (${target}/)`);
      }
    }
  }
  t.ok(checked > 0, 'some imports were checked');
  t.same(violations, [], 'no forbidden imports');
});
