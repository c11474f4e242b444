/**
 * Changing accounts from the users page (docs/ui-admin.md "Users"): deactivate (web sessions and
 * live sandboxes end, no login), reactivate, promote, demote, reset a password (chosen, or
 * generated and shown once); never yourself nor the last active superuser; all in the audit.
 */
import t from 'tap';
import { changeUser } from '../../domain/user-admin.js';
import { addUser, startTestApp } from '../helpers/app.js';

const PW = 'manage-users-password-1';

t.test('deactivate, reactivate, promote, demote; guards; audit', async (t) => {
  const killed: number[] = [];
  const app = await startTestApp(t, { services: { sandboxes: { killForUser: (id: number) => (killed.push(id), 2) } } });
  const root = await addUser(app.database, 'root', PW, { superuser: true });
  const alice = await addUser(app.database, 'alice', PW);
  const bob = await addUser(app.database, 'bob', PW);
  const admin = app.client();
  await admin.login('root', PW);
  const a = app.client();
  await a.login('alice', PW);

  const denied = await a.json('PATCH', `/api/admin/users/${bob.id}`, { is_active: false });
  t.equal(denied.status, 403, 'non-admin');
  t.equal(denied.body.error.code, 'ERR_AUTH_FORBIDDEN');
  t.equal((await a.json('POST', `/api/admin/users/${bob.id}/password`, {})).status, 403);

  for (const change of [{ is_superuser: false }, { is_active: false }]) {
    const self = await admin.json('PATCH', `/api/admin/users/${root.id}`, change);
    t.equal(self.status, 409, `self: ${JSON.stringify(change)}`);
    t.equal(self.body.error.code, 'ERR_USER_SELF');
  }
  t.equal(
    (await admin.json('PATCH', '/api/admin/users/999999', { is_active: false })).body.error.code,
    'ERR_USER_NOT_FOUND',
  );
  t.equal((await admin.json('PATCH', '/api/admin/users/x', { is_active: false })).status, 404);
  t.equal(
    (await admin.json('PATCH', `/api/admin/users/${bob.id}`, {})).body.error.code,
    'ERR_VALIDATION',
    'nothing to change',
  );
  t.equal(
    (await admin.json('PATCH', `/api/admin/users/${bob.id}`, { is_active: 'no' })).body.error.code,
    'ERR_VALIDATION',
  );

  const off = await admin.json('PATCH', `/api/admin/users/${alice.id}`, { is_active: false });
  t.equal(off.status, 200);
  t.match(off.body, { user: { id: alice.id, is_active: false }, sessions_ended: 1, sandboxes_ended: 2 });
  t.same(killed, [alice.id], 'her live sandboxes were ended');
  t.equal((await a.json('GET', '/api/auth/me')).status, 401, 'her web session ended');
  t.equal((await app.client().login('alice', PW)).status, 401, 'she cannot log in');
  const on = await admin.json('PATCH', `/api/admin/users/${alice.id}`, { is_active: true });
  t.equal(on.body.user.is_active, true);
  t.equal((await app.client().login('alice', PW)).status, 200, 'reactivated: she can again');

  const up = await admin.json('PATCH', `/api/admin/users/${bob.id}`, { is_superuser: true });
  t.equal(up.body.user.is_superuser, true);
  const b = app.client();
  await b.login('bob', PW);
  t.equal((await b.json('GET', '/api/admin/users')).status, 200, 'promoted: the admin API is his');
  const down = await admin.json('PATCH', `/api/admin/users/${bob.id}`, { is_superuser: false });
  t.equal(down.body.user.is_superuser, false);
  t.equal((await b.json('GET', '/api/admin/users')).status, 403, 'demoted: at once');

  const log = await app.database.sql
    .selectFrom('action_log')
    .select(['event', 'actor_id', 'subject_id', 'data'])
    .where('event', 'like', 'identity.user_%')
    .orderBy('id')
    .execute();
  t.same(
    log.map((e) => [e.event, e.actor_id, e.subject_id, JSON.parse(e.data).by]),
    [
      ['identity.user_deactivated', root.id, alice.id, 'admin'],
      ['identity.user_reactivated', root.id, alice.id, 'admin'],
      ['identity.user_promoted', root.id, bob.id, 'admin'],
      ['identity.user_demoted', root.id, bob.id, 'admin'],
    ],
  );
});

