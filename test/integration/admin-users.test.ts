import t from 'tap';
import { createUser } from '../../domain/users.js';
import { addUser, startTestApp } from '../helpers/app.js';

const PW = 'admin-users-password-1';

t.test('GET /api/admin/users: superuser only, search by part of name or e-mail, pages, never a hash', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', PW, { superuser: true });
  const alice = await addUser(app.database, 'alice', PW, { email: 'Alice@Example.test' });
  const bob = await addUser(app.database, 'bob', PW, { email: 'bob@example.test' });
  await addUser(app.database, 'under_score', PW);
  await addUser(app.database, 'underXscore', PW);
  await app.database.sql
    .updateTable('users')
    .set({ display_name: 'Robert Builder' })
    .where('id', '=', bob.id)
    .execute();

  const anon = await app.client().json('GET', '/api/admin/users');
  t.equal(anon.status, 401);
  t.equal(anon.body.error.code, 'ERR_AUTH_REQUIRED');
  const plain = app.client();
  await plain.login('alice', PW);
  const denied = await plain.json('GET', '/api/admin/users');
  t.equal(denied.status, 403);
  t.equal(denied.body.error.code, 'ERR_AUTH_FORBIDDEN');

  const root = app.client();
  await root.login('root', PW);
  const all = await root.json('GET', '/api/admin/users');
  t.equal(all.status, 200);
  t.same(
    all.body.users.map((u: { username: string }) => u.username),
    ['root', 'alice', 'bob', 'under_score', 'underXscore'],
  );
  t.equal(all.body.total, 5);
  t.equal(all.body.next_offset, null);
  t.notMatch(JSON.stringify(all.body), /password|\$argon|\$scrypt|hash/i, 'no password material');
  t.same(
    all.body.users.map((u: { sso_only: boolean }) => u.sso_only),
    [false, false, false, false, false],
    'every account here has a password',
  );

  const byEmail = await root.json('GET', '/api/admin/users?q=ALICE@example');
  t.same(
    byEmail.body.users.map((u: { id: number }) => u.id),
    [alice.id],
    'e-mail, case-insensitive',
  );
  const byName = await root.json('GET', '/api/admin/users?q=builder');
  t.same(
    byName.body.users.map((u: { id: number }) => u.id),
    [bob.id],
    'display name',
  );
  const literal = await root.json('GET', '/api/admin/users?q=under_');
  t.same(
    literal.body.users.map((u: { username: string }) => u.username),
    ['under_score'],
    '_ is literal, not a wildcard',
  );
  const percent = await root.json('GET', '/api/admin/users?q=%25');
  t.same(percent.body.users, [], '% is literal');
  t.equal(percent.body.total, 0);

  const p1 = await root.json('GET', '/api/admin/users?limit=2');
  t.same(
    p1.body.users.map((u: { username: string }) => u.username),
    ['root', 'alice'],
  );
  t.equal(p1.body.next_offset, 2);
  const p3 = await root.json('GET', `/api/admin/users?limit=2&offset=${p1.body.next_offset + 2}`);
  t.same(
    p3.body.users.map((u: { username: string }) => u.username),
    ['underXscore'],
  );
  t.equal(p3.body.next_offset, null);

  for (const bad of ['limit=0', 'limit=201', 'limit=x', 'offset=-1', `q=${'a'.repeat(101)}`, 'q=a&q=b']) {
    const r = await root.json('GET', `/api/admin/users?${bad}`);
    t.equal(r.status, 400, bad);
    t.equal(r.body.error.code, 'ERR_VALIDATION', bad);
  }
});

t.test('GET /api/admin/users marks an account without a password as single sign-on only', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', PW, { superuser: true });
  // As SSO's first sign-in or the directory sync creates it: no password.
  const sso = await createUser(app.database.sql, { username: 'dora', email: 'dora@example.test' });
  const root = app.client();
  await root.login('root', PW);
  const all = await root.json('GET', '/api/admin/users');
  t.same(
    all.body.users.map((u: { username: string; sso_only: boolean }) => [u.username, u.sso_only]),
    [
      ['root', false],
      ['dora', true],
    ],
  );
  // An admin's reset gives her a password: then she is no longer single sign-on only.
  const reset = await root.json('POST', `/api/admin/users/${sso.id}/password`, {});
  t.equal(reset.status, 200, 'reset');
  const after = await root.json('GET', '/api/admin/users?q=dora');
  t.equal(after.body.users[0].sso_only, false, 'a password set by the reset counts');
});
