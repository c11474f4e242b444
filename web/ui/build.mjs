// Bundles the chat page (web/ui/src, TypeScript + Preact) into dist/web/ui/assets/ with esbuild.
// Run by `npm run build` after tsc has type-checked it (web/ui/tsconfig.json). No inline script:
// the page loads the bundle as a module from /assets/, under the strict CSP of web/ui.ts.
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
await build({
  entryPoints: { chat: join(root, 'web/ui/src/chat.tsx') },
  outdir: join(root, 'dist/web/ui/assets'),
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