t.test('the last active superuser is never demoted or deactivated', async (t) => {
  const app = await startTestApp(t);
  const root = await addUser(app.database, 'root', PW, { superuser: true });
  const other = await addUser(app.database, 'other', PW, { superuser: true });
  const plain = await addUser(app.database, 'plain', PW);
  // Another actor (the CLI, a sync) on the last one: refused with its own code.
  await app.database.sql.updateTable('users').set({ is_active: 0 }).where('id', '=', other.id).execute();
  for (const c of [{ is_superuser: false }, { is_active: false }]) {
    await t.rejects(
      changeUser(app.database.sql, plain.id, root.id, c),
      { code: 'ERR_USER_LAST_SUPERUSER' },
      JSON.stringify(c),
    );
  }
  await app.database.sql.updateTable('users').set({ is_active: 1 }).where('id', '=', other.id).execute();

  // Two superusers demoting each other at the same moment: one wins, one superuser stays.
  const r = app.client();
  await r.login('root', PW);
  const o = app.client();
  await o.login('other', PW);
  const both = await Promise.all([
    r.json('PATCH', `/api/admin/users/${other.id}`, { is_superuser: false }),
    o.json('PATCH', `/api/admin/users/${root.id}`, { is_superuser: false }),
  ]);
  t.equal(both.filter((x) => x.status === 200).length, 1, 'exactly one succeeded');
  const loser = both.find((x) => x.status !== 200)!;
  t.ok(
    ['ERR_USER_LAST_SUPERUSER', 'ERR_AUTH_FORBIDDEN'].includes(loser.body.error.code),
    `the other refused (${loser.body.error.code})`,
  );
  const supers = await app.database.sql
    .selectFrom('users')
    .select('id')
    .where('is_superuser', '=', 1)
    .where('is_active', '=', 1)
    .execute();
  t.equal(supers.length, 1, 'one active superuser left');
});

t.test('reset a password: chosen or generated (shown once); sessions end; audit without it', async (t) => {
  const app = await startTestApp(t);
  const root = await addUser(app.database, 'root', PW, { superuser: true });
  const bob = await addUser(app.database, 'bob', PW);
  const admin = app.client();
  await admin.login('root', PW);
  const b = app.client();
  await b.login('bob', PW);

  const short = await admin.json('POST', `/api/admin/users/${bob.id}/password`, { password: 'short' });
  t.equal(short.status, 400);
  t.equal(short.body.error.code, 'ERR_VALIDATION');
  const gen = await admin.json('POST', `/api/admin/users/${bob.id}/password`, {});
  t.equal(gen.status, 200);
  t.match(gen.body, { sessions_ended: 1, password: /^[A-Za-z0-9_-]{20}$/ });
  t.equal(gen.res.headers.get('cache-control'), 'no-store');
  t.equal((await b.json('GET', '/api/auth/me')).status, 401, "bob's session ended");
  t.equal((await app.client().login('bob', PW)).status, 401, 'the old password is gone');
  t.equal((await app.client().login('bob', gen.body.password)).status, 200, 'the generated one works');

  const chosen = await admin.json('POST', `/api/admin/users/${bob.id}/password`, { password: 'chosen-by-admin-1' });
  t.same(chosen.body, { sessions_ended: 1 }, 'a chosen password is not echoed');
  t.equal((await app.client().login('bob', 'chosen-by-admin-1')).status, 200);
  t.equal((await admin.json('POST', '/api/admin/users/999999/password', {})).body.error.code, 'ERR_USER_NOT_FOUND');
  const self = await admin.json('POST', `/api/admin/users/${root.id}/password`, {});
  t.equal(self.status, 409, 'not your own: that is Settings, with the current password');
  t.equal(self.body.error.code, 'ERR_USER_SELF');

  const log = await app.database.sql
    .selectFrom('action_log')
    .select(['data'])
    .where('event', '=', 'auth.password_reset')
    .orderBy('id')
    .execute();
  t.same(
    log.map((e) => JSON.parse(e.data).generated),
    [true, false],
  );
  t.notMatch(
    JSON.stringify(log) + app.logs.text(),
    new RegExp(`${gen.body.password}|chosen-by-admin-1`),
    'no password in the audit or the log',
  );
});
