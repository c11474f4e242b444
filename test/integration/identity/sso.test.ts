import t from 'tap';
import { allowActionLog, dbRow, dbRows, dbRun, failActionLog } from '../../helpers/db.js';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { addUser } from '../../helpers/app.js';
import { waitFor } from '../../helpers/wait.js';
import { CLIENT_SECRET, form, FORM, ssoLogin, startSso, toCallback } from '../../helpers/identity.js';

const ALICE = { sub: 'alice-sub-1', email: 'alice@example.test', email_verified: true, name: 'Alice A' };
const BOB = { sub: 'bob-sub-1', email: 'bob@example.test', email_verified: true, name: 'Bob B' };
const EVE = { sub: 'eve-sub-1', email: 'eve@example.test', email_verified: false, name: 'Eve' };

const identities = async (db: import('../../../domain/db/index.js').Sql) =>
  (await dbRows(db, 'SELECT user_id, connection_id, sub, email FROM external_identities ORDER BY id')) as {
    user_id: number;
    connection_id: number;
    sub: string;
    email: string;
  }[];

t.test('sso-providers lists active connections only', async (t) => {
  const s = await startSso(t, []);
  const c = s.app.client();
  const r = await c.json('GET', '/api/auth/sso-providers');
  t.equal(r.status, 200);
  t.same(
    r.body.providers.map((p: { id: string }) => p.id),
    ['google'],
  );
  await dbRun(s.app.database.sql, 'UPDATE idp_connections SET is_active = 0');
  t.same((await c.json('GET', '/api/auth/sso-providers')).body.providers, []);
  const refused = await c.json(
    'POST',
    '/_login/browser/v1/auth/provider/redirect',
    form({ provider: 'google', process: 'login', callback_url: `${s.origin}/` }),
    FORM,
  );
  t.equal(refused.status, 400);
  t.equal(refused.body.error.code, 'ERR_SSO_PROVIDER');
});

t.test('full login: new user created, ExternalIdentity upserted, /api/auth/me answers', async (t) => {
  const s = await startSso(t, [ALICE]);
  const browser = s.app.client();
  await browser.fetchCsrf();
  const before = browser.cookies.get('airlock.sid');
  const res = await ssoLogin(s, browser, ALICE.sub, `${s.origin}/chat?x=1`);
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), `${s.origin}/chat?x=1`, 'redirected to callback_url');
  t.not(browser.cookies.get('airlock.sid'), before, 'session regenerated');
  const me = await browser.json('GET', '/api/auth/me');
  t.equal(me.status, 200);
  t.equal(me.body.email, ALICE.email);
  t.equal(me.body.display_name, ALICE.name);
  t.same(await identities(s.app.database.sql), [
    { user_id: me.body.id, connection_id: s.connection.id, sub: ALICE.sub, email: ALICE.email },
  ]);
  // The session's CSRF token is fresh and works.
  await browser.fetchCsrf();
  t.equal((await browser.json('POST', '/api/auth/logout')).status, 204);
  t.ok(
    s.idp.requests.some((r) => r.path === '/token'),
    'code exchanged at the IdP',
  );
  t.ok(
    s.idp.requests.some((r) => r.path === '/jwks'),
    "ID token signature checked against the IdP's JWKS",
  );
});

t.test('known e-mail is matched; a second login updates the same ExternalIdentity', async (t) => {
  const s = await startSso(t, [BOB]);
  const bob = await addUser(s.app.database, 'bob', 'bob-password-123', { email: 'BOB@example.test' });
  const b1 = s.app.client();
  t.equal((await ssoLogin(s, b1, BOB.sub)).status, 303);
  const me = await b1.json('GET', '/api/auth/me');
  t.equal(me.body.id, bob.id, 'matched the existing account by verified e-mail');
  t.equal(me.body.username, 'bob');
  const first = (await dbRow(s.app.database.sql, 'SELECT last_login_at FROM external_identities')) as {
    last_login_at: string;
  };
  // The second login must be stamped later: wait for the clock to pass the first one.
  await waitFor(() => new Date().toISOString() > first.last_login_at, 'the clock to pass the first login', 5_000, 1);
  const b2 = s.app.client();
  t.equal((await ssoLogin(s, b2, BOB.sub)).status, 303);
  t.equal((await identities(s.app.database.sql)).length, 1, 'still one identity');
  const second = (await dbRow(s.app.database.sql, 'SELECT last_login_at FROM external_identities')) as {
    last_login_at: string;
  };
  t.not(second.last_login_at, first.last_login_at, 'updated');
  t.equal(((await dbRow(s.app.database.sql, 'SELECT COUNT(*) AS n FROM users')) as { n: number }).n, 1, 'no new user');
});

