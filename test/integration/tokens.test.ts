import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, Encryptor, Secret, tokenRequest, type ProfileRoute } from '../../core/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { buildProfile, OverlayPreparer, ROUTE_ENV, writeProfile } from '../../daemon/host/overlay.js';
import { TokenService } from '../../daemon/host/tokens.js';
import { refreshLease } from '../../daemon/host/fleet.js';
import { start as startOAuth, type GoogleOAuth } from '../../emulator/google-oauth.js';
import { startCredentialProxy } from '../../proxy/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { addUser, logSink, tempDir, testConfig } from '../helpers/app.js';
import { openTestDatabase } from '../helpers/db.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

/** A real database, a real account connected through the emulator, and a token service on an injected clock. */
async function rig(t: { teardown(fn: () => unknown): void }, opts: { failRefresh?: boolean } = {}) {
  const oauth: GoogleOAuth = await startOAuth(opts);
  t.teardown(() => oauth.close());
  const database = await openTestDatabase(t, tempDir(t));
  const db = database.sql;
  const user = await addUser(database, 'alice', 'pw-pw-pw-pw');
  const store = new AccountStore(db, new Encryptor(Buffer.alloc(32, 7)));
  // Obtain a real grant from the emulator (authorize → code → token).
  const verifier = 'v'.repeat(50);
  const { createHash } = await import('node:crypto');
  const u = new URL(oauth.authorizeUrl);
  for (const [k, v] of Object.entries({
    client_id: oauth.options.clientId!,
    redirect_uri: 'http://127.0.0.1/cb',
    response_type: 'code',
    scope: 'a b',
    access_type: 'offline',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }))
    u.searchParams.set(k, v);
  const code = new URL((await fetch(u, { redirect: 'manual' })).headers.get('location')!).searchParams.get('code')!;
  const cfg = {
    tokenUrl: oauth.tokenUrl,
    clientId: oauth.options.clientId,
    clientSecret: new Secret(oauth.options.clientSecret!),
  };
  const grant = await tokenRequest(cfg, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: 'http://127.0.0.1/cb',
  });
  let now = T0;
  await store.connect(user.id, {
    scopes: ['a', 'b'],
    accessToken: grant.access_token,
    expiresAt: now + 3600_000,
    refreshToken: grant.refresh_token,
  });
  const logs = logSink();
  const log = createLogger({ level: 'debug', destination: logs.stream });
  const tokens = new TokenService({
    store,
    refresh: (rt) => tokenRequest(cfg, { grant_type: 'refresh_token', refresh_token: rt }),
    log,
    clock: () => now,
  });
  const refreshCalls = () =>
    oauth.requests.filter((r) => r.path === '/token' && r.params.grant_type === 'refresh_token').length;
  return {
    oauth,
    db,
    user,
    store,
    tokens,
    logs,
    grant,
    refreshCalls,
    setExpiryIn: async (s: number) =>
      store.saveAccess(user.id, (await store.tokens(user.id))!.accessToken!, now + s * 1000),
    advance: (ms: number) => (now += ms),
    now: () => now,
  };
}

t.test('refresh window: 59 s left → refreshed, 61 s left → reused, 60 s → refreshed', async (t) => {
  const r = await rig(t);
  await r.setExpiryIn(61);
  const reused = await r.tokens.getAccessToken(r.user.id);
  t.equal(reused!.accessToken, r.grant.access_token, 'cached token reused');
  t.equal(r.refreshCalls(), 0);

  await r.setExpiryIn(59);
  const fresh = await r.tokens.getAccessToken(r.user.id);
  t.not(fresh!.accessToken, r.grant.access_token, 'a new token');
  t.equal(fresh!.accessToken, r.oauth.issued.access.at(-1));
  t.equal(fresh!.expiresAt, r.now() + 3599_000, 'expiry from expires_in on the injected clock');
  t.equal(r.refreshCalls(), 1);
  t.equal((await r.store.tokens(r.user.id))!.accessToken, fresh!.accessToken, 'cached for the next session');

  await r.setExpiryIn(60);
  await r.tokens.getAccessToken(r.user.id);
  t.equal(r.refreshCalls(), 2, 'exactly 60 s left counts as within the window');
  t.notOk(r.logs.text().includes(fresh!.accessToken), 'no token in logs');
  t.notOk(r.logs.text().includes(r.grant.refresh_token!), 'no refresh token in logs');
});

