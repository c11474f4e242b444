/**
 * Every route of the web app (the OpenAPI operation table, which a test keeps complete) sent
 * as anonymous, plain user and superuser, plus without the CSRF token and with a body that is
 * not JSON. Each case asserts the status class the route's audience dictates, and that nothing
 * reached an upstream (the workspace provider's endpoints point at a recording server).
 */
import t from 'tap';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { ROUTES } from '../../web/routes/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import type { Client } from '../helpers/client.js';

const PASSWORD = 'correct horse battery staple';
const UNSAFE = new Set(['post', 'put', 'patch', 'delete']);
/** Routes that would end the caller's own session or log it in again: checked for CSRF and content type only. */
const SESSION_CHANGING = new Set(['/api/auth/logout', '/api/auth/login']);

function concrete(path: string): string {
  return path
    .replace('{name}', '00000000-0000-4000-8000-000000000000.png')
    .replace('{provider}', 'google')
    .replace('{table_name}', 'sales')
    .replace(/\{[A-Za-z_]+\}/g, '1');
}

t.test('route matrix: anon / user / superuser / no CSRF / wrong content type', async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const app = await startTestApp(t, {
    env: {
      AIRLOCK_GOOGLE_MAIL_BASE_URL: upstream.url,
      AIRLOCK_GOOGLE_SHEETS_BASE_URL: upstream.url,
      AIRLOCK_GOOGLE_DRIVE_BASE_URL: upstream.url,
      AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: upstream.url,
      AIRLOCK_GOOGLE_TOKEN_URL: `${upstream.url}/token`,
      AIRLOCK_GOOGLE_REVOKE_URL: `${upstream.url}/revoke`,
      AIRLOCK_GOOGLE_AUTH_URL: `${upstream.url}/auth`,
    },
  });
  await addUser(app.database, 'root', PASSWORD, { superuser: true });
  await addUser(app.database, 'plain', PASSWORD);
  const anon = app.client();
  await anon.fetchCsrf();
  const user = app.client();
  t.equal((await user.login('plain', PASSWORD)).status, 200);
  const sup = app.client();
  t.equal((await sup.login('root', PASSWORD)).status, 200);
  const principals: Array<[string, Client]> = [
    ['anon', anon],
    ['user', user],
    ['superuser', sup],
  ];

  let cases = 0;
  for (const { method, path, who } of ROUTES) {
    const url = concrete(path);
    const api = path.startsWith('/api/');
    const unsafe = UNSAFE.has(method);
    const M = method.toUpperCase();
    const body = unsafe && M !== 'DELETE' ? {} : undefined;
    for (const [p, shared] of principals) {
      if (SESSION_CHANGING.has(path) && p !== 'anon') continue;
      // Logout ends the session it is sent in: those get a client of their own.
      let c = shared;
      if (SESSION_CHANGING.has(path)) {
        c = app.client();
        await c.fetchCsrf();
      }
      if (who === 'idp-redirect') continue; // checked by the SSO and account tests (state-bound)
      const r = await c.json(M, url, body);
      cases++;
      const tag = `${p} ${M} ${path} → ${r.status}`;
      t.not(r.status, 500, `${tag}: no internal error`);
      t.not(r.status, 415, `${tag}: a JSON body is accepted`);
      if (who === 'agent' || who === 'internal' || who === 'node') {
        t.ok(r.status === 401 || r.status === 503, `${tag}: session cookies do not open the ${who} API`);
        if (who === 'node') t.equal(r.body?.error?.code, 'ERR_NODE_AUTH', `${tag}: only a signed request from a node`);
      } else if (who === 'anyone') {
        t.ok(r.status !== 401 && r.status !== 403, `${tag}: open to anyone`);
      } else if (p === 'anon') {
        t.equal(r.status, 401, `${tag}: log in first`);
        t.equal(r.body?.error?.code, 'ERR_AUTH_REQUIRED');
      } else if (who === 'superuser' && p === 'user') {
        t.equal(r.status, 403, `${tag}: superuser only`);
      } else if (who === 'manager' && p === 'user') {
        t.ok(r.status === 403 || r.status === 404, `${tag}: managers only`);
      } else {
        t.ok(r.status !== 401 && r.status !== 403, `${tag}: allowed`);
      }
      // /api/internal/* authenticates by secret, /api/fleet/* by a node signature: no CSRF there.
      if (!api || !unsafe || path.startsWith('/api/internal/') || path.startsWith('/api/fleet/')) continue;
      // Without the CSRF token: 403 for everyone, before anything runs.
      const noCsrf = await c.json(M, url, body, { 'x-csrf-token': '' });
      cases++;
      t.equal(noCsrf.status, 403, `${p} ${M} ${path} without CSRF: 403`);
      t.equal(noCsrf.body?.error?.code, 'ERR_AUTH_CSRF');
    }
    if (!api || !unsafe) continue;
    // A form body (what a cross-site form can send) and a text body: 415 on every JSON route.
    for (const [type, payload] of [
      ['application/x-www-form-urlencoded', 'a=1'],
      ['text/plain', '{}'],
      ['multipart/form-data; boundary=x', '--x--'],
    ]) {
      const r = await sup.json(M, url, payload, { 'content-type': type });
      cases++;
      t.equal(r.status, 415, `${M} ${path} with ${type}: 415`);
      t.equal(r.body?.error?.code, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE');
    }
  }
  t.ok(cases >= 200, `${cases} cases`);
  t.same(
    upstream.requests.map((r) => `${r.method} ${r.path}`),
    [],
    'nothing reached an upstream',
  );
});
