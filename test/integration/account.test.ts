import t from 'tap';
import { createLogger, Encryptor, loadOrCreateEncryptionKey, WORKSPACE_SCOPES } from '../../core/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { queryActionLog } from '../../domain/action-log.js';
import type { Database } from '../../domain/db/index.js';
import { TokenService } from '../../daemon/host/tokens.js';
import { start as startOAuth } from '../../emulator/google-oauth.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { allowActionLog, failActionLog } from '../helpers/db.js';

const PASSWORD = 'correct horse battery staple';

async function setup(
  t: { teardown(fn: () => unknown): void; equal(a: unknown, b: unknown): void },
  services?: Record<string, unknown>,
) {
  const oauth = await startOAuth();
  t.teardown(() => oauth.close());
  const app = await startTestApp(t, {
    services,
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
  t.equal((await c.login('alice', PASSWORD)).status, 200);
  return { oauth, app, c };
}

t.test('connect through the provider (code + PKCE, offline), status, disconnect', async (t) => {
  const { oauth, app, c } = await setup(t);
  t.same((await c.json('GET', '/api/account')).body, { connected: false });

  const start = await c.json('POST', '/api/account/connect', { return_to: '/chat' });
  t.equal(start.status, 200);
  const authUrl = new URL(start.body.authorization_url);
  t.equal(authUrl.origin + authUrl.pathname, oauth.authorizeUrl);
  t.equal(authUrl.searchParams.get('access_type'), 'offline');
  t.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
  t.same(authUrl.searchParams.get('scope')!.split(' '), [...WORKSPACE_SCOPES]);
  t.notOk(authUrl.searchParams.get('scope')!.includes('gmail.readonly'), 'mail is send-only');

  // The "browser" follows the provider's redirect back to the callback with its cookie jar.
  const consent = await fetch(authUrl, { redirect: 'manual' });
  t.equal(consent.status, 302);
  const cb = new URL(consent.headers.get('location')!);
  t.equal(cb.pathname, '/api/account/callback');
  const done = await c.request('GET', cb.pathname + cb.search);
  t.equal(done.status, 302);
  t.equal(done.headers.get('location'), '/chat?account=connected');

  const tokenCall = oauth.requests.find((r) => r.path === '/token')!;
  t.equal(tokenCall.params.grant_type, 'authorization_code');
  t.ok(tokenCall.params.code_verifier && tokenCall.params.code_verifier.length >= 43, 'PKCE verifier sent');
  t.notOk(authUrl.toString().includes(tokenCall.params.code_verifier), 'verifier never in the browser URL');

  const st = await c.json('GET', '/api/account');
  t.equal(st.body.connected, true);
  t.equal(st.body.email, 'user@example.test');
  t.equal(st.body.offline, true);
  t.same(st.body.scopes, [...WORKSPACE_SCOPES]);

  // At rest: ciphertext only; the store decrypts with the data-folder key.
  const row = await app.database.sql.selectFrom('connected_accounts').selectAll().executeTakeFirstOrThrow();
  const dump = JSON.stringify(row);
  const [access] = oauth.issued.access;
  const [refresh] = oauth.issued.refresh;
  t.notOk(dump.includes(refresh), 'refresh token not stored in clear');
  t.notOk(dump.includes(access), 'access token not stored in clear');
  t.match(row.refresh_token_enc, /^v1\./);
  const store = new AccountStore(
    app.database.sql,
    new Encryptor(loadOrCreateEncryptionKey(app.config.dataDir, app.config.encryptionKey)),
  );
  t.equal((await store.tokens(1))!.refreshToken, refresh);
  for (const secret of [
    access,
    refresh,
    tokenCall.params.code_verifier,
    tokenCall.params.code,
    oauth.options.clientSecret!,
  ]) {
    t.notOk(app.logs.text().includes(secret), 'no token, code or secret in logs');
    t.notOk(JSON.stringify(st.body).includes(secret), 'no token in the status');
  }

  // Replaying the callback (same state) is refused.
  const replay = await c.json('GET', cb.pathname + cb.search);
  t.equal(replay.status, 400);
  t.equal(replay.body.error.code, 'ERR_ACCOUNT_STATE');

  const del = await c.json('DELETE', '/api/account');
  t.equal(del.status, 200);
  t.same(del.body, { connected: false, revoked_at_provider: true });
  t.same(
    oauth.revoked,
    [refresh, access],
    'the grant (refresh token and its access token) was revoked at the provider',
  );
  const revokeCall = oauth.requests.find((r) => r.path === '/revoke')!;
  t.same(Object.keys(revokeCall.params), ['token'], "Google's shape: form token=");
  t.same((await c.json('GET', '/api/account')).body, { connected: false });
  t.equal(await accountRows(app.database), 0);
  const refreshAfter = await fetch(oauth.tokenUrl, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refresh,
      client_id: oauth.options.clientId!,
      client_secret: oauth.options.clientSecret!,
    }),
  });
  t.equal(refreshAfter.status, 400, 'the revoked refresh token no longer works at the provider');
  const [logged] = await queryActionLog(app.database.sql, { event: 'account.disconnected' });
  t.same({ severity: logged.severity, data: logged.data }, { severity: 'info', data: { revoked_at_provider: true } });
  for (const secret of [access, refresh])
    t.notOk(app.logs.text().includes(secret), 'no token in the logs at disconnect');
  // A second disconnect: nothing to forget, nothing to revoke.
  t.same((await c.json('DELETE', '/api/account')).body, { connected: false, revoked_at_provider: null });
});