t.test(
  'no half-written login: last_login_at, the action-log entry and the ExternalIdentity together or not at all',
  async (t) => {
    const s = await startSso(t, [BOB]);
    const bob = await addUser(s.app.database, 'bob', 'bob-password-123', { email: 'bob@example.test' });
    const lastLogin = async () =>
      (
        (await dbRow(s.app.database.sql, 'SELECT last_login_at FROM users WHERE id = ?', bob.id)) as {
          last_login_at: string | null;
        }
      ).last_login_at;
    await failActionLog(s.app.database, 'auth.login');
    const browser = s.app.client();
    t.equal((await ssoLogin(s, browser, BOB.sub)).status, 500, 'the entry cannot be written: the login fails');
    t.equal(await lastLogin(), null, 'last_login_at not written');
    t.same(await identities(s.app.database.sql), [], 'no ExternalIdentity');
    t.equal((await browser.json('GET', '/api/auth/me')).status, 401, 'and the browser is not logged in');
    await allowActionLog(s.app.database, 'auth.login');
    t.equal((await ssoLogin(s, browser, BOB.sub)).status, 303);
    t.ok(await lastLogin());
    t.equal((await identities(s.app.database.sql)).length, 1);
    t.equal((await browser.json('GET', '/api/auth/me')).body.id, bob.id);
  },
);

t.test('refused: foreign or relative callback_url (no open redirect), bad process', async (t) => {
  const s = await startSso(t, [ALICE]);
  const c = s.app.client();
  for (const cb of [
    'https://evil.example/steal',
    '/chat',
    '//evil.example/x',
    `http://127.0.0.1:1/x`,
    'javascript:alert(1)',
    `${s.origin.replace('http', 'https')}/x`,
  ]) {
    const r = await c.json(
      'POST',
      '/_login/browser/v1/auth/provider/redirect',
      form({ provider: 'google', process: 'login', callback_url: cb }),
      FORM,
    );
    t.equal(r.status, 400, cb);
    t.equal(r.body.error.code, 'ERR_SSO_CALLBACK_URL', cb);
    t.notOk(r.res.headers.get('location'), 'no redirect');
  }
  const p = await c.json(
    'POST',
    '/_login/browser/v1/auth/provider/redirect',
    form({ provider: 'google', process: 'connect', callback_url: `${s.origin}/` }),
    FORM,
  );
  t.equal(p.body.error.code, 'ERR_SSO_PROCESS');
});

t.test('refused: bad state, replayed code', async (t) => {
  const s = await startSso(t, [ALICE]);
  const browser = s.app.client();
  const { callback } = await toCallback(s, browser, ALICE.sub);
  t.ok(callback);
  const u = new URL(callback!);
  const bad = new URL(u);
  bad.searchParams.set('state', 'forged-state');
  const r1 = await browser.json('GET', bad.pathname + bad.search);
  t.equal(r1.status, 400);
  t.equal(r1.body.error.code, 'ERR_SSO_STATE');
  // Another browser cannot use this browser's callback (state is bound to the session).
  const other = s.app.client();
  const r2 = await other.json('GET', u.pathname + u.search);
  t.equal(r2.body.error.code, 'ERR_SSO_STATE');
  t.equal((await other.json('GET', '/api/auth/me')).status, 401);

  const ok = await browser.request('GET', u.pathname + u.search);
  t.equal(ok.status, 303, 'the real callback still works once');
  const replay = await browser.json('GET', u.pathname + u.search);
  t.equal(replay.status, 400);
  t.equal(replay.body.error.code, 'ERR_SSO_STATE', 'state is single use');

  // The same code under a fresh, valid state: the IdP refuses the used code.
  const fresh = await toCallback(s, browser, ALICE.sub);
  const state2 = new URL(fresh.callback!).searchParams.get('state')!;
  const replayed = new URL(u);
  replayed.searchParams.set('state', state2);
  const r3 = await browser.json('GET', replayed.pathname + replayed.search);
  t.equal(r3.status, 400);
  t.equal(r3.body.error.code, 'ERR_SSO_CODE_EXCHANGE');
});

