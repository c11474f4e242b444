/**
 * Integers in query strings are read strictly (web/query-params.ts): digits only, no leading
 * zero, within range; a parameter given twice or written as an array or object (`?user_id[]=2`)
 * is refused with 400, never ignored or read as another value. Real app, real HTTP.
 */
import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

t.test(`${TEST_ENGINE}: strict integers and no arrays in query strings`, async (t) => {
  const app = await startTestApp(t);
  const admin = await addUser(app.database, 'root', 'root-password-0123', { superuser: true });
  const alice = await addUser(app.database, 'alice', 'alice-password-0123');
  const user = app.client();
  t.equal((await user.login('alice', 'alice-password-0123')).status, 200);
  const su = app.client();
  t.equal((await su.login('root', 'root-password-0123')).status, 200);

  const own = await user.json('GET', `/api/identity/agent-policy?user_id=${alice.id}`);
  t.equal(own.status, 200, 'one strictly written id: answered');
  t.equal(
    (await user.json('GET', `/api/identity/agent-policy?user_id=${admin.id}`)).status,
    403,
    "another user's id: 403",
  );
  const refused: [string, string, string][] = [
    ['an array', `/api/identity/agent-policy?user_id[]=${admin.id}`, 'ERR_VALIDATION'],
    ['an object', `/api/identity/agent-policy?user_id[a]=${admin.id}`, 'ERR_VALIDATION'],
    ['an array of our own id', `/api/identity/agent-policy?user_id[]=${alice.id}`, 'ERR_VALIDATION'],
    ['twice', `/api/identity/agent-policy?user_id=${alice.id}&user_id=${alice.id}`, 'ERR_VALIDATION'],
    ['a leading zero', `/api/identity/agent-policy?user_id=0${alice.id}`, 'ERR_VALIDATION'],
    ['a sign', `/api/identity/agent-policy?user_id=%2B${alice.id}`, 'ERR_VALIDATION'],
    ['an exponent', '/api/identity/agent-policy?user_id=1e0', 'ERR_VALIDATION'],
    ['spaces', `/api/identity/agent-policy?user_id=%20${alice.id}`, 'ERR_VALIDATION'],
    ['empty', '/api/identity/agent-policy?user_id=', 'ERR_VALIDATION'],
    ['zero', '/api/identity/agent-policy?user_id=0', 'ERR_VALIDATION'],
  ];
  for (const [what, path, code] of refused) {
    const r = await user.json<{ error?: { code: string } }>('GET', path);
    t.equal(r.status, 400, `agent policy, user_id ${what}: 400`);
    t.equal(r.body.error?.code, code, `agent policy, user_id ${what}: ${code}`);
  }

  const admin400: [string, string][] = [
    ['/api/admin/users?limit=010', 'ERR_VALIDATION'],
    ['/api/admin/users?limit=0x10', 'ERR_VALIDATION'],
    ['/api/admin/users?offset=1&offset=2', 'ERR_VALIDATION'],
    ['/api/admin/users?limit[]=5', 'ERR_VALIDATION'],
    ['/api/data-authorization/audit?limit=007', 'ERR_DATA_INVALID'],
    ['/api/data-authorization/audit?subject_id=1.0', 'ERR_DATA_INVALID'],
    ['/api/data-authorization/audit?actor_id[]=1', 'ERR_VALIDATION'],
    ['/api/data-authorization/assignments?user_id=99999999999999999', 'ERR_DATA_INVALID'],
  ];
  for (const [path, code] of admin400) {
    const r = await su.json<{ error?: { code: string } }>('GET', path);
    t.equal(r.status, 400, `${path}: 400`);
    t.equal(r.body.error?.code, code, `${path}: ${code}`);
  }
  t.equal((await su.json('GET', '/api/admin/users?limit=10&offset=0')).status, 200, 'well-written integers: answered');
  t.equal((await su.json('GET', '/api/data-authorization/audit?limit=5')).status, 200);
});
