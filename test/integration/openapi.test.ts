import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMetrics } from '../../core/index.js';
import { OPERATIONS } from '../../web/openapi.js';
import { SSO_REDIRECT_PATH } from '../../web/index.js';
import { startTestApp } from '../helpers/app.js';
import { ROOT } from '../docker/helpers.js';

/**
 * GET /api/openapi.json lists every operation: each route the routers register (read from their
 * source, with the mount prefix web/app.ts gives them) is in the document, and each documented
 * operation reaches a handler (never the catch-all 404 "no route").
 */

// Router source → mount prefix (web/app.ts). memory-routes.ts holds two routers: /api/memories and /api/agent.
const MOUNTS: [string, (p: string) => string][] = [
  ['web/app.ts', (p) => p],
  ['web/ui.ts', (p) => p],
  ['web/auth-routes.ts', (p) => `/api/auth${p}`],
  ['web/identity/sso-routes.ts', (p) => p],
  ['web/identity/admin-routes.ts', (p) => `/api/identity${p}`],
  ['web/data-access/routes.ts', (p) => `/api/data-authorization${p}`],
  ['web/data-access/internal-routes.ts', (p) => `/api/internal${p}`],
  ['web/memory-routes.ts', (p) => (p.startsWith('/memories') ? `/api/agent${p}` : `/api/memories${p === '/' ? '' : p}`)],
  ['web/account-routes.ts', (p) => `/api/account${p === '/' ? '' : p}`],
  ['web/chat-routes.ts', (p) => `/api/chat${p}`],
  ['web/admin-sessions-routes.ts', (p) => `/api/admin/sessions${p === '/' ? '' : p}`],
  ['web/admin-users-routes.ts', (p) => `/api/admin/users${p === '/' ? '' : p}`],
];

/** Every source file under web/ that registers a route (so a new router cannot be forgotten above). */
function routerFiles(dir = 'web'): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...routerFiles(rel));
    else if (e.name.endsWith('.ts') && /\b(?:r|app)\.(get|post|put|patch|delete)\(\s*['A-Z]/.test(readFileSync(join(ROOT, rel), 'utf8'))) out.push(rel);
  }
  return out;
}

function registered(): string[] {
  const out: string[] = [];
  for (const [file, mount] of MOUNTS) {
    const src = readFileSync(join(ROOT, file), 'utf8');
    for (const m of src.matchAll(/\b(?:r|app)\.(get|post|put|patch|delete)\(\s*(?:'([^']+)'|([A-Z_]+)\b)/g)) {
      const raw = m[2] ?? (m[3] === 'SSO_REDIRECT_PATH' ? SSO_REDIRECT_PATH : undefined);
      if (!raw) continue;
      out.push(`${m[1]} ${mount(raw).replace(/:([A-Za-z_]+)/g, '{$1}')}`);
    }
  }
  return out;
}

t.test('every registered route is in the OpenAPI document', async (t) => {
  const documented = new Set(OPERATIONS.map(([m, p]) => `${m} ${p}`));
  const routes = registered();
  t.ok(routes.length > 50, `found the routers' routes (${routes.length})`);
  for (const r of routes) t.ok(documented.has(r), `${r} is documented`);
  t.equal(documented.size, OPERATIONS.length, 'no operation listed twice');
  const known = new Set(MOUNTS.map(([f]) => f));
  for (const f of routerFiles()) t.ok(known.has(f), `${f} registers routes and is checked here`);
});

t.test('GET /api/openapi.json; every documented operation reaches a handler', async (t) => {
  const app = await startTestApp(t, { services: { metrics: createMetrics() } });
  const c = app.client();
  await c.fetchCsrf();
  const doc = await c.json('GET', '/api/openapi.json');
  t.equal(doc.status, 200);
  t.equal(doc.body.openapi, '3.1.0');
  t.equal(doc.body.servers[0].url, app.config.publicOrigin);
  t.ok(doc.body.paths['/api/chat/messages'].post, 'chat is there');
  for (const [method, path] of OPERATIONS) {
    const r = await c.json(method.toUpperCase(), path.replace(/\{[^}]+\}/g, '1'), method === 'get' || method === 'delete' ? undefined : {});
    const noRoute = r.status === 404 && /^no route/.test(r.body?.error?.message ?? '');
    t.notOk(noRoute, `${method.toUpperCase()} ${path} → ${r.status} ${r.body?.error?.code ?? ''}`);
    t.not(r.status, 500, `${method.toUpperCase()} ${path} is not a 500`);
  }
});