t.test(
  'connecting again: the same account pushes its new token into warm sandboxes; another account ends them',
  async (t) => {
    // The daemon's token service (real) with a warm session tracked; the session manager's side is
    // the session's egress gateway (a recorded token sink) and killForUser (recorded).
    const pushed: Array<[string, Record<string, string>]> = [];
    const killed: Array<[number, string | undefined]> = [];
    const storeRef: { store?: AccountStore } = {};
    const tokenService = new TokenService({
      store: { tokens: (id) => storeRef.store!.tokens(id), saveAccess: (...a) => storeRef.store!.saveAccess(...a) },
      refresh: () => Promise.reject(new Error('not used')),
      log: createLogger({ level: 'silent' }),
    });
    const { oauth, app, c } = await setup(t, {
      tokenService,
      sandboxes: { killForUser: (id: number, why?: string) => void killed.push([id, why]) },
    });
    storeRef.store = new AccountStore(
      app.database.sql,
      new Encryptor(loadOrCreateEncryptionKey(app.config.dataDir, app.config.encryptionKey)),
    );
    const connect = async () => {
      const start = await c.json('POST', '/api/account/connect', {});
      const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
      const cb = new URL(consent.headers.get('location')!);
      t.equal((await c.request('GET', cb.pathname + cb.search)).status, 302);
    };
    await connect();
    t.same([pushed, killed], [[], []], 'a first connect touches no sandbox');
    tokenService.track('warm-1', 1, ['MAIL_ACCESS_TOKEN'], { setTokens: (toks) => void pushed.push(['warm-1', toks]) });

    await connect();
    const second = oauth.issued.access.at(-1)!;
    t.same(
      pushed,
      [['warm-1', { MAIL_ACCESS_TOKEN: second }]],
      'same account: the new token is pushed into the warm session',
    );
    t.same(killed, []);

    oauth.options.email = 'someone-else@example.test';
    await connect();
    t.same(killed, [[1, 'account changed']], 'another account: the sandboxes end');
    t.equal(pushed.length, 1, 'and nothing is pushed into them');
    t.equal((await c.json('GET', '/api/account')).body.email, 'someone-else@example.test');
    for (const tok of oauth.issued.access) t.notOk(app.logs.text().includes(tok), 'no token in the logs');
  },
);

t.test(
  'disconnect when the provider cannot revoke: the record still goes, the answer and the log say so',
  async (t) => {
    const { oauth, app, c } = await setup(t);
    const start = await c.json('POST', '/api/account/connect', {});
    const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
    const cb = new URL(consent.headers.get('location')!);
    t.equal((await c.request('GET', cb.pathname + cb.search)).status, 302);
    t.equal((await c.json('GET', '/api/account')).body.connected, true);
    oauth.options.failRevoke = true;
    const del = await c.json('DELETE', '/api/account');
    t.equal(del.status, 200);
    t.same(del.body, { connected: false, revoked_at_provider: false });
    t.same(oauth.revoked, []);
    t.equal(await accountRows(app.database), 0, 'Airlock forgot the tokens anyway');
    const [logged] = await queryActionLog(app.database.sql, { event: 'account.disconnected' });
    t.same(
      { severity: logged.severity, data: logged.data },
      { severity: 'warning', data: { revoked_at_provider: false, reason: 'backend_error' } },
    );
  },
);

