import express, { Router } from 'express';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The browser UI: static files from web/ui/public, the chat page's bundle (web/ui/src, built by
 * `npm run build` into dist/web/ui/assets) under /assets/, and chart.js from node_modules.
 */
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
  const assetsDir = join(here, 'ui', 'assets');
  r.use(
    '/assets',
    express.static(assetsDir, {
      index: false,
      setHeaders(res) {
        res.setHeader('Cache-Control', 'no-cache');
      },
    }),
  );
  // Browsers ask for it on every page: answer with the icon instead of a 404.
  // The ICO (16 and 32 px) from the public folder; the SVG only when the pages are not shipped.
  const faviconIco = publicDir ? join(publicDir, 'favicon.ico') : undefined;
  r.get('/favicon.ico', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    if (faviconIco && existsSync(faviconIco)) {
      res.type('image/x-icon').sendFile(faviconIco);
      return;
    }
    res.setHeader('Content-Type', 'image/svg+xml');
    res.end(FAVICON_SVG);
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

const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f5fbf"/><path d="M10 14v-3a6 6 0 0 1 12 0v3" fill="none" stroke="#fff" stroke-width="3"/><rect x="7" y="14" width="18" height="12" rx="2" fill="#fff"/></svg>';
