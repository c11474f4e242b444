import express, { Router } from 'express';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The browser UI: static files from web/ui/public (no build step) and chart.js from node_modules. */
export function uiRoutes(): Router {
  const r = Router();
  const here = dirname(fileURLToPath(import.meta.url));
  // Running from dist/web/ui.js or (tests) from the source tree: find web/ui/public either way.
  const candidates = [join(here, 'ui', 'public'), join(here, '..', '..', 'web', 'ui', 'public')];
  const publicDir = candidates.find((p) => existsSync(join(p, 'index.html')));
  const require = createRequire(import.meta.url);
  // chart.js does not export its UMD build as a subpath: locate it next to the package entry.
  const chartJs = join(dirname(require.resolve('chart.js')), 'chart.umd.js');
  r.get('/vendor/chart.umd.js', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.sendFile(chartJs);
  });
  if (publicDir) {
    r.use(
      express.static(publicDir, {
        index: 'index.html',
        setHeaders(res) {
          res.setHeader('Cache-Control', 'no-cache');
          res.setHeader(
            'Content-Security-Policy',
            "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
          );
        },
      }),
    );
  }
  return r;
}