t.test('concurrent session starts cause one refresh', async (t) => {
  const r = await rig(t);
  await r.setExpiryIn(10);
  const got = await Promise.all(Array.from({ length: 12 }, () => r.tokens.getAccessToken(r.user.id)));
  t.equal(r.refreshCalls(), 1, 'one refresh grant at the provider');
  t.equal(new Set(got.map((g) => g!.accessToken)).size, 1, 'every caller got the same token');
});

t.test(
  'two nodes of a fleet refreshing one account at once send one refresh grant (a lease in the database)',
  async (t) => {
    const r = await rig(t);
    await r.setExpiryIn(10);
    const node = (id: string) =>
      new TokenService({
        store: r.store,
        refresh: (rt) =>
          tokenRequest(
            {
              tokenUrl: r.oauth.tokenUrl,
              clientId: r.oauth.options.clientId,
              clientSecret: new Secret(r.oauth.options.clientSecret!),
            },
            { grant_type: 'refresh_token', refresh_token: rt },
          ),
        log: createLogger({ level: 'silent' }),
        clock: r.now,
        lease: refreshLease(r.db, id),
      });
    const [a, b] = [node('node-a'), node('node-b')];
    const [ta, tb] = await Promise.all([a.getAccessToken(r.user.id), b.getAccessToken(r.user.id)]);
    t.equal(r.refreshCalls(), 1, 'one grant for the fleet');
    t.equal(ta!.accessToken, tb!.accessToken, 'both nodes use the one new token');
    t.not(ta!.accessToken, r.grant.access_token);
    const left = await r.db.selectFrom('leases').selectAll().execute();
    t.same(left, [], 'the lease is released');

    // A node that judged the old token due but reaches the lease only after the other node saved
    // the new one (slow under load; seen once with two test files at a time) sends no second grant.
    const late = node('node-c');
    const tc = await late.refresh(r.user.id, { accessToken: r.grant.access_token });
    t.equal(r.refreshCalls(), 1, 'a late node uses the token another node saved: still one grant');
    t.equal(tc.accessToken, ta!.accessToken, 'the same new token');
  },
);

t.test('no account → null; failed refresh → ERR_ACCOUNT_REFRESH', async (t) => {
  const r = await rig(t, { failRefresh: true });
  t.equal(await r.tokens.getAccessToken(9999), null);
  await r.setExpiryIn(5);
  await t.rejects(r.tokens.getAccessToken(r.user.id), { code: 'ERR_ACCOUNT_REFRESH' });
});

t.test('overlay: a failed refresh leaves the account routes out (tools then ask to connect)', async (t) => {
  const r = await rig(t, { failRefresh: true });
  await r.setExpiryIn(30);
  const preparer = new OverlayPreparer({
    config: testConfig(tempDir(t)),
    tokens: r.tokens,
    log: createLogger({ level: 'silent' }),
  });
  const prep = await preparer.prepare({ userId: r.user.id, sessionId: 's-fail', proxyPort: 8700 });
  t.same(prep.routes, []);
  t.same(prep.tokens, {});
  t.same(r.tokens.tracked(), [], 'nothing to rotate');
});

t.test('rotation: a warm session keeps mailing across a token change', async (t) => {
  const r = await rig(t);
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const dir = tempDir(t);
  const config = testConfig(dir, {
    AIRLOCK_GOOGLE_MAIL_BASE_URL: upstream.url,
    AIRLOCK_GOOGLE_SHEETS_BASE_URL: upstream.url,
    AIRLOCK_GOOGLE_DRIVE_BASE_URL: upstream.url,
  });
  const preparer = new OverlayPreparer({ config, tokens: r.tokens, log: createLogger({ level: 'silent' }) });
  const prep = await preparer.prepare({ userId: r.user.id, sessionId: 'warm-1', proxyPort: 0 });
  // The sandbox took `start`: the lifecycle registers it (serve's onSessionLive hook does this).
  // The egress gateway (host) holds the tokens; rotation replaces them there: the session's
  // gateway is what the lifecycle hands the token service (serve's onSessionLive hook).
  const env: Record<string, string> = { ...prep.tokens };
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const sock = join(dir, 'egress.sock');
  const h = await gw.open('warm-1', sock, { userId: r.user.id, routes: prep.routes, tokens: prep.tokens });
  t.teardown(() => h.close());
  r.tokens.track('warm-1', r.user.id, Object.keys(prep.tokens), {
    setTokens: (toks) => {
      Object.assign(env, toks);
      h.setTokens(toks);
    },
  });
  const proxy = await startCredentialProxy({
    profile: { version: 1, session_id: 'warm-1', proxy: { host: '127.0.0.1', port: 0 }, routes: prep.routes },
    getPlaceholder: (n) => prep.placeholders[n],
    egressSocket: sock,
  });
  t.teardown(() => proxy.close());
  const send = () =>
    fetch(`http://127.0.0.1:${proxy.port}/gmail/mail/v1/users/me/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${prep.placeholders.MAIL_API_KEY}`, 'content-type': 'application/json' },
      body: '{"raw":"eA"}',
    });
  t.equal((await send()).status, 200);

  // Nothing due yet: no refresh, no push.
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 0);
  // 58 minutes later the token has < 5 min left: the rotation pass refreshes and pushes.
  r.advance(58 * 60_000);
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 1);
  const rotated = r.oauth.issued.access.at(-1)!;
  t.equal(env.MAIL_ACCESS_TOKEN, rotated);
  t.equal(env.SHEETS_ACCESS_TOKEN, rotated);
  t.equal((await send()).status, 200);
  t.same(
    upstream.requests.map((q) => q.headers.authorization),
    [`Bearer ${r.grant.access_token}`, `Bearer ${rotated}`],
  );

  r.tokens.untrack('warm-1');
  r.advance(58 * 60_000);
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 1, 'an ended session is no longer rotated');
});

