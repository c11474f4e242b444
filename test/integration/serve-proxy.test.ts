import t from 'tap';
import { serve } from '../../daemon/serve.js';
import { createLogger } from '../../core/index.js';
import { addUser, logSink, serveEngineEnv, tempDir, testConfig } from '../helpers/app.js';

t.test('serve wires the account routes, token service, egress gateway and overlay preparer', async (t) => {
  const dir = tempDir(t);
  const config = testConfig(dir, { AIRLOCK_HOST: '127.0.0.1', ...(await serveEngineEnv(t)) });
  const logs = logSink();
  const d = await serve(config, { log: createLogger({ level: 'debug', destination: logs.stream }), runtime: false });
  t.teardown(() => d.close());
  const anon = await fetch(`${d.web.url}/api/account`);
  t.equal(anon.status, 401, 'account status needs a login');
  const user = await addUser(d.database, 'dave', 'pw-pw-pw-pw-pw');
  // No connected account, demo model: the session gets no provider routes and no tokens.
  const prep = await d.sessionPreparer.prepare({ userId: user.id, sessionId: 'sess-serve', proxyPort: 8700 });
  t.same(
    prep.routes.filter((r) => r.name !== 'host'),
    [],
  );
  t.same(prep.tokens, {});
  t.same(d.tokenService.tracked(), []);
});