t.test('no half-written account: the record and its action-log entry are written together or not at all', async (t) => {
  const { app, c } = await setup(t);
  const connect = async () => {
    const start = await c.json('POST', '/api/account/connect', {});
    const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
    const cb = new URL(consent.headers.get('location')!);
    return c.request('GET', cb.pathname + cb.search);
  };
  await failActionLog(app.database, 'account.connected');
  t.equal((await connect()).status, 500, 'the entry cannot be written: the connect fails');
  t.equal(await accountRows(app.database), 0, 'and stores no tokens');
  t.equal((await c.json('GET', '/api/account')).body.connected, false);
  await allowActionLog(app.database, 'account.connected');
  t.equal((await connect()).status, 302);
  t.equal(await accountRows(app.database), 1);

  await failActionLog(app.database, 'account.disconnected');
  t.equal((await c.json('DELETE', '/api/account')).status, 500, 'the entry cannot be written: the disconnect fails');
  t.equal(await accountRows(app.database), 1, 'and the record stays, never deleted unlogged');
  await allowActionLog(app.database, 'account.disconnected');
  t.equal((await c.json('DELETE', '/api/account')).status, 200);
  t.equal(await accountRows(app.database), 0);
  t.same(
    (await queryActionLog(app.database.sql, {})).map((e) => e.event).filter((e) => e.startsWith('account.')),
    ['account.disconnected', 'account.connected'],
    'one entry per change that happened',
  );
});

t.test("refusals: anonymous, forged state, another user's state, CSRF", async (t) => {
  const { app, c } = await setup(t);
  const anon = app.client();
  t.equal((await anon.json('GET', '/api/account')).status, 401);
  await anon.fetchCsrf();
  t.equal((await anon.json('POST', '/api/account/connect', {})).status, 401);

  const forged = await c.json('GET', '/api/account/callback?code=4/x&state=forged');
  t.equal(forged.status, 400);
  t.equal(forged.body.error.code, 'ERR_ACCOUNT_STATE');

  const noCsrf = await c.json('POST', '/api/account/connect', {}, { 'x-csrf-token': 'wrong' });
  t.equal(noCsrf.status, 403);
  t.equal(noCsrf.body.error.code, 'ERR_AUTH_CSRF');

  // Bob cannot complete Alice's handshake: the state lives in Alice's session.
  const start = await c.json('POST', '/api/account/connect', {});
  const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
  const cb = new URL(consent.headers.get('location')!);
  await addUser(app.database, 'bob', PASSWORD);
  const bob = app.client();
  await bob.login('bob', PASSWORD);
  const stolen = await bob.json('GET', cb.pathname + cb.search);
  t.equal(stolen.status, 400);
  t.equal(stolen.body.error.code, 'ERR_ACCOUNT_STATE');
  t.same((await bob.json('GET', '/api/account')).body, { connected: false });
});

t.test('connect without a configured client → 503 ERR_ACCOUNT_NOT_CONFIGURED', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'carol', PASSWORD);
  const c = app.client();
  await c.login('carol', PASSWORD);
  const r = await c.json('POST', '/api/account/connect', {});
  t.equal(r.status, 503);
  t.equal(r.body.error.code, 'ERR_ACCOUNT_NOT_CONFIGURED');
});

async function accountRows(database: Database): Promise<number> {
  const r = await database.sql
    .selectFrom('connected_accounts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

// Connecting (or reconnecting) from a chat comes back to that chat, not a new one: the chat
// page's return_to is `/#/chat/<id>` and the fragment survives the callback's redirect.
t.test('the connect comes back to the chat it started from', async (t) => {
  const { c } = await setup(t);
  const start = await c.json('POST', '/api/account/connect', {
    return_to: '/#/chat/0b5e2a4c-1d2e-4f00-9a6b-123456789abc',
  });
  t.equal(start.status, 200);
  const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
  const cb = new URL(consent.headers.get('location')!);
  const done = await c.request('GET', cb.pathname + cb.search);
  t.equal(done.status, 302);
  t.equal(done.headers.get('location'), '/?account=connected#/chat/0b5e2a4c-1d2e-4f00-9a6b-123456789abc');
});
