/**
 * The daemon binds its port before it starts the sandbox runtime (a session's host route needs the
 * port: docs/architecture.md, "The port before the runtime"). Until the app is served on it, every
 * request answers 503 ERR_STARTING with Retry-After; then the same port serves the app.
 */
import t from 'tap';
import { join } from 'node:path';
import { atRestEncryptor, silentLogger } from '../../core/index.js';
import { openDatabase } from '../../domain/db/index.js';
import { DbSessionStore, openWebListener } from '../../web/index.js';
import { tempDir, testConfig, webOnlyServices } from '../helpers/app.js';

t.test('a bound port answers ERR_STARTING until the app is served, then the app', async (t) => {
  const dir = tempDir(t);
  const config = testConfig(dir);
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  t.teardown(() => database.close());
  const listener = await openWebListener({ config }, 0, '127.0.0.1');
  t.teardown(() => listener.close(100));
  t.ok(listener.port > 0, `bound on port ${listener.port}`);

  const early = await fetch(`${listener.url}/healthz`);
  t.equal(early.status, 503, 'a request before the app is served: 503');
  t.equal(early.headers.get('retry-after'), '1', 'with Retry-After: 1');
  t.same(await early.json(), {
    error: { code: 'ERR_STARTING', message: 'the server is starting; try again in a moment' },
  });
  const post = await fetch(`${listener.url}/api/auth/login`, { method: 'POST', body: '{}' });
  t.equal(post.status, 503, 'any method and path, the same answer');
  await post.body?.cancel();

  const encryptor = atRestEncryptor(config);
  const web = listener.serve({
    config,
    database,
    log: silentLogger(),
    sessions: new DbSessionStore(database.sql),
    encryptor,
    services: webOnlyServices(database, encryptor),
  });
  t.equal(web.port, listener.port, 'the app is served on the port bound before');
  const ready = await fetch(`${listener.url}/healthz`);
  t.equal(ready.status, 200, 'then the app answers');
  t.equal(((await ready.json()) as { ok: boolean }).ok, true);
  await web.close(100);
  await listener.close(100);
  await t.rejects(fetch(`${listener.url}/healthz`), 'closed once, by either handle');
});
