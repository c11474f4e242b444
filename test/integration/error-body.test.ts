import t from 'tap';
import { errorStatus } from '../../core/index.js';
import { startTestApp } from '../helpers/app.js';

t.test('the web app answers body errors with the catalogue code and status', async (t) => {
  const app = await startTestApp(t);
  const c = app.client();
  await c.fetchCsrf();
  const latin = await c.json('POST', '/api/auth/login', '{"username":"x","password":"y"}', {
    'content-type': 'application/json; charset=latin1',
  });
  t.equal(latin.status, 415, 'unsupported charset');
  t.same(latin.body, { error: { code: 'ERR_BODY_ENCODING', message: 'unsupported body encoding' } });
  t.equal(latin.status, errorStatus('ERR_BODY_ENCODING'));
  const enc = await c.json('POST', '/api/auth/login', 'xyz', {
    'content-type': 'application/json',
    'content-encoding': 'compress',
  });
  t.equal(enc.status, 415, 'unsupported content-encoding');
  t.equal(enc.body.error.code, 'ERR_HTTP_UNSUPPORTED_ENCODING', 'a compressed /api body is refused before parsing');
  const nf = await c.json('GET', '/api/no-such-route');
  t.equal(nf.status, errorStatus('ERR_NOT_FOUND'));
  t.equal(nf.body.error.code, 'ERR_NOT_FOUND');
});
