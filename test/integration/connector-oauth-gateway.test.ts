/**
 * OAuth per user through the whole connector path (docs/connectors.md): the tracker registered in
 * the real connector registry as an OAuth connector with its pre-registered client; the user
 * connects it through /api/connections (the registry is the lookup); the daemon's token service
 * is the egress gateway's ConnectorTokens; the agent's MCP client calls a tool through the
 * in-sandbox proxy and the gateway, which injects the user's token on the host. A user who has not
 * connected gets "Connect Acme Tickets". Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { registryLookup } from '../../domain/connector-oauth/registry.js';
import { connectorTokenService } from '../../daemon/host/connector-tokens.js';
import { ToolHost } from '../../agent/mcp.js';
import { startTickets } from '../../emulator/tickets.js';
import { CONNECTOR_CALLBACK_PATH } from '../../web/connector-oauth-routes.js';
import { startTestAppWithOrigin } from '../helpers/app.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  connect,
  signedIn,
  TRACKER_USERS,
  type OAuthRig,
} from '../helpers/connector-oauth.js';

t.test(
  'an OAuth connector of the registry: connect, then call through the gateway with the host-held token',
  async (t) => {
    const { app, origin } = await startTestAppWithOrigin(t, {
      env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' },
    });
    const tickets = await startTickets({
      users: TRACKER_USERS,
      clients: [
        { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [origin + CONNECTOR_CALLBACK_PATH] },
      ],
    });
    t.teardown(() => tickets.close());
    const enc = atRestEncryptor(app.config);
    const lookup = registryLookup(app.database.sql, enc);
    const tokens = connectorTokenService(app, enc, lookup);
    const registry = new ConnectorService({ db: app.database.sql, enc, allowHttpLoopback: true, tokens });
    await registry.create(
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
    const rig: OAuthRig = {
      app,
      origin,
      tickets,
      settings: (await lookup.get('tickets'))!,
      lookup,
      close: () => tickets.close(),
    };
    t.equal(rig.settings.clientId, CLIENT_ID, "the registry's pre-registered client");

    const alice = await signedIn(rig, 'alice');
    const bob = await signedIn(rig, 'bob');
    t.match(
      (await alice.client.json('GET', '/api/connections')).body,
      { connectors: [{ connector_id: 'tickets', label: 'Acme Tickets', connected: false }] },
      'listed from the registry',
    );
    await t.rejects(
      registry.refreshTools('tickets', alice.userId),
      { code: 'ERR_CONNECTOR_NOT_CONNECTED', message: /connect Acme Tickets with your own account first/ },
      'before she connected it: told to connect, not a discovery failure',
    );
    await t.rejects(
      registry.refreshTools('tickets', null),
      { code: 'ERR_CONNECTOR_NOT_CONNECTED' },
      'nor from the CLI',
    );
    t.equal((await connect(rig, alice.client, { username: 'alice', password: TRACKER_USERS.alice })).status, 302);

    // An OAuth connector's tools are listed with a connected user's token.
    const saved = await registry.refreshTools('tickets', alice.userId);
    t.same(saved.connector.tools.map((x) => x.name).sort(), ['create_ticket', 'list_tickets']);

    const hostFor = async (userId: number) => {
      // create_ticket writes, so it is an ask-tool: the user approves in the chat (here: always).
      const session = await startConnectorRig(t, app, userId, { tokens, approve: async () => ({ allow: true }) });
      const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
      host.setRemote(session.agent);
      t.teardown(() => host.close());
      await host.refresh();
      return {
        session,
        call: (name: string, input: Record<string, unknown>) =>
          host.call(name, input, new AbortController().signal, 30_000, 'call-1'),
      };
    };
    const a = await hostFor(alice.userId);
    const filed = await a.call('tickets__create_ticket', { title: 'Printer on fire' });
    t.match(filed, { ok: true, text: /Filed ticket #1: Printer on fire/ });
    t.equal(tickets.tickets[0].reporter, 'alice', "filed with alice's own grant, injected on the host");
    const grantToken = await tokens.accessToken('tickets', alice.userId);
    t.notOk(JSON.stringify(filed).includes(grantToken!), 'the token is not in the result');
    t.notOk(a.session.logs.text().includes(grantToken!), 'nor in the gateway logs');

    const b = await hostFor(bob.userId);
    const refused = await b.call('tickets__create_ticket', { title: 'x' });
    t.match(
      refused,
      { ok: false, text: /Connect Acme Tickets/ },
      'bob has not connected: the model is told to ask him to',
    );
    t.equal(tickets.tickets.length, 1, 'nothing reached the tracker for bob');
  },
);
