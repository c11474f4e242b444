import t from 'tap';
import { addUser, startTestApp, tempDir, TEST_SECRETS, logSink } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'correct horse battery staple';

t.test('login: ok, wrong password, unknown user', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'alice', PASSWORD);

  const c = app.client();
  const ok = await c.login('alice', PASSWORD);
  t.equal(ok.status, 200);
  t.equal(ok.body.user.username, 'alice');
  t.notOk('password_hash' in ok.body.user, 'no hash in the answer');
  const me = await c.json('GET', '/api/auth/me');
  t.equal(me.status, 200);
  t.equal(me.body.username, 'alice');
  t.equal(me.body.is_superuser, false);

  const wrong = await app.client().login('alice', 'nope-nope');
  t.equal(wrong.status, 401);
  t.equal(wrong.body.error.code, 'ERR_AUTH_INVALID_CREDENTIALS');
  const unknown = await app.client().login('mallory', 'nope-nope');
  t.equal(unknown.status, 401);
  t.same(unknown.body, wrong.body, 'unknown user gets the same answer as a wrong password');

  const anon = await app.client().json('GET', '/api/auth/me');
  t.equal(anon.status, 401);
  t.equal(anon.body.error.code, 'ERR_AUTH_REQUIRED');
});

t.test('session id is regenerated at login', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'bob', PASSWORD);
  const c = app.client();
  await c.fetchCsrf();
  const before = c.cookies.get('airlock.sid');
  t.ok(before, 'csrf call sets a session cookie');
  await c.login('bob', PASSWORD);
  t.not(c.cookies.get('airlock.sid'), before);
});

t.test('cookie flags', async (t) => {
  const app = await startTestApp(t);
  const res = await app.client().request('GET', '/api/auth/csrf');
  const cookie = res.headers.getSetCookie()[0];
  t.match(cookie, /HttpOnly/);
  t.match(cookie, /SameSite=Lax/);
  t.notMatch(cookie, /Secure/);
  const https = await startTestApp(t, { env: { AIRLOCK_PUBLIC_ORIGIN: 'https://chat.example.test' } });
  // An https origin means TLS ends at a proxy on this host, which says so in X-Forwarded-Proto.
  const res2 = await https.client().request('GET', '/api/auth/csrf', undefined, { 'x-forwarded-proto': 'https' });
  t.match(res2.headers.getSetCookie()[0], /Secure/);
});

t.test('CSRF: missing or wrong token is 403 on every unsafe method', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'carol', PASSWORD);
  const c = app.client();
  await c.fetchCsrf();
  const noToken = await c.json(
    'POST',
    '/api/auth/login',
    { username: 'carol', password: PASSWORD },
    { 'x-csrf-token': '' },
  );
  t.equal(noToken.status, 403);
  t.equal(noToken.body.error.code, 'ERR_AUTH_CSRF');
  const fresh = app.client();
  const noSession = await fresh.json('POST', '/api/auth/login', { username: 'carol', password: PASSWORD });
  t.equal(noSession.status, 403, 'no session, no token');
  await c.login('carol', PASSWORD);
  const wrong = await c.json('POST', '/api/auth/logout', undefined, { 'x-csrf-token': 'forged' });
  t.equal(wrong.status, 403);
  t.equal((await c.json('GET', '/api/auth/me')).status, 200, 'still logged in');
});

t.test('session survives a restart on the same database; logout ends it', async (t) => {
  const dataDir = tempDir(t);
  const app1 = await startTestApp(t, { dataDir });
  await addUser(app1.database, 'dave', PASSWORD);
  const c = app1.client();
  t.equal((await c.login('dave', PASSWORD)).status, 200);
  await app1.close();

  const app2 = await startTestApp(t, { dataDir });
  const c2 = app2.client();
  c2.cookies.set('airlock.sid', c.cookies.get('airlock.sid')!);
  c2.csrf = c.csrf;
  const me = await c2.json('GET', '/api/auth/me');
  t.equal(me.status, 200);
  t.equal(me.body.username, 'dave');

  const out = await c2.json('POST', '/api/auth/logout');
  t.equal(out.status, 204);
  const after = app2.client();
  after.cookies.set('airlock.sid', c.cookies.get('airlock.sid')!);
  t.equal((await after.json('GET', '/api/auth/me')).status, 401, 'old cookie no longer works');
});

t.test('repeated failures → 429 per username and per address', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_LOGIN_MAX_FAILURES: '3' } });
  await addUser(app.database, 'erin', PASSWORD);
  const c = app.client();
  for (let i = 0; i < 3; i++) t.equal((await c.login('erin', 'bad-password')).status, 401);
  const limited = await c.login('erin', PASSWORD);
  t.equal(limited.status, 429, 'even the right password waits');
  t.equal(limited.body.error.code, 'ERR_AUTH_RATE_LIMITED');
  t.ok(Number(limited.res.headers.get('retry-after')) > 0, 'Retry-After set');

  // Per address: many usernames from one address.
  const c2 = app.client();
  let last = 0;
  for (let i = 0; i < 13; i++) last = (await c2.login(`nobody${i}`, 'x-bad-pass')).status;
  t.equal(last, 429, 'address limit');
});

