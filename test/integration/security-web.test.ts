/**
 * The red-team findings against the web app, each with the payloads of the finding: an
 * attachment through a symlinked folder (2), open redirects after resolution (3), login limits
 * that can be neither dodged nor turned against the owner (4), the agent policy of another user
 * and non-JSON or compressed bodies (5).
 */
import t from 'tap';
import { chownSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { start as startOAuth } from '../../emulator/google-oauth.js';
import { resolveRedirect } from '../../web/redirect.js';
import { addUser, startTestApp, tempDir } from '../helpers/app.js';
import { form, FORM, startSso } from '../helpers/identity.js';

const PASSWORD = 'correct horse battery staple';
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(64, 7)]);
const name = (n: number) => `0000000${n}-0000-4000-8000-000000000000.png`;

/** The payloads of finding 3, and their relatives. */
const OPEN_REDIRECTS = [
  '/.//evil.example/x',
  '/..//evil.example/x',
  '/%2e//evil.example/x',
  '/./\\evil.example',
  '//evil.example',
  '/\\evil.example',
  '\\\\evil.example',
  'https://evil.example/',
  '/%2f%2fevil.example',
  '/%5cevil.example',
  ' /x',
  '/\t/evil.example',
  'javascript:alert(1)',
  '/./%2fevil.example',
];

t.test('finding 2: attachments are opened beneath the workspace without following any link', async (t) => {
  const dataDir = tempDir(t);
  const app = await startTestApp(t, { dataDir });
  const alice = await addUser(app.database, 'alice', PASSWORD);
  const bob = await addUser(app.database, 'bob', PASSWORD);
  const ws = (u: number) => join(dataDir, 'workspaces', String(u));
  mkdirSync(join(ws(bob.id), '.agent-attachments'), { recursive: true });
  writeFileSync(join(ws(bob.id), '.agent-attachments', name(1)), Buffer.concat([PNG, Buffer.from('BOB-SECRET-CHART')]));
  mkdirSync(ws(alice.id), { recursive: true });
  // The agent owns its workspace: it swaps its attachments folder for a link to Bob's.
  symlinkSync(join(ws(bob.id), '.agent-attachments'), join(ws(alice.id), '.agent-attachments'));
  const c = app.client();
  await c.login('alice', PASSWORD);
  const viaDirLink = await c.request('GET', `/api/chat/attachments/${name(1)}`);
  t.equal(viaDirLink.status, 404, 'a symlinked folder is not followed');
  t.notOk((await viaDirLink.text()).includes('BOB-SECRET'), "nothing of Bob's chart");

  // Now a real folder, with every kind of file that must not be served, and one good file.
  execFileSync('rm', [join(ws(alice.id), '.agent-attachments')]);
  const dir = join(ws(alice.id), '.agent-attachments');
  mkdirSync(dir);
  writeFileSync(join(dir, name(2)), PNG);
  symlinkSync(join(ws(bob.id), '.agent-attachments', name(1)), join(dir, name(3)));
  linkSync(join(ws(bob.id), '.agent-attachments', name(1)), join(dir, name(4)));
  execFileSync('mkfifo', [join(dir, name(5))]);
  writeFileSync(join(dir, name(6)), Buffer.alloc(5 * 1024 * 1024 + 1));
  writeFileSync(join(dir, name(7)), PNG);
  chownSync(join(dir, name(7)), 4321, 4321);
  mkdirSync(join(dir, name(8)));
  const ok = await c.request('GET', `/api/chat/attachments/${name(2)}`);
  t.equal(ok.status, 200, 'a regular file of the workspace owner is served');
  t.same(Buffer.from(await ok.arrayBuffer()), PNG);
  for (const [n, why] of [
    [3, 'symlinked file'],
    [4, "hard link to another user's file"],
    [5, 'FIFO'],
    [6, 'over the size cap'],
    [7, 'file of another owner'],
    [8, 'directory'],
    [9, 'missing'],
  ] as const) {
    const r = await c.json('GET', `/api/chat/attachments/${name(n)}`);
    t.equal(r.status, 404, `${why}: 404`);
    t.equal(r.body.error.code, 'ERR_CHAT_ATTACHMENT_NOT_FOUND');
  }
  t.equal((await c.request('GET', '/api/chat/attachments/..%2f..%2fairlock.db')).status, 404, 'name rule holds');
});