t.test('a rotation pass whose refresh fails pushes nothing and tries again on the next pass', async (t) => {
  const r = await rig(t);
  const pushed: Array<[string, Record<string, string>]> = [];
  r.tokens.track('warm-1', r.user.id, ['MAIL_ACCESS_TOKEN'], into(pushed, 'warm-1'));
  const before = (await r.store.tokens(r.user.id))!.accessToken;

  // The token is due, and the provider refuses the refresh (e.g. briefly down, or consent pulled).
  r.advance(58 * 60_000);
  r.oauth.options.failRefresh = true;
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 1, 'the pass tried');
  t.same(pushed, [], 'nothing pushed: the session keeps its old token (upstream 401s become tool errors)');
  t.equal((await r.store.tokens(r.user.id))!.accessToken, before, 'the cached token is unchanged');
  t.same(r.tokens.tracked(), ['warm-1'], 'the session is still rotated');
  t.match(
    r.logs.text(),
    /"code":"ERR_[A-Z_]+"[^\n]*"msg":"access token refresh failed"/,
    'the failure is logged with its code',
  );
  t.notOk(r.logs.text().includes(r.grant.refresh_token!), 'the refresh token is not logged');

  // The provider is back: the next pass refreshes and pushes.
  r.oauth.options.failRefresh = false;
  r.advance(30_000);
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 2);
  const fresh = r.oauth.issued.access.at(-1)!;
  t.same(pushed, [['warm-1', { MAIL_ACCESS_TOKEN: fresh }]], 'the next pass delivers the new token');
  t.equal((await r.store.tokens(r.user.id))!.accessToken, fresh);
});

t.test('a refresh at a new session start reaches the older warm sessions of the account', async (t) => {
  const r = await rig(t);
  const pushed: Array<[string, Record<string, string>]> = [];
  r.tokens.track('warm-old', r.user.id, ['MAIL_ACCESS_TOKEN', 'SHEETS_ACCESS_TOKEN'], into(pushed, 'warm-old'));
  r.tokens.track('warm-other-user', r.user.id + 1, ['MAIL_ACCESS_TOKEN'], into(pushed, 'warm-other-user'));
  // 30 s before expiry a new session of the same user starts (before any rotation pass ran):
  // its start refreshes the token, and the old warm session must not keep the dying one.
  r.advance(3600_000 - 30_000);
  const fresh = await r.tokens.getAccessToken(r.user.id);
  t.equal(r.refreshCalls(), 1);
  t.same(
    pushed,
    [['warm-old', { MAIL_ACCESS_TOKEN: fresh!.accessToken, SHEETS_ACCESS_TOKEN: fresh!.accessToken }]],
    'pushed to the warm session of that account only',
  );
  // The next rotation pass sees a fresh token: nothing more to do.
  await r.tokens.rotateDue();
  t.equal(r.refreshCalls(), 1);
  t.equal(pushed.length, 1);
  t.notOk(r.logs.text().includes(fresh!.accessToken), 'the token value is not logged');
});

