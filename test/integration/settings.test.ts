/**
 * /api/settings (docs/chat.md "Settings"): change your password (the current one checked under
 * the login limits; your other web sessions end, this one stays; an audit entry), single sign-on
 * accounts have none to change, and the model a new chat starts with.
 */
import t from 'tap';
import { atRestEncryptor } from '../../core/index.js';
import { createChatModel } from '../../domain/chat/models.js';
import { addUser, startTestApp } from '../helpers/app.js';

const PW = 'settings-password-1';

async function events(app: Awaited<ReturnType<typeof startTestApp>>, event: string) {
  return app.database.sql.selectFrom('action_log').selectAll().where('event', '=', event).execute();
}

t.test('change password: wrong current, too short, success ends the other sessions only', async (t) => {
  const app = await startTestApp(t);
  t.equal((await app.client().json('GET', '/api/settings')).status, 401, 'signed-in users only');
  const alice = await addUser(app.database, 'alice', PW);
  const here = app.client();
  const there = app.client();
  await here.login('alice', PW);
  await there.login('alice', PW);

  const view = await here.json('GET', '/api/settings');
  t.same(view.body, { default_model_id: null, has_password: true, password_min: 8, password_max: 1024 });

  const wrong = await here.json('POST', '/api/settings/password', {
    current_password: 'not-it-at-all',
    new_password: 'a-new-password-2',
  });
  t.equal(wrong.status, 403);
  t.equal(wrong.body.error.code, 'ERR_AUTH_WRONG_PASSWORD');
  const short = await here.json('POST', '/api/settings/password', { current_password: PW, new_password: 'short' });
  t.equal(short.status, 400);
  t.equal(short.body.error.code, 'ERR_VALIDATION');
  t.equal(short.body.error.field, 'new_password');
  const extra = await here.json('POST', '/api/settings/password', {
    current_password: PW,
    new_password: 'a-new-password-2',
    other: 1,
  });
  t.equal(extra.body.error.code, 'ERR_VALIDATION', 'unknown fields refused');

  const ok = await here.json('POST', '/api/settings/password', {
    current_password: PW,
    new_password: 'a-new-password-2',
  });
  t.equal(ok.status, 200);
  t.same(ok.body, { sessions_ended: 1 });
  t.equal((await here.json('GET', '/api/auth/me')).status, 200, 'the session that changed it stays');
  t.equal((await there.json('GET', '/api/auth/me')).status, 401, 'the other session ended');
  t.equal((await app.client().login('alice', PW)).status, 401, 'the old password no longer works');
  t.equal((await app.client().login('alice', 'a-new-password-2')).status, 200, 'the new one does');
  const logged = await events(app, 'auth.password_changed');
  t.equal(logged.length, 1, 'one audit entry');
  t.equal(logged[0].subject_id, alice.id);
  t.notMatch(
    JSON.stringify(logged) + app.logs.text(),
    /a-new-password-2|settings-password-1/,
    'no password in the log or the audit',
  );
});

t.test('the current password is guarded by the login limits', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_LOGIN_MAX_FAILURES: '2' } });
  await addUser(app.database, 'bob', PW);
  const c = app.client();
  await c.login('bob', PW);
  for (let i = 0; i < 2; i++) {
    const r = await c.json('POST', '/api/settings/password', {
      current_password: `guess-${i}-xxxxx`,
      new_password: 'a-new-password-2',
    });
    t.equal(r.body.error.code, 'ERR_AUTH_WRONG_PASSWORD', `guess ${i + 1}`);
  }
  const limited = await c.json('POST', '/api/settings/password', {
    current_password: PW,
    new_password: 'a-new-password-2',
  });
  t.equal(limited.status, 429);
  t.equal(limited.body.error.code, 'ERR_AUTH_RATE_LIMITED');
  t.ok(Number(limited.res.headers.get('retry-after')) >= 1, 'Retry-After');
  t.equal((await app.client().login('bob', PW)).status, 429, 'the same limits as the login (one name, one address)');
});

t.test('an account without a password (single sign-on only) has none to change', async (t) => {
  const app = await startTestApp(t);
  const sso = await addUser(app.database, 'sso', PW);
  const c = app.client();
  await c.login('sso', PW);
  await app.database.sql.updateTable('users').set({ password_hash: null }).where('id', '=', sso.id).execute();
  t.equal((await c.json('GET', '/api/settings')).body.has_password, false);
  const r = await c.json('POST', '/api/settings/password', {
    current_password: 'anything-at-all',
    new_password: 'a-new-password-2',
  });
  t.equal(r.status, 409);
  t.equal(r.body.error.code, 'ERR_AUTH_NO_PASSWORD');
});

t.test('the default model for new chats: an enabled model on offer, kept per user', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'carol', PW);
  await addUser(app.database, 'dave', PW);
  const c = app.client();
  await c.login('carol', PW);
  const before = await c.json('GET', '/api/chat/models');
  t.equal(before.body.preferred_id, null, 'none chosen');
  await createChatModel(app.database.sql, atRestEncryptor(app.config), {
    id: 'second',
    label: 'Second',
    provider: 'demo',
    model: 'demo',
    context_tokens: 50_000,
  });

  const missing = await c.json('PATCH', '/api/settings', { default_model_id: 'nope' });
  t.equal(missing.status, 404);
  t.equal(missing.body.error.code, 'ERR_CHAT_MODEL_NOT_FOUND');
  const bad = await c.json('PATCH', '/api/settings', { default_model_id: 'Not An Id' });
  t.equal(bad.body.error.code, 'ERR_VALIDATION');

  const set = await c.json('PATCH', '/api/settings', { default_model_id: 'second' });
  t.equal(set.status, 200);
  t.equal(set.body.default_model_id, 'second');
  t.equal((await c.json('GET', '/api/chat/models')).body.preferred_id, 'second', 'the picker preselects it');
  const d = app.client();
  await d.login('dave', PW);
  t.equal((await d.json('GET', '/api/chat/models')).body.preferred_id, null, "another user's choice is theirs");

  await app.database.sql.updateTable('chat_models').set({ enabled: 0 }).where('id', '=', 'second').execute();
  t.equal((await c.json('GET', '/api/chat/models')).body.preferred_id, null, 'a disabled model is not preselected');
  const cleared = await c.json('PATCH', '/api/settings', { default_model_id: null });
  t.equal(cleared.body.default_model_id, null);
  t.equal((await events(app, 'settings.default_model_changed')).length, 2, 'each change in the audit');
});