t.test('refused: nonce mismatch in the ID token', async (t) => {
  const s = await startSso(t, [ALICE]);
  s.idp.tamper.nonce = 'not-the-nonce-we-sent';
  const browser = s.app.client();
  const r = await ssoLogin(s, browser, ALICE.sub);
  t.equal(r.status, 400);
  t.equal(((await r.json()) as { error: { code: string } }).error.code, 'ERR_SSO_ID_TOKEN');
  t.equal((await browser.json('GET', '/api/auth/me')).status, 401);
  t.same(await identities(s.app.database.sql), []);
  t.equal(
    ((await dbRow(s.app.database.sql, 'SELECT COUNT(*) AS n FROM users')) as { n: number }).n,
    0,
    'no user created',
  );
});

const b64u = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

t.test('refused: ID token with a forged signature or a claim changed after signing', async (t) => {
  // The attacker's own key, published nowhere, under the IdP's key id.
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const forgers: Record<string, (idToken: string) => Promise<string> | string> = {
    're-signed with another key of the same kid': async (idToken) => {
      const header = decodeProtectedHeader(idToken);
      return new SignJWT({ ...decodeJwt(idToken), email: 'root@example.test' })
        .setProtectedHeader({ alg: 'RS256', kid: header.kid, typ: header.typ })
        .sign(privateKey);
    },
    'e-mail claim changed, original signature kept': (idToken) => {
      const [h, , sig] = idToken.split('.');
      return `${h}.${b64u({ ...decodeJwt(idToken), email: 'root@example.test' })}.${sig}`;
    },
    'unsigned (alg none)': (idToken) =>
      `${b64u({ alg: 'none', typ: 'JWT' })}.${b64u({ ...decodeJwt(idToken), email: 'root@example.test' })}.`,
  };
  const s = await startSso(t, [ALICE]);
  const root = await addUser(s.app.database, 'root', 'root-password-123', {
    superuser: true,
    email: 'root@example.test',
  });
  const forged: string[] = [];
  for (const [name, forge] of Object.entries(forgers)) {
    s.idp.tamper.idToken = async (idToken) => {
      const f = await forge(idToken);
      forged.push(f);
      return f;
    };
    const browser = s.app.client();
    const r = await ssoLogin(s, browser, ALICE.sub);
    t.equal(r.status, 400, name);
    const body = (await r.json()) as { error: { code: string; message: string } };
    t.equal(body.error.code, 'ERR_SSO_ID_TOKEN', name);
    t.same(Object.keys(body), ['error'], 'the documented error body');
    t.notOk(JSON.stringify(body).includes('eyJ'), 'no token echoed');
    const me = await browser.json('GET', '/api/auth/me');
    t.equal(me.status, 401, `${name}: not logged in (neither as Alice nor as root)`);
  }
  t.equal(forged.length, 3, 'each forgery reached the relying party');
  t.same(await identities(s.app.database.sql), [], 'no ExternalIdentity');
  t.same(
    ((await dbRows(s.app.database.sql, 'SELECT id FROM users')) as { id: number }[]).map((u) => u.id),
    [root.id],
    'no user created',
  );
  t.equal(
    (
      (await dbRow(s.app.database.sql, "SELECT COUNT(*) AS n FROM action_log WHERE event = 'auth.login'")) as {
        n: number;
      }
    ).n,
    0,
    'no login logged',
  );
  const logs = s.app.logs.text();
  for (const f of forged) t.notOk(logs.includes(f.split('.')[1]), 'the forged token is not logged');
  t.notOk(/[?&]code=/.test(logs), 'no authorization code in logs');
  t.notOk(logs.includes(CLIENT_SECRET), 'no client secret in logs');
  const warned = s.app.logs.lines
    .map((l) => JSON.parse(l) as { level: number; msg: string; code?: string })
    .filter((l) => l.msg === 'sso id token refused');
  t.equal(warned.length, 3, 'each refusal is a warning');
  t.ok(
    warned.every((l) => l.level === 40 && l.code === 'ERR_SSO_ID_TOKEN'),
    'by code only',
  );

  // The refusals poisoned nothing: an honest token still logs Alice in.
  delete s.idp.tamper.idToken;
  const browser = s.app.client();
  t.equal((await ssoLogin(s, browser, ALICE.sub)).status, 303);
  t.equal((await browser.json('GET', '/api/auth/me')).body.email, ALICE.email);
});