t.test('finding 3: redirect targets are checked after resolution (unit)', async (t) => {
  const origin = 'http://127.0.0.1:8080';
  for (const p of OPEN_REDIRECTS) t.equal(resolveRedirect(p, origin), null, `refused: ${JSON.stringify(p)}`);
  t.equal(resolveRedirect('/chat?x=1', origin), '/chat?x=1');
  t.equal(resolveRedirect('/a/../chat', origin), '/chat', 'dot segments resolved first');
  t.equal(resolveRedirect(`${origin}/chat`, origin, { allowAbsolute: true }), '/chat');
  t.equal(resolveRedirect(`${origin}/.//evil.example/x`, origin, { allowAbsolute: true }), null);
  t.equal(resolveRedirect('http://evil.example/chat', origin, { allowAbsolute: true }), null);
  t.equal(resolveRedirect(`http://user:pw@127.0.0.1:8080/chat`, origin, { allowAbsolute: true }), null);
});

t.test('finding 3: account connect return_to, end to end', async (t) => {
  const oauth = await startOAuth();
  t.teardown(() => oauth.close());
  const app = await startTestApp(t, {
    env: {
      AIRLOCK_GOOGLE_CLIENT_ID: oauth.options.clientId!,
      AIRLOCK_GOOGLE_CLIENT_SECRET: oauth.options.clientSecret!,
      AIRLOCK_GOOGLE_AUTH_URL: oauth.authorizeUrl,
      AIRLOCK_GOOGLE_TOKEN_URL: oauth.tokenUrl,
      AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
    },
  });
  await addUser(app.database, 'alice', PASSWORD);
  const c = app.client();
  await c.login('alice', PASSWORD);
  for (const p of OPEN_REDIRECTS) {
    const r = await c.json('POST', '/api/account/connect', { return_to: p });
    t.equal(r.status, 400, `return_to ${JSON.stringify(p)}: 400`);
    t.equal(r.body.error?.code, 'ERR_ACCOUNT_RETURN_TO');
  }
  t.notOk(oauth.requests.length, 'no refused connect reached the provider');
  // The control: a dot-segment path on this origin is resolved, then used.
  const start = await c.json('POST', '/api/account/connect', { return_to: '/x/../chat' });
  t.equal(start.status, 200);
  const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
  const cb = new URL(consent.headers.get('location')!);
  const done = await c.request('GET', cb.pathname + cb.search);
  t.equal(done.status, 302);
  t.equal(done.headers.get('location'), '/chat?account=connected', 'resolved path, same origin');
});

t.test('finding 3: SSO callback_url and login next', async (t) => {
  const s = await startSso(t, []);
  const c = s.app.client();
  for (const p of OPEN_REDIRECTS.filter((x) => x.startsWith('/'))) {
    const r = await c.json(
      'POST',
      '/_login/browser/v1/auth/provider/redirect',
      form({ provider: 'google', process: 'login', callback_url: `${s.origin}${p}` }),
      FORM,
    );
    t.equal(r.status, 400, `callback_url ${s.origin}${p}: 400`);
    t.equal(r.body.error?.code, 'ERR_SSO_CALLBACK_URL');
  }
  await addUser(s.app.database, 'nora', PASSWORD);
  const l = s.app.client();
  await l.fetchCsrf();
  for (const p of OPEN_REDIRECTS) {
    const r = await l.json('POST', '/api/auth/login', { username: 'nora', password: PASSWORD, next: p });
    t.equal(r.status, 400, `next ${JSON.stringify(p)}: 400`);
  }
  const ok = await l.json('POST', '/api/auth/login', { username: 'nora', password: PASSWORD, next: '/a/../chat?x=1' });
  t.equal(ok.status, 200);
  t.equal(ok.body.next, '/chat?x=1');
});

