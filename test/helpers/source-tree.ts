/** The repository's own source files, for the tests that read the tree as text (boundaries, import cycles, duplicate code). */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The product folders: everything that ships, in the image or on the host. */
export const PRODUCT = [
  'agent',
  'core',
  'daemon',
  'domain',
  'emulator',
  'extensions',
  'proxy',
  'supervisor',
  'tools',
  'web',
];

/** The repository root (the first folder above this file with a package.json). */
export function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}

/** Every .ts/.tsx source below `dir` (declaration files, node_modules and built pages left out). */
export function* tsFiles(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'public') continue;
    if (statSync(p).isDirectory()) yield* tsFiles(p);
    else if (/\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}
