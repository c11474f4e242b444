// Bundles the browser UI (web/ui/src, TypeScript + Preact) into dist/web/ui/assets/ with esbuild:
// main.js (the shell and the chat page, an ES module; each admin page a chunk it imports when
// opened) and theme.js (a classic
// script run before the first paint). Run by `npm run build` after tsc has type-checked it
// (web/ui/tsconfig.json). No inline script: index.html loads both from /assets/, under the strict
// CSP of web/ui.ts.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const common = {
  outdir: join(root, 'dist/web/ui/assets'),
  bundle: true,
  target: 'es2022',
  minify: true,
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'warning',
};
// Chunk names carry a hash: start from an empty folder so old chunks do not pile up.
rmSync(common.outdir, { recursive: true, force: true });
await Promise.all([
  build({
    ...common,
    entryPoints: { main: join(root, 'web/ui/src/main.tsx') },
    format: 'esm',
    // The admin pages are imported when opened: chunks beside main.js.
    splitting: true,
    chunkNames: 'chunk-[name]-[hash]',
    jsx: 'automatic',
    jsxImportSource: 'preact',
  }),
  build({ ...common, entryPoints: { theme: join(root, 'web/ui/src/theme.ts') }, format: 'iife' }),
]);
