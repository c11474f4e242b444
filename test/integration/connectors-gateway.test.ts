import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import { rawExchange, rawRequest } from '../helpers/proxy-rig.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import { ToolHost } from '../../agent/mcp.js';

/**
 * The sandbox path of connectors without a container (docs/connectors.md "What the sandbox
 * sees"): the agent's own MCP client → the in-sandbox proxy → the egress gateway's connector side
 * → a real MCP server (official SDK). Tools listed from the registry, called with the credential
 * injected on the host and scrubbed from the answer, cut past the size limit, refused when
 * disabled (next turn), outside the audience or denied by policy, "connect first" for OAuth,
 * approval of ask-tools with the exact arguments, and a hostile table at both walls.
 * Runs on SQLite and PostgreSQL.
 */
const PW = 'password-123456';
const SECRET = 'conn-secret-0123456789abcdef-GATEWAY';

t.test(`connector gateway end to end (${TEST_ENGINE})`, async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' } });
  const bob = await addUser(app.database, 'bob', PW);
  const eve = await addUser(app.database, 'eve', PW);
  const up = await startMcpUpstream({ requireHeader: { name: 'authorization', value: `Bearer ${SECRET}` } });
  t.teardown(() => up.close());
  const oauthUp = await startMcpUpstream();
  t.teardown(() => oauthUp.close());
  const svc = new ConnectorService({ db: app.database.sql, enc: atRestEncryptor(app.config), allowHttpLoopback: true });
  await svc.create(
    {
      id: 'acme',
      label: 'Acme Tickets',
      url: up.url,
      auth_kind: 'bearer',
      auth_secret: SECRET,
      audience: { kind: 'users', user_ids: [bob.id] },
    },
    null,
  );
  await svc.create({ id: 'wiki', label: 'Wiki', url: oauthUp.url, auth_kind: 'oauth' }, null);
  // OAuth tools cannot be listed without a token: give it the server's list by hand (a refresh by a connected admin does this).
  await app.database.sql
    .updateTable('connectors')
    .set({
      tools: JSON.stringify([
        {
          name: 'echo',
          description: 'Echo',
          input_schema: { type: 'object', properties: { message: { type: 'string' } } },
          mode: 'enabled',
        },
      ]),
    })
    .where('id', '=', 'wiki')
    .execute();

  const approvals: unknown[] = [];
  let answer = true;
  const rig = await startConnectorRig(t, app, bob.id, {
    approve: async (a) => {
      approvals.push(a);
      return { allow: answer };
    },
  });
  const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
  host.setRemote(rig.agent);
  t.teardown(() => host.close());
  const call = (name: string, input: Record<string, unknown>) =>
    host.call(name, input, new AbortController().signal, 30_000, 'call-1');

  // tools/list comes from the registry, prefixed.
  await host.refresh();
  const names = host.defs().map((d) => d.name);
  t.same(names.sort(), ['acme__big', 'acme__create_ticket', 'acme__echo', 'acme__slow', 'acme__whoami', 'wiki__echo']);
  t.match(host.defs().find((d) => d.name === 'acme__echo')!.inputSchema, {
    type: 'object',
    properties: { message: { type: 'string' } },
  });

  // A call, with the secret injected on the host.
  const echo = await call('acme__echo', { message: 'hello' });
  t.match(echo, { ok: true, text: 'echo: hello' });
  t.same(up.calls.at(-1), { name: 'echo', args: { message: 'hello' } });
  t.match(
    rig.calls.at(-1),
    { connector: 'acme', tool: 'echo', status: 'ok', callId: 'call-1' },
    "the model's call id travels in _meta",
  );

  // The server echoes the credential: scrubbed before the sandbox sees it.
  const who = await call('acme__whoami', {});
  t.ok(who.ok);
  t.notMatch(who.text, SECRET, 'no secret in the result');
  t.match(who.text, '[airlock:redacted]');

  // A big result is cut with a marker.
  const big = await call('acme__big', { kib: 200 });
  t.ok(big.ok);
  t.match(big.text, /result cut at 65536 bytes; it was 204800 bytes/);
  t.ok(big.text.length < 70_000);

  // Ask: the approver gets the exact arguments; refused → the model is told; nothing reaches the server.
  const before = up.calls.length;
  answer = false;
  const denied = await call('acme__create_ticket', { title: 'Printer on fire', priority: 'high' });
  t.match(denied, { ok: false });
  t.match(denied.text, /did not approve/);
  t.equal(up.calls.length, before, 'a denied call is not forwarded');
  t.match(approvals.at(-1), {
    userId: bob.id,
    connector: { id: 'acme', label: 'Acme Tickets' },
    tool: 'create_ticket',
    arguments: { title: 'Printer on fire', priority: 'high' },
  });
  answer = true;
  t.match(await call('acme__create_ticket', { title: 'Printer on fire' }), {
    ok: true,
    text: 'ticket filed: Printer on fire',
  });

  // OAuth without a connection: the model is told to ask the user to connect, with the connector named.
  const nc = await call('wiki__echo', { message: 'x' });
  t.match(nc, { ok: false });
  t.match(nc.text, /Connect Wiki/);
  t.equal(oauthUp.calls.length, 0);

  // Disabling a tool, then the connector: gone at the next refresh (the next turn), refused at once.
  await svc.setToolModes('acme', { echo: 'disabled' });
  t.match((await call('acme__echo', { message: 'again' })).text, /not available/);
  await host.refresh();
  t.notOk(host.defs().some((d) => d.name === 'acme__echo'));
  await svc.update('acme', { enabled: false });
  await host.refresh();
  t.same(
    host.defs().map((d) => d.name),
    ['wiki__echo'],
  );
  await svc.update('acme', { enabled: true });
  await host.refresh();
  t.ok(host.defs().some((d) => d.name === 'acme__whoami'));

  // A user outside the audience gets no route, and a forged call through bob's gateway is refused by name for eve's session only.
  const eveRig = await startConnectorRig(t, app, eve.id);
  t.same(
    Object.keys(eveRig.env).filter((k) => k.includes('ACME')),
    [],
    "eve's session has no acme route",
  );

  // Agent policy: acme__* denied for bob → listed nothing, calls refused.
  const org = await app.database.sql
    .insertInto('organisations')
    .values({ name: 'Org' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await app.database.sql
    .insertInto('organisation_members')
    .values({ organisation_id: org.id, user_id: bob.id })
    .execute();
  await app.database.sql
    .insertInto('agent_policies')
    .values({
      organisation_id: org.id,
      name: 'no acme',
      applies_to: 'all',
      allowed_tools: null,
      allowed_models: null,
      denied_tools: '["acme__*"]',
      mail_other: null,
      mail_max_recipients: null,
      mail_max_per_hour: null,
    })
    .execute();
  await host.refresh();
  t.same(
    host.defs().map((d) => d.name),
    ['wiki__echo'],
    'policy denies the connector',
  );
  t.match((await call('acme__whoami', {})).text, /no tool named acme__whoami/, 'the agent no longer has it');
  // A child that calls it anyway, by hand through the proxy: refused on the host.
  const forged = await fetch(`http://127.0.0.1:${rig.proxy.port}/connectors/acme`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${rig.placeholder}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  });
  const fj = (await forged.json()) as { result: { isError: boolean; _meta: { error_code: string } } };
  t.match(fj.result, { isError: true, _meta: { error_code: 'ERR_CONNECTOR_DENIED' } });

  // Hostile table, first wall (the proxy) and second wall (the gateway's socket).
  const port = rig.proxy.port;
  const body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
  const req = (method: string, path: string, auth: string, b = body) =>
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\nConnection: close\r\n\r\n${b}`;
  const cases: [string, string, string, number][] = [
    ['wrong placeholder', '/connectors/acme', 'not-the-placeholder', 403],
    ["eve's placeholder", '/connectors/acme', eveRig.placeholder, 403],
    ['unregistered connector', '/connectors/nope', rig.placeholder, 403],
    ['path game', '/connectors/acme/../wiki', rig.placeholder, 403],
    ['encoded path', '/connectors/acme%2F..%2Fwiki', rig.placeholder, 403],
    ['sub-path', '/connectors/acme/extra', rig.placeholder, 403],
    ['absolute form', `http://127.0.0.1:${up.url.split(':')[2]}`, rig.placeholder, 400],
  ];
  const seenBefore = up.requests.length;
  for (const [what, path, auth, status] of cases) {
    const r = await rawRequest(port, req('POST', path, auth));
    t.ok(r.status >= 400 && r.status < 500, `proxy refuses: ${what} (${r.status})`);
    void status;
    const g = await rawExchange({ path: rig.socketPath }, req('POST', path, auth));
    t.ok(g.status >= 400 && g.status < 500, `gateway refuses: ${what} (${g.status})`);
  }
  // Methods: PUT is refused; GET is answered 405 by the gateway (no stream), never forwarded.
  t.equal((await rawRequest(port, req('PUT', '/connectors/acme', rig.placeholder))).status, 403);
  t.equal(
    (
      await rawExchange(
        { path: rig.socketPath },
        `GET /connectors/acme HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rig.placeholder}\r\nConnection: close\r\n\r\n`,
      )
    ).status,
    405,
  );
  // An oversized body is refused before anything is forwarded.
  const huge = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"${'x'.repeat(70 * 1024 * 1024)}"}}}`;
  const o = await rawExchange({ path: rig.socketPath }, req('POST', '/connectors/acme', rig.placeholder, huge), 20_000);
  t.equal(o.status, 413, 'oversized body refused');
  t.equal(up.requests.length, seenBefore, 'nothing of the hostile table reached the server');
  // Garbage JSON-RPC.
  t.equal(
    (await rawExchange({ path: rig.socketPath }, req('POST', '/connectors/acme', rig.placeholder, 'not json'))).status,
    400,
  );

  // No secret in any log, audit record or proxy decision.
  t.notMatch(rig.logs.text(), SECRET);
  t.notMatch(JSON.stringify(rig.calls), SECRET);
  t.notMatch(JSON.stringify(rig.decisions), SECRET);
  t.ok(
    rig.decisions.some((d) => d.route === 'connector:acme' && d.outcome === 'forwarded'),
    'the proxy recorded connector calls',
  );
});
