/**
 * Dynamic client registration for an OAuth connector (RFC 7591; docs/connectors.md, "OAuth per
 * user"): the authorization server (oidc-provider) takes no client ID metadata document from this
 * http origin and the admin set no client, so the first Connect registers Airlock there and keeps
 * that client as the connector's (its secret sealed in the registry). Two users connecting at once
 * end with one client; the kept client's secret serves the code grant and the refresh; the
 * secret is in no log and not in the clear in the database. When two registrations race, the one
 * not kept is deleted at the server again (RFC 7592). Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import type { OAuthConnectorLookup } from '../../core/connector-oauth.js';
import { registryLookup } from '../../domain/connector-oauth/registry.js';
import { ConnectorTokenStore } from '../../domain/connector-oauth/store.js';
import { ConnectorTokenService } from '../../daemon/host/connector-tokens.js';
import { startTickets } from '../../emulator/tickets.js';
import { CLIENT_METADATA_PATH, CONNECTOR_CALLBACK_PATH } from '../../web/connector-oauth-routes.js';
import { discover, obtainClient } from '../../domain/connector-oauth/client.js';
import { logSink, startTestAppWithOrigin } from '../helpers/app.js';
import { dbRows } from '../helpers/db.js';
import { authorizeInBrowser, callTracker, signedIn, TRACKER_USERS, type OAuthRig } from '../helpers/connector-oauth.js';

t.test(
  'no metadata document, no admin client: the first Connect registers one, every user and the refresh use it',
  async (t) => {
    // The registry is read through the app's database, which exists once the app runs.
    const late: { registry?: OAuthConnectorLookup } = {};
    const lookup: OAuthConnectorLookup = {
      get: (id) => late.registry!.get(id),
      forUser: (userId) => late.registry!.forUser(userId),
      mayUse: (id, userId) => late.registry!.mayUse!(id, userId),
      keepRegisteredClient: (id, client) => late.registry!.keepRegisteredClient!(id, client),
    };
    const { app, origin } = await startTestAppWithOrigin(t, { services: { oauthConnectors: lookup } });
    const enc = atRestEncryptor(app.config);
    const registry = (late.registry = registryLookup(app.database.sql, enc));
    const tickets = await startTickets({ users: TRACKER_USERS, dynamicRegistration: true, accessTokenTtlS: 90 });
    t.teardown(() => tickets.close());
    await app.database.sql
      .insertInto('connectors')
      .values({ id: 'tickets', label: 'Acme Tickets', url: tickets.url, auth_kind: 'oauth' })
      .execute();
    const rig: OAuthRig = {
      app,
      origin,
      tickets,
      settings: { id: 'tickets', label: 'Acme Tickets', url: tickets.url },
      lookup,
      close: () => tickets.close(),
    };
    const alice = await signedIn(rig, 'alice');
    const bob = await signedIn(rig, 'bob');

    // Both start at once: two registrations may race; the first kept is the one both use.
    const starts = await Promise.all(
      [alice, bob].map((u) => u.client.json('POST', '/api/connections/tickets/connect', { return_to: '/' })),
    );
    for (const s of starts) t.equal(s.status, 200, JSON.stringify(s.body));
    const [row] = await dbRows<{ oauth_client_id: string | null; oauth_client_secret_enc: string | null }>(
      app.database.sql,
      "SELECT oauth_client_id, oauth_client_secret_enc FROM connectors WHERE id = 'tickets'",
    );
    t.ok(row.oauth_client_id, 'the registered client is kept as the connector’s');
    t.ok(row.oauth_client_secret_enc, 'with its secret, sealed');
    const ids = starts.map((s) => new URL(s.body.authorization_url).searchParams.get('client_id'));
    t.same(ids, [row.oauth_client_id, row.oauth_client_id], 'both users’ authorization requests use the kept client');
    const secret = (await registry.get('tickets'))!.clientSecret!.reveal();
    t.not(row.oauth_client_secret_enc, secret, 'not in the clear');

    // Alice completes her connect (the code grant authenticates as the kept client).
    const callback = await authorizeInBrowser(starts[0].body.authorization_url, origin + CONNECTOR_CALLBACK_PATH, {
      username: 'alice',
      password: TRACKER_USERS.alice,
    });
    const back = await alice.client.request('GET', callback.slice(origin.length));
    t.equal(back.status, 302, 'the callback redirects back');
    t.same(tickets.auth.grants, ['authorization_code']);

    // The host's token service refreshes with the kept client too.
    const logs = logSink();
    const store = new ConnectorTokenStore(app.database.sql, enc);
    let skew = 0;
    const service = new ConnectorTokenService({
      store,
      connectors: lookup,
      db: app.database.sql,
      nodeId: 'node-a',
      log: createLogger({ level: 'debug', destination: logs.stream }),
      clock: () => Date.now() + skew,
    });
    const first = await service.accessToken('tickets', alice.userId);
    t.equal(
      (await callTracker(tickets.url, first!, 'create_ticket', { title: 'Registered' })).text,
      'Filed ticket #1: Registered',
    );
    skew = 40_000;
    const second = await service.accessToken('tickets', alice.userId);
    t.not(second, first, 'refreshed');
    t.same(tickets.auth.grants, ['authorization_code', 'refresh_token']);

    // A connector whose admin then sets a client keeps the admin's: registration never overwrites one.
    await app.database.sql
      .updateTable('connectors')
      .set({ oauth_client_id: 'admin-client', oauth_client_secret_enc: null })
      .where('id', '=', 'tickets')
      .execute();
    await registry.keepRegisteredClient!('tickets', {
      client_id: 'late-registration',
      client_secret: 'late-secret-0123456789',
    });
    t.equal(
      (await registry.get('tickets'))!.clientId,
      'admin-client',
      'a registration does not replace a client the connector has',
    );

    const text = app.logs.text() + logs.text();
    for (const s of [secret, first!, second!]) t.notOk(text.includes(s), 'no client secret or token in the logs');
    t.match(app.logs.text(), /"client":"registered"/, 'the connect logs that the client was registered');
  },
);

t.test('two registrations at once: the one not kept is deleted at the server again (RFC 7592)', async (t) => {
  const { app, origin } = await startTestAppWithOrigin(t);
  const registry = registryLookup(app.database.sql, atRestEncryptor(app.config));
  const tickets = await startTickets({ users: TRACKER_USERS, dynamicRegistration: true });
  t.teardown(() => tickets.close());
  await app.database.sql
    .insertInto('connectors')
    .values({ id: 'tickets', label: 'Acme Tickets', url: tickets.url, auth_kind: 'oauth' })
    .execute();
  const server = await discover(tickets.url);
  const settings = (await registry.get('tickets'))!;
  // Both register before either keeps its client (as two nodes may): the keep step waits for both.
  let arrived = 0;
  let release!: () => void;
  const both = new Promise<void>((r) => (release = r));
  const keep = async (client: { client_id: string; client_secret?: string }) => {
    if (++arrived === 2) release();
    await both;
    return registry.keepRegisteredClient!('tickets', client);
  };
  const redirectUri = origin + CONNECTOR_CALLBACK_PATH;
  const [a, b] = await Promise.all(
    [1, 2].map(() => obtainClient(server, settings, origin + CLIENT_METADATA_PATH, { redirectUri, keep })),
  );
  t.equal(a.client_id, b.client_id, 'both go on with the one kept client');
  t.equal(tickets.auth.registered.length, 2, 'two clients were registered');
  t.same(
    tickets.auth.deregistered,
    tickets.auth.registered.filter((id) => id !== a.client_id),
    'the one not kept was deleted at the server; the kept one was not',
  );
  t.equal((await registry.get('tickets'))!.clientId, a.client_id);
});
