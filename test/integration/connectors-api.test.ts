import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE, dbRows } from '../helpers/db.js';
import { startGarbageServer, startMcpUpstream } from '../helpers/mcp-upstream.js';

/**
 * The connector registry over HTTP (docs/connectors.md): superuser only; a server added by URL
 * has its tools listed from it with the official MCP client (Streamable HTTP, else HTTP+SSE);
 * bad URLs, auth settings, servers and tool lists get clear codes and save nothing; the static
 * secret is stored encrypted and never shown or logged; tool modes; refresh keeps modes.
 * Runs on SQLite and PostgreSQL.
 */
const PW = 'password-123456';
const SECRET = 'conn-secret-0123456789abcdef-XYZ';

t.test(`connectors: admin API, discovery, bad input (${TEST_ENGINE})`, async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' } });
  await addUser(app.database, 'root', PW, { superuser: true });
  await addUser(app.database, 'bob', PW);
  const admin = app.client();
  t.equal((await admin.login('root', PW)).status, 200);
  const bob = app.client();
  t.equal((await bob.login('bob', PW)).status, 200);
  const up = await startMcpUpstream({ requireHeader: { name: 'x-api-key', value: SECRET } });
  t.teardown(() => up.close());
  const rows = () => dbRows(app.database.sql, 'SELECT id, tools, auth_secret_enc FROM connectors ORDER BY id');

  t.equal((await bob.json('GET', '/api/admin/connectors')).status, 403, 'a plain user is refused');
  t.equal((await bob.json('POST', '/api/admin/connectors', { id: 'acme', label: 'Acme', url: up.url })).status, 403);

  // Bad input: each with its code, nothing saved.
  const base = {
    id: 'acme',
    label: 'Acme Tickets',
    url: up.url,
    auth_kind: 'header',
    auth_header_name: 'X-Api-Key',
    auth_secret: SECRET,
  };
  const bad: [Record<string, unknown>, number, string][] = [
    [{ ...base, id: 'Acme' }, 400, 'ERR_VALIDATION'],
    [{ ...base, id: 'ac__me' }, 400, 'ERR_VALIDATION'],
    [{ ...base, url: 'http://example.com/mcp' }, 400, 'ERR_CONNECTOR_URL'],
    [{ ...base, url: up.url.replace('http://', `http://u:${SECRET}@`) }, 400, 'ERR_CONNECTOR_URL'],
    [{ ...base, url: 'ftp://127.0.0.1/mcp' }, 400, 'ERR_CONNECTOR_URL'],
    [{ ...base, url: 'not a url' }, 400, 'ERR_CONNECTOR_URL'],
    [{ ...base, auth_header_name: null }, 400, 'ERR_CONNECTOR_AUTH'],
    [{ ...base, auth_header_name: 'Host' }, 400, 'ERR_CONNECTOR_AUTH'],
    [{ ...base, auth_secret: null }, 400, 'ERR_CONNECTOR_AUTH'],
    [{ ...base, auth_secret: 'wrong-secret' }, 502, 'ERR_CONNECTOR_DISCOVERY'],
    [{ ...base, colour: 'red' }, 400, 'ERR_VALIDATION'],
  ];
  for (const [b, status, code] of bad) {
    const r = await admin.json('POST', '/api/admin/connectors', b);
    t.equal(r.status, status, `refused ${JSON.stringify(b).slice(0, 90)}`);
    t.equal(r.body.error?.code, code);
    t.notMatch(JSON.stringify(r.body), SECRET, 'no secret in the answer');
  }
  t.same(await rows(), [], 'nothing saved');

  // A server that answers garbage, HTML, or a redirect: ERR_CONNECTOR_DISCOVERY, nothing saved.
  for (const [body, status, type] of [
    ['{"jsonrpc":"2.0","id":0,"result":{"nonsense":true}}', 200, 'application/json'],
    ['<html>hello</html>', 200, 'text/html'],
    ['not json', 500, 'text/plain'],
  ] as const) {
    const g = await startGarbageServer(body, status, type);
    const r = await admin.json('POST', '/api/admin/connectors', { ...base, url: g.url });
    await g.close();
    t.equal(r.status, 502, `garbage ${body.slice(0, 20)}`);
    t.equal(r.body.error.code, 'ERR_CONNECTOR_DISCOVERY');
  }
  t.same(await rows(), []);

  // The real thing: tools listed, modes from the server's read-only hints, secret encrypted.
  const ok = await admin.json('POST', '/api/admin/connectors', base);
  t.equal(ok.status, 201, JSON.stringify(ok.body).slice(0, 300));
  t.equal(ok.body.connector.has_secret, true);
  t.equal(ok.body.connector.transport, 'streamable_http');
  const modes = Object.fromEntries(
    ok.body.connector.tools.map((x: { name: string; mode: string }) => [x.name, x.mode]),
  );
  t.same(modes, { echo: 'enabled', create_ticket: 'ask', whoami: 'enabled', big: 'enabled', slow: 'enabled' });
  t.match(ok.body.connector.tools.find((x: { name: string }) => x.name === 'echo').input_schema, {
    type: 'object',
    properties: { message: { type: 'string' } },
  });
  const [row] = await rows();
  t.notMatch(row.auth_secret_enc, SECRET, 'the secret is encrypted at rest');
  t.ok(row.auth_secret_enc.length > 20);
  t.equal((await admin.json('POST', '/api/admin/connectors', base)).body.error.code, 'ERR_CONNECTOR_EXISTS');

  // Tool modes; an unknown tool refuses the whole change.
  t.equal(
    (await admin.json('PATCH', '/api/admin/connectors/acme/tools', { modes: { echo: 'disabled', nope: 'enabled' } }))
      .body.error.code,
    'ERR_CONNECTOR_TOOL_NOT_FOUND',
  );
  const m = await admin.json('PATCH', '/api/admin/connectors/acme/tools', {
    modes: { echo: 'disabled', create_ticket: 'enabled' },
  });
  t.equal(m.status, 200);
  // Refresh keeps the admin's modes.
  const rf = await admin.json('POST', '/api/admin/connectors/acme/refresh');
  t.equal(rf.status, 200);
  t.match(Object.fromEntries(rf.body.connector.tools.map((x: { name: string; mode: string }) => [x.name, x.mode])), {
    echo: 'disabled',
    create_ticket: 'enabled',
  });

  // Update: a wrong kind is refused whole; the secret absent is kept.
  t.equal(
    (await admin.json('PATCH', '/api/admin/connectors/acme', { auth_kind: 'bearer', auth_secret: null })).body.error
      .code,
    'ERR_CONNECTOR_AUTH',
  );
  const u = await admin.json('PATCH', '/api/admin/connectors/acme', { label: 'Acme', enabled: false });
  t.match(u.body, { label: 'Acme', enabled: false, has_secret: true });

  // HTTP+SSE: a server that speaks only the older transport is found by the fallback.
  const old = await startMcpUpstream({ transport: 'sse' });
  t.teardown(() => old.close());
  const o = await admin.json('POST', '/api/admin/connectors', { id: 'legacy', label: 'Legacy', url: old.url });
  t.equal(o.status, 201, JSON.stringify(o.body).slice(0, 300));
  t.equal(o.body.connector.transport, 'sse');
  t.ok(o.body.connector.tools.length >= 5);

  // Tool lists: bad names and schemas are left out with a reason; duplicates and too many refuse it all.
  const obj = { type: 'object', properties: {} };
  const raw = await startMcpUpstream({
    rawTools: [
      { name: 'good', inputSchema: obj },
      { name: 'bad name!', inputSchema: obj },
      { name: 'a__b', inputSchema: obj },
      { name: 'send_email', inputSchema: obj },
      {
        name: 'huge',
        inputSchema: {
          type: 'object',
          properties: Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`p${i}`, { type: 'string' }])),
        },
      },
      { name: 'broken', inputSchema: { type: 'object', properties: { x: { type: 'nonsense' } } } },
    ],
  });
  const rr = await admin.json('POST', '/api/admin/connectors', { id: 'raw', label: 'Raw', url: raw.url });
  await raw.close();
  t.equal(rr.status, 201);
  t.same(
    rr.body.connector.tools.map((x: { name: string }) => x.name).sort(),
    ['good', 'send_email'],
    'send_email is fine: it becomes raw__send_email',
  );
  t.same(rr.body.skipped.map((x: { name: string }) => x.name).sort(), ['a__b', 'bad name!', 'broken', 'huge']);
  for (const [tools, what] of [
    [
      [
        { name: 'x', inputSchema: obj },
        { name: 'x', inputSchema: obj },
      ],
      'duplicate',
    ],
    [Array.from({ length: 129 }, (_, i) => ({ name: `t${i}`, inputSchema: obj })), 'too many'],
  ] as const) {
    const s = await startMcpUpstream({ rawTools: [...tools] });
    const r = await admin.json('POST', '/api/admin/connectors', { id: 'dup', label: 'Dup', url: s.url });
    await s.close();
    t.equal(r.body.error?.code, 'ERR_CONNECTOR_TOOLS_INVALID', what);
  }
  t.same(
    (await rows()).map((r) => r.id),
    ['acme', 'legacy', 'raw'],
  );

  // Delete; the action log never holds the secret; neither do the logs.
  t.equal((await admin.json('DELETE', '/api/admin/connectors/raw')).status, 204);
  t.equal((await admin.json('DELETE', '/api/admin/connectors/raw')).body.error.code, 'ERR_CONNECTOR_NOT_FOUND');
  const log = await dbRows(
    app.database.sql,
    "SELECT event, data FROM action_log WHERE event LIKE 'connector.%' ORDER BY id",
  );
  t.ok(log.length >= 6);
  t.notMatch(JSON.stringify(log), SECRET);
  t.notMatch(app.logs.text(), SECRET);
  t.ok(
    up.requests.some((r) => r.auth === SECRET),
    'the server got the secret in its header',
  );
});
