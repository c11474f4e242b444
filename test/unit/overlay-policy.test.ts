import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Encryptor, loadConfig, silentLogger } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { OverlayPreparer } from '../../daemon/host/overlay.js';
import { TokenService } from '../../daemon/host/tokens.js';
import { openDatabase } from '../../domain/db/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { dbInsertId, dbRun } from '../helpers/db.js';

/** The session start applies the user's agent policy: tools not allowed are not loaded, a forbidden model is refused. */
t.test('agent policy at session start', async (t) => {
  const database = await openDatabase({ file: ':memory:' });
  const db = database.sql;
  t.teardown(() => database.close());
  const config = loadConfig({ AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_MODEL: 'demo' });
  const tokens = new TokenService({
    store: new AccountStore(database.sql, new Encryptor(randomBytes(32))),
    refresh: async () => {
      throw new Error('no refresh in this test');
    },
    log: silentLogger(),
  });
  const prep = new OverlayPreparer({ config, db: database.sql, tokens, log: silentLogger() });
  const free = await createUser(database.sql, { username: 'free', email: 'free@x.test' });
  const limited = await createUser(database.sql, { username: 'limited', email: 'limited@x.test' });
  const barred = await createUser(database.sql, { username: 'barred', email: 'barred@x.test' });
  const org = await dbInsertId(db, "INSERT INTO organisations (name) VALUES ('Acme')");
  const org2 = await dbInsertId(db, "INSERT INTO organisations (name) VALUES ('Other')");
  await dbRun(
    db,
    'INSERT INTO organisation_members (organisation_id, user_id) VALUES (?, ?), (?, ?)',
    org,
    limited.id,
    org2,
    barred.id,
  );
  await dbRun(
    db,
    `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_tools, denied_tools) VALUES (?, 'mail only', 'all', '["send_email","rasterize_chart"]', '["rasterize_chart"]')`,
    org,
  );
  await dbRun(
    db,
    `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_models) VALUES (?, 'big model only', 'all', '["gpt-big"]')`,
    org2,
  );

  const a = await prep.prepare({ userId: free.id, sessionId: 's-free', proxyPort: 8700 });
  t.notOk('AGENT_TOOLS' in a.agentEnv, 'no policy: every tool');
  t.equal(a.agentEnv.AGENT_MODEL_PROVIDER, 'demo');
  const b = await prep.prepare({ userId: limited.id, sessionId: 's-limited', proxyPort: 8700 });
  t.equal(b.agentEnv.AGENT_TOOLS, 'send_email', 'allowed minus denied');
  await t.rejects(prep.prepare({ userId: barred.id, sessionId: 's-barred', proxyPort: 8700 }), {
    code: 'ERR_POLICY_MODEL_DENIED',
    status: 403,
  });
  await tokens.close();
});

t.test('MAIL_FROM: the connected account address, only when connected and only a plain address', async (t) => {
  const database = await openDatabase({ file: ':memory:' });
  t.teardown(() => database.close());
  const config = loadConfig({ AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_MODEL: 'demo' });
  const store = new AccountStore(database.sql, new Encryptor(randomBytes(32)));
  const tokens = new TokenService({
    store,
    refresh: async () => Promise.reject(new Error('no refresh')),
    log: silentLogger(),
  });
  t.teardown(() => tokens.close());
  const emails: Record<number, string> = {};
  const prep = new OverlayPreparer({
    config,
    db: database.sql,
    tokens,
    log: silentLogger(),
    accountEmail: (id) => emails[id],
  });
  const a = await createUser(database.sql, { username: 'a', email: 'a@x.test' });
  const b = await createUser(database.sql, { username: 'b', email: 'b@x.test' });
  const c = await createUser(database.sql, { username: 'c', email: 'c@x.test' });
  for (const u of [a, b])
    await store.connect(u.id, {
      email: null,
      scopes: [],
      accessToken: `tok-${u.id}`,
      expiresAt: Date.now() + 3600_000,
    });
  emails[a.id] = 'alice@example.test';
  emails[b.id] = 'Evil <x@y>\r\nBcc: all@example.test';
  emails[c.id] = 'carol@example.test';
  t.equal(
    (await prep.prepare({ userId: a.id, sessionId: 's-a', proxyPort: 8700 })).agentEnv.MAIL_FROM,
    'alice@example.test',
  );
  t.notOk(
    'MAIL_FROM' in (await prep.prepare({ userId: b.id, sessionId: 's-b', proxyPort: 8700 })).agentEnv,
    'anything but a plain address is left out',
  );
  t.notOk(
    'MAIL_FROM' in (await prep.prepare({ userId: c.id, sessionId: 's-c', proxyPort: 8700 })).agentEnv,
    'no account connected: no From',
  );
});