t.test('the IdP cannot serve its signing keys: 502 ERR_SSO_DISCOVERY, no login; later logins work', async (t) => {
  const s = await startSso(t, [ALICE]);
  s.idp.tamper.jwksStatus = 503;
  const browser = s.app.client();
  const r = await ssoLogin(s, browser, ALICE.sub);
  t.equal(r.status, 502);
  t.equal(((await r.json()) as { error: { code: string } }).error.code, 'ERR_SSO_DISCOVERY');
  t.equal((await browser.json('GET', '/api/auth/me')).status, 401);
  t.same(await identities(s.app.database.sql), []);
  delete s.idp.tamper.jwksStatus;
  t.equal((await ssoLogin(s, browser, ALICE.sub)).status, 303);
  t.equal((await browser.json('GET', '/api/auth/me')).body.email, ALICE.email);
});

t.test('refused: unverified e-mail', async (t) => {
  const s = await startSso(t, [EVE]);
  await addUser(s.app.database, 'eve-local', 'eve-password-123', { email: EVE.email });
  const browser = s.app.client();
  const r = await ssoLogin(s, browser, EVE.sub);
  t.equal(r.status, 403);
  t.equal(((await r.json()) as { error: { code: string } }).error.code, 'ERR_SSO_EMAIL_UNVERIFIED');
  t.equal((await browser.json('GET', '/api/auth/me')).status, 401, 'not logged into the account with that e-mail');
  t.same(await identities(s.app.database.sql), []);
});

t.test('a deactivated account cannot log in by SSO', async (t) => {
  const s = await startSso(t, [BOB]);
  const bob = await addUser(s.app.database, 'bob', 'bob-password-123', { email: BOB.email });
  await dbRun(s.app.database.sql, 'UPDATE users SET is_active = 0 WHERE id = ?', bob.id);
  const r = await ssoLogin(s, s.app.client(), BOB.sub);
  t.equal(r.status, 403);
  t.equal(((await r.json()) as { error: { code: string } }).error.code, 'ERR_AUTH_INACTIVE');
});

t.test('client secret: encrypted at rest, never in responses or logs', async (t) => {
  const s = await startSso(t, [ALICE]);
  const row = (await dbRow(s.app.database.sql, 'SELECT client_secret_enc FROM idp_connections')) as {
    client_secret_enc: string;
  };
  t.match(row.client_secret_enc, /^v1\./);
  t.notOk(row.client_secret_enc.includes(CLIENT_SECRET));
  await addUser(s.app.database, 'root', 'root-password-123', { superuser: true });
  const admin = s.app.client();
  await admin.login('root', 'root-password-123');
  const list = await admin.json('GET', '/api/identity/connections');
  t.equal(list.status, 200);
  t.equal(list.body.connections[0].has_client_secret, true);
  await ssoLogin(s, s.app.client(), ALICE.sub);
  t.notOk(JSON.stringify(list.body).includes(CLIENT_SECRET));
  t.notOk(s.app.logs.text().includes(CLIENT_SECRET), 'not in logs');
  t.notOk(/[?&]code=/.test(s.app.logs.text()), 'no authorization code in logs');
});
