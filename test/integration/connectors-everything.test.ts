import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import { startServerEverything } from '../helpers/server-everything.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import { ToolHost } from '../../agent/mcp.js';

/**
 * The MCP reference server (`@modelcontextprotocol/server-everything`, Streamable HTTP) as a
 * connector: added through the registry (its tools listed and checked), then called by the
 * agent's own client through the in-sandbox proxy and the egress gateway. The container version
 * of this path is test/docker/connectors-e2e.test.ts. Runs on SQLite and PostgreSQL.
 */
t.test(`server-everything as a connector (${TEST_ENGINE})`, async (t) => {
  const ev = await startServerEverything();
  t.teardown(() => ev.close());
  const app = await startTestApp(t, { env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' } });
  const bob = await addUser(app.database, 'bob', 'password-123456');
  const svc = new ConnectorService({ db: app.database.sql, enc: atRestEncryptor(app.config), allowHttpLoopback: true });
  const added = await svc.create({ id: 'everything', label: 'Everything', url: ev.url }, null);
  const names = added.connector.tools.map((x) => x.name);
  t.ok(names.includes('echo'), `tools listed: ${names.join(', ')}`);
  t.ok(names.length >= 5);
  // Make every tool callable without an approval for this test.
  await svc.setToolModes('everything', Object.fromEntries(names.map((n) => [n, 'enabled' as const])));

  const rig = await startConnectorRig(t, app, bob.id);
  const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
  host.setRemote(rig.agent);
  t.teardown(() => host.close());
  await host.refresh();
  t.ok(host.defs().some((d) => d.name === 'everything__echo'));
  const r = await host.call(
    'everything__echo',
    { message: 'hello reference server' },
    new AbortController().signal,
    30_000,
    'call-ev',
  );
  t.match(r, { ok: true });
  t.match(r.text, /hello reference server/);
  t.match(rig.calls.at(-1), { connector: 'everything', tool: 'echo', status: 'ok', callId: 'call-ev' });
  const sum = await host.call('everything__get-sum', { a: 2, b: 40 }, new AbortController().signal, 30_000, 'call-sum');
  t.match(sum.text, /42/);
});