t.test('finding 4: X-Forwarded-For is ignored unless AIRLOCK_TRUST_PROXY names the proxy', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_LOGIN_MAX_FAILURES: '3' } });
  const c = app.client();
  await c.fetchCsrf();
  const statuses: number[] = [];
  // 12 = 3 × 4 failures from one address (any usernames) lock the address, whatever it claims.
  for (let i = 0; i < 13; i++) {
    statuses.push(
      (
        await c.json(
          'POST',
          '/api/auth/login',
          { username: `u${i}`, password: 'wrong-password' },
          { 'x-forwarded-for': `10.9.${i}.1` },
        )
      ).status,
    );
  }
  t.same(statuses.slice(0, 12), Array(12).fill(401));
  t.equal(statuses[12], 429, 'the address limit holds although every request claimed another address');
  t.equal(app.config.trustProxy.length, 0, 'default: no trusted proxy');
});

t.test('finding 4: a locked username still lets its owner in from an address with no recent failures', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_LOGIN_MAX_FAILURES: '3', AIRLOCK_TRUST_PROXY: 'loopback' } });
  await addUser(app.database, 'admin', PASSWORD);
  const attacker = app.client();
  await attacker.fetchCsrf();
  const at = { 'x-forwarded-for': '203.0.113.7' };
  for (let i = 0; i < 3; i++)
    t.equal(
      (await attacker.json('POST', '/api/auth/login', { username: 'admin', password: `guess-${i}` }, at)).status,
      401,
    );
  const locked = await attacker.json('POST', '/api/auth/login', { username: 'ADMIN', password: PASSWORD }, at);
  t.equal(locked.status, 429, 'the attacking address is refused, even with the right password');
  t.equal(locked.body.error.code, 'ERR_AUTH_RATE_LIMITED');
  t.ok(Number(locked.res.headers.get('retry-after')) > 0, 'Retry-After');
  const owner = app.client();
  await owner.fetchCsrf();
  const ok = await owner.json(
    'POST',
    '/api/auth/login',
    { username: 'admin', password: PASSWORD },
    { 'x-forwarded-for': '198.51.100.20' },
  );
  t.equal(ok.status, 200, 'the owner, from an address with no recent failures, gets in');
  // A fresh address with a wrong password has a failure now: it is refused like the attacker.
  const other = app.client();
  await other.fetchCsrf();
  const oa = { 'x-forwarded-for': '198.51.100.99' };
  t.equal((await other.json('POST', '/api/auth/login', { username: 'admin', password: 'nope-nope' }, oa)).status, 401);
  t.equal((await other.json('POST', '/api/auth/login', { username: 'admin', password: PASSWORD }, oa)).status, 429);
});

t.test(
  'finding 4: two nodes of a fleet count one set of failures (the limiter lives in the shared database)',
  async (t) => {
    const dataDir = tempDir(t);
    const env = { AIRLOCK_LOGIN_MAX_FAILURES: '3', AIRLOCK_TRUST_PROXY: 'loopback' };
    const a = await startTestApp(t, { dataDir, env: { ...env, AIRLOCK_NODE_ID: 'node-a' } });
    const b = await startTestApp(t, { dataDir, env: { ...env, AIRLOCK_NODE_ID: 'node-b' } });
    await addUser(a.database, 'admin', PASSWORD);
    const at = { 'x-forwarded-for': '203.0.113.8' };
    const [ca, cb] = [a.client(), b.client()];
    for (const c of [ca, cb]) await c.fetchCsrf();
    // Three guesses spread over the two nodes: A, B, A.
    for (const [i, c] of [ca, cb, ca].entries())
      t.equal(
        (await c.json('POST', '/api/auth/login', { username: 'admin', password: `guess-${i}` }, at)).status,
        401,
        `guess ${i + 1} refused as wrong`,
      );
    const onB = await cb.json('POST', '/api/auth/login', { username: 'admin', password: PASSWORD }, at);
    t.equal(
      onB.status,
      429,
      "the fourth try, on the node that saw only one failure, is refused: the count is the fleet's",
    );
    t.equal(onB.body.error.code, 'ERR_AUTH_RATE_LIMITED');
  },
);

