/**
 * Connectors in a real sandbox turn (docs/connectors.md): the MCP reference server
 * (`@modelcontextprotocol/server-everything`, Streamable HTTP), an SDK-built server with a
 * static bearer secret and the demo ticket tracker behind OAuth per user (the user connects it
 * through the web app: its authorization server's login and consent, the code grant on the
 * host), registered through the registry; a scripted model calls their tools from inside a
 * hardened container (agent → in-sandbox proxy → egress socket → the host's gateway → the
 * server, the user's access token added on the host); results stream to the chat; each call is
 * audited; the secret the server echoes is scrubbed, and root in the container finds neither
 * the secret nor the user's access token anywhere. The hostile table from inside the container
 * (the agent's user): no or a guessed placeholder, an unregistered connector, path games to
 * another connector, another method, a host outside; nothing forwarded.
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import { streamTurn } from '../helpers/chat.js';
import { dockerOrSkip, ensureTestImage, execIn } from './helpers.js';
import { chatRig, MODEL_KEY } from './chat-e2e-rig.js';
import { startServerEverything } from '../helpers/server-everything.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor } from '../../core/index.js';
import { dbRows } from '../helpers/db.js';
import { SANDBOX_PROXY_PORT } from '../../core/sandbox-profile.js';
import { authorizeInBrowser, CLIENT_ID, CLIENT_SECRET, TRACKER_USERS } from '../helpers/connector-oauth.js';
import { startTickets } from '../../emulator/tickets.js';
import { CONNECTOR_CALLBACK_PATH } from '../../web/connector-oauth-routes.js';
import { connectorTokenService } from '../../daemon/host/connector-tokens.js';
import { registryLookup } from '../../domain/connector-oauth/registry.js';

const SECRET = 'e2e-connector-secret-0123456789-QWERTY';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start } = chatRig(docker, image);

  t.test('a sandbox turn calls connector tools through the gateway', async (t) => {
    const ev = await startServerEverything();
    t.teardown(() => ev.close());
    const acme = await startMcpUpstream({ requireHeader: { name: 'authorization', value: `Bearer ${SECRET}` } });
    t.teardown(() => acme.close());
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        {
          kind: 'reply',
          text: 'Calling. ',
          tool_calls: [{ name: 'everything__echo', arguments: { message: 'hello from the sandbox' } }],
        },
        { kind: 'reply', tool_calls: [{ name: 'acme__whoami', arguments: {} }] },
        {
          kind: 'reply',
          tool_calls: [{ name: 'tickets__create_ticket', arguments: { title: 'Filed from the sandbox' } }],
        },
        { kind: 'reply', text: 'All done.' },
      ],
    });
    t.teardown(() => model.close());
    const { d, c, logs } = await start(t, {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-e2e',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true',
    });
    const svc = new ConnectorService({ db: d.database.sql, enc: atRestEncryptor(d.config), allowHttpLoopback: true });
    const added = await svc.create({ id: 'everything', label: 'Everything', url: ev.url }, null);
    await svc.setToolModes('everything', { echo: 'enabled' });
    t.ok(added.connector.tools.length >= 5);
    await svc.create({ id: 'acme', label: 'Acme', url: acme.url, auth_kind: 'bearer', auth_secret: SECRET }, null);

    // OAuth per user: the tracker with its authorization server, a client registered there for
    // this service's callback; alice connects it through the web app as a browser would.
    const callbackUrl = d.config.publicOrigin + CONNECTOR_CALLBACK_PATH;
    const tickets = await startTickets({
      users: TRACKER_USERS,
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [callbackUrl] }],
    });
    t.teardown(() => tickets.close());
    await svc.create(
      {
        id: 'tickets',
        label: 'Acme Tickets',
        url: tickets.url,
        auth_kind: 'oauth',
        oauth_client_id: CLIENT_ID,
        oauth_client_secret: CLIENT_SECRET,
      },
      null,
    );
    // Its tools as an admin's refresh (with the admin's own grant) would have listed them.
    await d.database.sql
      .updateTable('connectors')
      .set({
        tools: JSON.stringify([
          {
            name: 'create_ticket',
            description: 'File a ticket',
            input_schema: { type: 'object', properties: { title: { type: 'string' } } },
            mode: 'enabled',
          },
        ]),
      })
      .where('id', '=', 'tickets')
      .execute();
    const started = await c.json('POST', '/api/connections/tickets/connect', { return_to: '/' });
    t.equal(started.status, 200, JSON.stringify(started.body));
    const callback = await authorizeInBrowser(started.body.authorization_url, callbackUrl, {
      username: 'alice',
      password: TRACKER_USERS.alice,
    });
    t.equal((await c.request('GET', callback.slice(d.config.publicOrigin.length))).status, 302, 'connected');
    const aliceId = (
      await d.database.sql.selectFrom('users').select('id').where('username', '=', 'alice').executeTakeFirstOrThrow()
    ).id;
    const enc = atRestEncryptor(d.config);
    const accessToken = await connectorTokenService(d, enc, registryLookup(d.database.sql, enc)).accessToken(
      'tickets',
      aliceId,
    );

    const turn = await streamTurn(c, { message: 'use the connectors' });
    t.equal(turn.status, 200);
    const ends = turn.events.filter((e) => e.type === 'tool_end');
    t.same(
      ends.map((e) => [e.tool, e.ok]),
      [
        ['everything__echo', true],
        ['acme__whoami', true],
        ['tickets__create_ticket', true],
      ],
      JSON.stringify(ends).slice(0, 600),
    );
    t.match(
      JSON.stringify(ends[0].output),
      /hello from the sandbox/,
      'the reference server answered through the gateway',
    );
    t.notMatch(JSON.stringify(turn.events), SECRET, 'the echoed secret never reaches the chat');
    t.match(JSON.stringify(ends[1].output), /redacted/);
    t.equal(turn.events.at(-1).stop_reason, 'end_turn');
    t.match(
      JSON.stringify(ends[2].output),
      /"title":"Filed from the sandbox","body":"","reporter":"alice"/,
      "the tracker filed it under alice's own grant",
    );
    t.ok(
      acme.requests.some((r) => r.auth === `Bearer ${SECRET}`),
      'the secret was injected on the host',
    );

    // Audited: the proxy's rows for the connector routes, and the gateway's call records.
    const sessionId = turn.events.at(-1).session_id;
    const rows = await dbRows(
      d.database.sql,
      'SELECT route, outcome FROM proxy_requests WHERE session_id = ?',
      sessionId,
    );
    t.ok(
      rows.some((r) => r.route === 'connector:everything' && r.outcome === 'forwarded'),
      'proxy_requests has the connector calls',
    );
    t.match(logs.text(), /"connector":"everything","tool":"echo","status":"ok"/);

    // Root in the sandbox finds the connector secret nowhere (profile, run folder, every process's env and argv).
    const [sb] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
    // The secret goes in through the exec's env; the scanning shell skips itself (its env holds it) and
    // each grep reads other processes' files only (its own argv holds the pattern).
    const script =
      'grep -rlsF -e "$S" /run/airlock /workspace; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do p=${f#/proc/}; p=${p%%/*}; [ "$p" = "$$" ] && continue; grep -qsF -e "$S" "$f" && echo "$f"; done; echo scanned';
    const scan = await execIn(docker, sb.containerId!, ['sh', '-c', script], { user: 'root', env: [`S=${SECRET}`] });
    t.equal(scan.stdout.trim(), 'scanned', 'no file holds the secret');
    t.notMatch(logs.text(), SECRET, 'no log line holds the secret');
    // The hostile table from inside the sandbox, as the agent's user (1001). The connector
    // placeholder lives only in the agent's memory (it comes with the session's settings, not in
    // any environment), so code in the sandbox guesses; each try is refused and nothing forwarded.
    const acmeSeen = acme.requests.length;
    const hostile = `
      const proxy = 'http://127.0.0.1:${SANDBOX_PROXY_PORT}';
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
      const cases = [
        ['no placeholder', proxy + '/connectors/acme', 'POST', null],
        ['a guessed placeholder', proxy + '/connectors/acme', 'POST', 'guess-0123456789'],
        ['an unregistered connector', proxy + '/connectors/nope', 'POST', 'guess-0123456789'],
        ['a path game to another connector', proxy + '/connectors/acme/../everything', 'POST', 'guess-0123456789'],
        ['an encoded path game', proxy + '/connectors/acme%2F..%2Feverything', 'POST', 'guess-0123456789'],
        ['another method', proxy + '/connectors/acme', 'PUT', 'guess-0123456789'],
        ['a host outside', 'http://93.184.216.34/connectors/acme', 'POST', 'guess-0123456789'],
      ];
      (async () => {
        const out = [];
        for (const [what, url, method, auth] of cases) {
          const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(auth ? { authorization: 'Bearer ' + auth } : {}) };
          try {
            const r = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(5000) });
            out.push([what, r.status]);
          } catch {
            out.push([what, 'no connection']);
          }
        }
        console.log(JSON.stringify(out));
      })();`;
    const table = await execIn(docker, sb.containerId!, ['node', '-e', hostile], { user: '1001' });
    const answered = JSON.parse(table.stdout.trim() || '[]') as [string, number | string][];
    t.equal(answered.length, 7, table.stderr.slice(0, 400));
    for (const [what, status] of answered)
      t.ok(
        status === 'no connection' || (typeof status === 'number' && status >= 400 && status < 500),
        `from inside the sandbox, refused: ${what} (${status})`,
      );
    t.equal(answered.at(-1)?.[1], 'no connection', 'no network but the proxy');
    t.equal(acme.requests.length, acmeSeen, 'nothing of the hostile table reached a connector server');

    t.ok(accessToken && accessToken.length > 10, "alice's access token is on the host");
    const tokenScan = await execIn(docker, sb.containerId!, ['sh', '-c', script], {
      user: 'root',
      env: [`S=${accessToken}`],
    });
    t.equal(tokenScan.stdout.trim(), 'scanned', "no file or process in the sandbox holds alice's access token");
    t.notOk(logs.text().includes(accessToken!), 'no log line holds it');
  });
}