t.test('bad input: validation names the field; bad JSON; body limit', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_BODY_LIMIT_KB: '1' } });
  const c = app.client();
  await c.fetchCsrf();
  const missing = await c.json('POST', '/api/auth/login', { username: 'x' });
  t.equal(missing.status, 400);
  t.equal(missing.body.error.code, 'ERR_VALIDATION');
  t.equal(missing.body.error.field, 'password');
  const bad = await c.json('POST', '/api/auth/login', '{"username":', { 'content-type': 'application/json' });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'ERR_VALIDATION');
  const big = await c.json('POST', '/api/auth/login', { username: 'x', password: 'y'.repeat(4000) });
  t.equal(big.status, 413);
  t.equal(big.body.error.code, 'ERR_BODY_TOO_LARGE');
  const nf = await c.json('GET', '/api/nope');
  t.equal(nf.status, 404);
  t.equal(nf.body.error.code, 'ERR_NOT_FOUND');
});

t.test('no password hash or secret in any response or log line', async (t) => {
  const logs = logSink();
  const app = await startTestApp(t, { logs });
  await addUser(app.database, 'frank', PASSWORD);
  const { password_hash: hash } = await app.database.sql
    .selectFrom('users')
    .select('password_hash')
    .where('username', '=', 'frank')
    .executeTakeFirstOrThrow();
  if (!hash) throw new Error('frank has a password');
  const c = app.client();
  const bodies: string[] = [];
  const rec = async (p: Promise<{ body: unknown }>) => bodies.push(JSON.stringify((await p).body));
  await rec(c.login('frank', 'wrong-password'));
  await rec(c.login('frank', PASSWORD));
  await rec(c.json('GET', '/api/auth/me'));
  await rec(c.json('POST', '/api/auth/login', { username: 'frank', password: PASSWORD }));
  await rec(c.json('POST', '/api/auth/logout'));
  const everything = bodies.join('\n') + '\n' + logs.text();
  t.ok(logs.lines.length > 3, 'logs were captured');
  for (const secret of [
    PASSWORD,
    hash,
    hash.split('$')[5],
    TEST_SECRETS.AGENT_USER_TOKEN_SECRET,
    TEST_SECRETS.MCP_INTERNAL_SECRET,
  ]) {
    t.notOk(everything.includes(secret), `secret not leaked: ${secret.slice(0, 6)}…`);
  }
  t.notOk(/scrypt\$/.test(everything), 'no scrypt hash anywhere');
  t.notOk(/airlock\.sid=/.test(logs.text()), 'no cookie in logs');
});

t.test('request id: fresh per request, returned in X-Request-Id, on every log line of that request', async (t) => {
  const logs = logSink();
  const app = await startTestApp(t, { logs });
  const bearer = 'Bearer reqid-test-bearer-0123456789abcdef';
  const cookie = 'airlock.sid=reqid-test-cookie-0123456789';
  const a = await fetch(`${app.url}/api/auth/csrf`, {
    headers: { 'x-request-id': 'client-chosen-id', authorization: bearer },
  });
  await a.text();
  const b = await fetch(`${app.url}/api/auth/me`, { headers: { cookie } });
  t.equal(b.status, 401);
  t.equal(((await b.json()) as { error: { code: string } }).error.code, 'ERR_AUTH_REQUIRED');
  const idA = a.headers.get('x-request-id');
  const idB = b.headers.get('x-request-id');
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  t.match(idA, UUID, 'the response names its request id');
  t.match(idB, UUID, 'an error response too');
  t.not(idA, idB, 'one id per request');
  t.not(idA, 'client-chosen-id', 'the client cannot choose the id');

  // The request line is written when the response finishes: wait for both.
  const parsed = () => logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  await waitFor(() => parsed().filter((l) => l.msg === 'request').length >= 2, 'both request lines');
  const ofA = parsed().filter((l) => l.reqId === idA);
  const ofB = parsed().filter((l) => l.reqId === idB);
  t.match(
    ofA.find((l) => l.msg === 'request'),
    { method: 'GET', path: '/api/auth/csrf', status: 200 },
    'the request line carries the id the client got, and the full path',
  );
  t.match(
    ofB.find((l) => l.msg === 'request'),
    { method: 'GET', path: '/api/auth/me', status: 401 },
  );
  t.match(
    ofB.find((l) => l.msg === 'request refused'),
    { code: 'ERR_AUTH_REQUIRED', status: 401 },
    "the error middleware's line carries the same id",
  );
  t.equal(parsed().filter((l) => l.msg === 'request').length, 2, 'exactly one request line per request');
  t.notOk(logs.text().includes('client-chosen-id'), 'the client-sent id is not logged');
  t.notOk(logs.text().includes('reqid-test-bearer'), 'the Authorization header is not logged');
  t.notOk(logs.text().includes('reqid-test-cookie'), 'the cookie is not logged');
});