t.test('finding 4: progressive delay per username + address; the state lives in the database', async (t) => {
  const dataDir = tempDir(t);
  const app = await startTestApp(t, { dataDir, env: { AIRLOCK_LOGIN_MAX_FAILURES: '10' } });
  await addUser(app.database, 'erin', PASSWORD);
  const c = app.client();
  await c.fetchCsrf();
  const times: number[] = [];
  for (let i = 0; i < 4; i++) {
    const s = Date.now();
    t.equal((await c.json('POST', '/api/auth/login', { username: 'erin', password: 'bad-password' })).status, 401);
    times.push(Date.now() - s);
  }
  t.ok(times[3] >= 1500, `the 4th failed answer waited ${times[3]} ms (200 · 2³ = 1600)`);
  t.ok(times[3] > times[0] * 3, `delays grow: ${times.join(', ')} ms`);
  // Guesses in parallel do not share one delay: the pair is refused until its delay has passed.
  const burst = await Promise.all(
    [0, 1, 2].map(() => c.json('POST', '/api/auth/login', { username: 'erin', password: 'bad-password' })),
  );
  t.ok(
    burst.some((r) => r.status === 429),
    `parallel guesses are refused (${burst.map((r) => r.status).join(', ')})`,
  );
  const rows = Number(
    (
      await app.database.sql
        .selectFrom('login_failures')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  t.ok(rows >= 5, `${rows} failures stored in the database`);
  await app.close();
  const again = await startTestApp(t, { dataDir, env: { AIRLOCK_LOGIN_MAX_FAILURES: '3' } });
  const c2 = again.client();
  await c2.fetchCsrf();
  t.equal(
    (await c2.json('POST', '/api/auth/login', { username: 'erin', password: PASSWORD })).status,
    429,
    'a restart forgets nothing',
  );
});

t.test('finding 5: agent policy of another user is 403 for a plain user', async (t) => {
  const app = await startTestApp(t);
  const admin = await addUser(app.database, 'root', PASSWORD, { superuser: true });
  const u = await addUser(app.database, 'plain', PASSWORD);
  const c = app.client();
  await c.login('plain', PASSWORD);
  const other = await c.json('GET', `/api/identity/agent-policy?user_id=${admin.id}`);
  t.equal(other.status, 403);
  t.equal(other.body.error.code, 'ERR_AUTH_FORBIDDEN');
  t.equal((await c.json('GET', '/api/identity/agent-policy?user_id=1')).status, u.id === 1 ? 200 : 403);
  t.equal(
    (await c.json('GET', `/api/identity/agent-policy?user_id=${u.id}`)).status,
    200,
    'asking about oneself is fine',
  );
  t.equal((await c.json('GET', '/api/identity/agent-policy?user_id=abc')).status, 400);
  const s = app.client();
  await s.login('root', PASSWORD);
  const r = await s.json('GET', `/api/identity/agent-policy?user_id=${u.id}`);
  t.equal(r.status, 200);
  t.equal(r.body.user_id, u.id, 'a superuser may ask about anyone');
});

t.test('finding 5: JSON routes take application/json only, never compressed', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'gina', PASSWORD);
  const c = app.client();
  await c.fetchCsrf();
  const formLogin = await c.json('POST', '/api/auth/login', 'username=gina&password=correct+horse+battery+staple', {
    'content-type': 'application/x-www-form-urlencoded',
  });
  t.equal(formLogin.status, 415);
  t.equal(formLogin.body.error.code, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE');
  const text = await c.json('POST', '/api/auth/login', JSON.stringify({ username: 'gina', password: PASSWORD }), {
    'content-type': 'text/plain',
  });
  t.equal(text.status, 415);
  for (const enc of ['gzip', 'deflate']) {
    const body = gzipSync(JSON.stringify({ username: 'gina', password: PASSWORD }));
    const res = await fetch(`${app.url}/api/auth/login`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-encoding': enc,
        cookie: c.cookieHeader(),
        'x-csrf-token': c.csrf!,
      },
      body,
    });
    t.equal(res.status, 415, `${enc} body: 415`);
    t.equal(((await res.json()) as { error: { code: string } }).error.code, 'ERR_HTTP_UNSUPPORTED_ENCODING');
  }
  t.equal((await c.login('gina', PASSWORD)).status, 200, 'the JSON login still works');
  t.equal((await c.json('POST', '/api/auth/logout')).status, 204, 'a bodiless POST needs no content type');
});
