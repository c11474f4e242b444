import t from 'tap';
import { compileErrors, validate } from '@readme/openapi-parser';
import { createMetrics } from '../../core/index.js';
import { ROUTES } from '../../web/routes/index.js';
import { SSO_REDIRECT_PATH } from '../../web/index.js';
import { addUser, startTestApp } from '../helpers/app.js';

/**
 * GET /api/openapi.json against the app itself: the document validates as OpenAPI 3.1 with a
 * standard validator (@readme/openapi-parser), and it matches the express router walked at run
 * time (every registered method+path is documented, every documented one is registered, and each
 * documented operation reaches a handler, never the catch-all 404 "no route").
 *
 * A new route fails the second test until it has its definition (web/routes/):
 * { method: 'post', path: '/api/x/{id}', who, summary, body? } in its area, the path in OpenAPI
 * form (:id → {id}).
 */

interface RouterLayer {
  rawPath?: string | RegExp | (string | RegExp)[];
  route?: { path: string | RegExp | (string | RegExp)[]; methods: Record<string, boolean> };
  handle?: { stack?: RouterLayer[] };
}

/** Every `method path` the app's router (and the routers mounted in it) registers, in OpenAPI form. */
function routerOperations(app: { router: { stack: RouterLayer[] } }): string[] {
  const out: string[] = [];
  // A router mounted at '/' adds nothing; a route at '/' of a mounted router is the mount path itself.
  const join = (prefix: string, p: string) => (prefix === '/' ? '' : prefix) + (p === '/' ? '' : p) || '/';
  const walk = (stack: RouterLayer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const p of paths) {
          if (typeof p !== 'string')
            throw new Error(
              `a route with a RegExp path under ${prefix || '/'}: document it by hand and teach this test`,
            );
          for (const [m, on] of Object.entries(layer.route.methods)) {
            if (on && m !== '_all') out.push(`${m} ${join(prefix, p).replace(/:([A-Za-z_]+)/g, '{$1}')}`);
          }
        }
      } else if (layer.handle?.stack) {
        const raw = layer.rawPath ?? '/';
        if (typeof raw !== 'string') throw new Error('a router mounted on a RegExp path: teach this test');
        walk(layer.handle.stack, join(prefix, raw));
      }
    }
  };
  walk(app.router.stack, '');
  return out;
}

t.test('the served document is valid OpenAPI 3.1 (@readme/openapi-parser)', async (t) => {
  const app = await startTestApp(t, { services: { metrics: createMetrics() } });
  const doc = (await app.client().json('GET', '/api/openapi.json')).body;
  const result = await validate(structuredClone(doc));
  t.ok(result.valid, result.valid ? 'valid' : compileErrors(result));
  t.same(result.warnings, [], 'no warnings');
  // The validator can fail: a broken copy is rejected.
  const broken = structuredClone(doc);
  broken.paths['/api/chat/messages'].post.responses = 'none';
  t.notOk((await validate(broken)).valid, 'a broken document is rejected');
});

t.test('the document and the express router list the same operations', async (t) => {
  const app = await startTestApp(t, { services: { metrics: createMetrics() } });
  const routes = routerOperations(app.web.app as unknown as { router: { stack: RouterLayer[] } });
  t.ok(routes.length > 50, `walked the router (${routes.length} routes)`);
  const registered = new Set(routes);
  const documented = new Set(ROUTES.map((d) => `${d.method} ${d.path}`));
  t.equal(documented.size, ROUTES.length, 'no route defined twice');
  const undocumented = [...registered].filter((r) => !documented.has(r));
  const unregistered = [...documented].filter((d) => !registered.has(d));
  t.same(undocumented, [], 'every registered route has its definition (web/routes/)');
  t.same(unregistered, [], 'every documented operation is registered');
  t.ok(registered.has(`post ${SSO_REDIRECT_PATH}`), 'constant paths are seen as registered');
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
  for (const { method, path } of ROUTES) {
    const r = await c.json(
      method.toUpperCase(),
      path.replace(/\{[^}]+\}/g, '1'),
      method === 'get' || method === 'delete' ? undefined : {},
    );
    const noRoute = r.status === 404 && /^no route/.test(r.body?.error?.message ?? '');
    t.notOk(noRoute, `${method.toUpperCase()} ${path} → ${r.status} ${r.body?.error?.code ?? ''}`);
    t.not(r.status, 500, `${method.toUpperCase()} ${path} is not a 500`);
  }
});

t.test("a body the definition's schema refuses, the route refuses: one unknown field", async (t) => {
  const app = await startTestApp(t, {
    services: { metrics: createMetrics(), chat: { runner: { runTurn: async () => ({ stop_reason: 'end_turn' }) } } },
  });
  await addUser(app.database, 'root', 'a-long-enough-password', { superuser: true });
  const c = app.client();
  t.equal((await c.login('root', 'a-long-enough-password')).status, 200);
  const doc = (await c.json('GET', '/api/openapi.json')).body;
  // The routes with a body that a signed-in superuser reaches without a resource of its own first.
  const plain = ROUTES.filter(
    (d) => d.body && !d.path.includes('{') && ['anyone', 'user', 'superuser'].includes(d.who),
  );
  t.ok(plain.length >= 10, `${plain.length} routes`);
  for (const d of plain) {
    const schema = doc.paths[d.path][d.method].requestBody.content['application/json'].schema;
    t.equal(schema.additionalProperties, false, `${d.method} ${d.path}: the document refuses unknown fields`);
    const r = await c.json(d.method.toUpperCase(), d.path, { zz_not_a_field: 1 });
    t.equal(r.status, 400, `${d.method} ${d.path} → ${r.status} ${r.body?.error?.code}`);
    t.match(JSON.stringify(r.body?.error), /zz_not_a_field/, `${d.method} ${d.path}: the answer names the field`);
  }
});
