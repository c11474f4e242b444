import t from 'tap';
import { allowActionLog, dbRow, dbRows, failActionLog } from '../../helpers/db.js';
import { generateKeyPairSync } from 'node:crypto';
import { addUser, startTestApp } from '../../helpers/app.js';

const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const SA = {
  type: 'service_account',
  client_email: 'sync@proj.iam.gserviceaccount.test',
  private_key: PEM,
  private_key_id: 'k1',
};

t.test('IdP connections: superuser CRUD, secrets write-only and encrypted, has_group_sync derived', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', 'root-password-123', { superuser: true });
  await addUser(app.database, 'joe', 'joe-password-123');
  const root = app.client();
  await root.login('root', 'root-password-123');
  const joe = app.client();
  await joe.login('joe', 'joe-password-123');

  t.equal((await joe.json('GET', '/api/identity/connections')).status, 403);
  t.equal(
    (await joe.json('POST', '/api/identity/connections', { issuer: 'https://accounts.google.com', client_id: 'x' }))
      .status,
    403,
  );

  const bad = await root.json('POST', '/api/identity/connections', { issuer: 'not a url', client_id: 'x' });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'ERR_VALIDATION');
  const c = await root.json('POST', '/api/identity/connections', {
    provider: 'google',
    issuer: 'https://accounts.google.com/',
    client_id: 'cid.apps.googleusercontent.com',
    client_secret: 'GOCSPX-top-secret-value',
  });
  t.equal(c.status, 201);
  t.equal(c.body.issuer, 'https://accounts.google.com');
  t.equal(c.body.has_client_secret, true);
  t.equal(c.body.has_group_sync, false);
  t.equal(
    (await root.json('POST', '/api/identity/connections', { issuer: 'https://accounts.google.com', client_id: 'y' }))
      .body.error.code,
    'ERR_IDP_EXISTS',
  );

  const onlySa = await root.json('PATCH', `/api/identity/connections/${c.body.id}`, {
    service_account_json: JSON.stringify(SA),
  });
  t.equal(onlySa.body.has_group_sync, false, 'service account alone is not enough');
  t.equal(onlySa.body.service_account_email, SA.client_email);
  const both = await root.json('PATCH', `/api/identity/connections/${c.body.id}`, {
    delegated_admin_email: 'admin@example.test',
  });
  t.equal(both.body.has_group_sync, true);
  const badSa = await root.json('PATCH', `/api/identity/connections/${c.body.id}`, {
    service_account_json: '{"client_email":"x"}',
  });
  t.equal(badSa.body.error.code, 'ERR_IDP_SERVICE_ACCOUNT');
  const cleared = await root.json('PATCH', `/api/identity/connections/${c.body.id}`, { delegated_admin_email: null });
  t.equal(cleared.body.has_group_sync, false);

  const row = (await dbRow(
    app.database.sql,
    'SELECT client_secret_enc, service_account_enc FROM idp_connections',
  )) as Record<string, string>;
  t.notOk(JSON.stringify(row).includes('GOCSPX'), 'client secret encrypted');
  t.notOk(JSON.stringify(row).includes('PRIVATE KEY'), 'service account encrypted');
  const everything =
    JSON.stringify([c.body, onlySa.body, both.body, (await root.json('GET', '/api/identity/connections')).body]) +
    app.logs.text();
  t.notOk(everything.includes('GOCSPX'));
  t.notOk(everything.includes('PRIVATE KEY'));

  const providers = await app.client().json('GET', '/api/auth/sso-providers');
  t.same(
    providers.body.providers.map((p: { id: string }) => p.id),
    ['google'],
  );
  t.equal((await root.json('DELETE', `/api/identity/connections/${c.body.id}`)).status, 204);
  t.equal((await root.json('GET', `/api/identity/connections/${c.body.id}`)).status, 404);
});

t.test('IdP connections: a change and its action-log entry are written together or not at all', async (t) => {
  const app = await startTestApp(t);
  await addUser(app.database, 'root', 'root-password-123', { superuser: true });
  const root = app.client();
  await root.login('root', 'root-password-123');
  const rows = async () =>
    (await dbRows(app.database.sql, 'SELECT id, client_id FROM idp_connections ORDER BY id')) as {
      id: number;
      client_id: string;
    }[];
  const create = () =>
    root.json('POST', '/api/identity/connections', { issuer: 'https://accounts.google.com', client_id: 'cid-1' });

  await failActionLog(app.database, 'identity.connection.created');
  t.equal((await create()).status, 500, 'the entry cannot be written: the create fails');
  t.same(await rows(), [], 'no connection was created');
  await allowActionLog(app.database, 'identity.connection.created');
  const c = await create();
  t.equal(c.status, 201);

  await failActionLog(app.database, 'identity.connection.updated');
  t.equal((await root.json('PATCH', `/api/identity/connections/${c.body.id}`, { client_id: 'cid-2' })).status, 500);
  t.same(await rows(), [{ id: c.body.id, client_id: 'cid-1' }], 'the update was not kept');
  await allowActionLog(app.database, 'identity.connection.updated');

  await failActionLog(app.database, 'identity.connection.deleted');
  t.equal((await root.json('DELETE', `/api/identity/connections/${c.body.id}`)).status, 500);
  t.same(await rows(), [{ id: c.body.id, client_id: 'cid-1' }], 'the connection is still there');
  await allowActionLog(app.database, 'identity.connection.deleted');
  t.equal((await root.json('DELETE', `/api/identity/connections/${c.body.id}`)).status, 204);
  t.same(await rows(), []);
  const events = (
    await dbRows(app.database.sql, "SELECT event FROM action_log WHERE event LIKE 'identity.connection.%' ORDER BY id")
  ).map((r: { event: string }) => r.event);
  t.same(events, ['identity.connection.created', 'identity.connection.deleted'], 'one entry per change that happened');
});