t.test('overlay: profile.json holds no secret value and no route whose token is absent', async (t) => {
  const r = await rig(t);
  const dir = tempDir(t);
  const MODEL_KEY = 'sk-model-key-that-must-never-appear-0123456789';
  const base = {
    AIRLOCK_MODEL_PROVIDER: 'openai',
    AIRLOCK_MODEL_BASE_URL: 'https://api.openai.example/v1',
    AIRLOCK_MODEL: 'gpt-x',
  };
  const make = (env: Record<string, string>) =>
    new OverlayPreparer({
      config: testConfig(dir, env),
      tokens: r.tokens,
      log: createLogger({ level: 'silent' }),
      hostOrigin: 'http://127.0.0.1:8080',
      mintAgentUserToken: (u, s) => `agent-token-${u}-${s}-signed`,
    });
  // The preparer is pure: the runtime writes what it returned (session-plan + slots in the runtime).
  const writeFor = (sid: string, routes: ProfileRoute[]) =>
    writeProfile(join(dir, 'sessions', sid), buildProfile(sid, 8700, routes));

  const full = await make({ ...base, AIRLOCK_MODEL_API_KEY: MODEL_KEY }).prepare({
    userId: r.user.id,
    sessionId: 's-full',
    proxyPort: 8700,
  });
  t.same(r.tokens.tracked(), [], 'preparing registers nothing for rotation (the lifecycle does, once live)');
  writeFor('s-full', full.routes);
  const file = join(dir, 'sessions', 's-full', 'profile.json');
  const text = readFileSync(file, 'utf8');
  t.equal(statSync(file).mode & 0o777, 0o644, 'world-readable by design');
  const profile = JSON.parse(text);
  t.same(
    profile.routes.map((x: { name: string }) => x.name),
    ['mail', 'sheets', 'search', 'model', 'host'],
  );
  const secrets = [
    ...Object.values(full.tokens),
    r.grant.access_token,
    r.grant.refresh_token!,
    MODEL_KEY,
    ...Object.values(full.placeholders),
    'agent-token-',
  ];
  for (const s of secrets) t.notOk(text.includes(s), 'profile.json holds no secret value');
  for (const route of profile.routes) {
    if (route.token_ref === null) continue;
    const name = /^\$\{([A-Z_]+)\}$/.exec(route.token_ref)![1];
    t.ok(full.tokens[name], `${route.name}: its token ${name} is handed to the supervisor`);
  }
  t.same(Object.keys(full.tokens).sort(), [
    'MAIL_ACCESS_TOKEN',
    'MODEL_API_KEY_REAL',
    'SEARCH_ACCESS_TOKEN',
    'SHEETS_ACCESS_TOKEN',
  ]);
  t.same(Object.keys(full.placeholders).sort(), [
    'AGENT_MODEL_API_KEY',
    'AGENT_USER_TOKEN',
    'MAIL_API_KEY',
    'SEARCH_SHEETS_API_KEY',
    'SHEETS_API_KEY',
  ]);
  for (const k of ['MAIL_API_KEY', 'SHEETS_API_KEY', 'SEARCH_SHEETS_API_KEY', 'AGENT_MODEL_API_KEY']) {
    t.ok(Buffer.from(full.placeholders[k], 'base64url').length >= 16, `${k} has ≥ 128 random bits`);
  }
  t.equal(new Set(Object.values(full.placeholders)).size, 5, 'placeholders differ per route');
  t.same(full.egressAllow.sort(), [
    '127.0.0.1:8080',
    'api.openai.example:443',
    'gmail.googleapis.com:443',
    'sheets.googleapis.com:443',
    'www.googleapis.com:443',
  ]);
  for (const v of Object.values(full.agentEnv)) t.notOk(secrets.includes(v), 'agent env holds no secret');

  const again = await make({ ...base, AIRLOCK_MODEL_API_KEY: MODEL_KEY }).prepare({
    userId: r.user.id,
    sessionId: 's-2',
    proxyPort: 8700,
  });
  t.not(again.placeholders.MAIL_API_KEY, full.placeholders.MAIL_API_KEY, 'placeholders are minted per session');

  // No connected account and the demo model: no mail/sheets/search/model routes and no such tokens.
  await r.store.disconnect(r.user.id);
  const bare = await make({}).prepare({ userId: r.user.id, sessionId: 's-bare', proxyPort: 8700 });
  writeFor('s-bare', bare.routes);
  t.same(
    bare.routes.map((x) => x.name),
    ['host'],
  );
  t.same(bare.tokens, {});
  const bareProfile = JSON.parse(readFileSync(join(dir, 'sessions', 's-bare', 'profile.json'), 'utf8'));
  t.same(
    bareProfile.routes.map((x: { name: string }) => x.name),
    ['host'],
  );
  t.notOk(JSON.stringify(bareProfile).includes(ROUTE_ENV.mail.token), 'no route names the absent mail token');
});

/** A session's token sink that records what rotation put into it, as [session, tokens]. */
function into(pushed: Array<[string, Record<string, string>]>, sessionId: string) {
  return { setTokens: (toks: Record<string, string>) => void pushed.push([sessionId, toks]) };
}
