/**
 * OAuth per user for connectors (docs/connectors.md, "OAuth per user"), end to end against a real
 * authorization server (oidc-provider) in front of an MCP server built with the official SDK's
 * auth helpers (emulator/tickets.ts): connect through the login and consent forms, call a tool
 * with the token the host holds, refresh before expiry, disconnect (revoked at the server and
 * deleted); a second user without a connection gets null ("connect first"). No token, code or
 * client secret reaches a log or the database in the clear. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { createLogger } from '../../core/index.js';
import { ConnectorTokenStore } from '../../domain/connector-oauth/store.js';
import { ConnectorTokenService } from '../../daemon/host/connector-tokens.js';
import { atRestEncryptor } from '../../core/crypto.js';
import { logSink } from '../helpers/app.js';
import { dbRows } from '../helpers/db.js';
import {
  callTracker,
  CLIENT_SECRET,
  connect,
  signedIn,
  startOAuthRig,
  trackerStatus,
  TRACKER_USERS,
} from '../helpers/connector-oauth.js';

t.test('connect, call, refresh, disconnect; a user without a connection gets null', async (t) => {
  const rig = await startOAuthRig(t, { accessTokenTtlS: 90 });
  const { app, tickets } = rig;
  const alice = await signedIn(rig, 'alice');
  const bob = await signedIn(rig, 'bob');

  const list = await alice.client.json('GET', '/api/connections');
  t.same(
    list.body,
    { connectors: [{ connector_id: 'tickets', label: 'Acme Tickets', connected: false }] },
    'Settings lists the connector, not connected',
  );

  // The authorization request: code + PKCE S256 + the resource indicator, the pre-registered
  // client (the authorization server takes metadata documents, but only from an https origin).
  const start = await alice.client.json('POST', '/api/connections/tickets/connect', { return_to: '/#/chat/c1' });
  t.equal(start.status, 200);
  const authUrl = new URL(start.body.authorization_url);
  t.equal(authUrl.origin, tickets.auth.url, 'to the authorization server the protected-resource metadata names');
  t.equal(authUrl.searchParams.get('resource'), tickets.url, 'resource indicator (RFC 8707)');
  t.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
  t.equal(authUrl.searchParams.get('client_id'), 'airlock-tickets');
  t.equal(authUrl.searchParams.get('redirect_uri'), `${rig.origin}/api/connections/callback`);

  const back = await connect(rig, alice.client, { username: 'alice', password: TRACKER_USERS.alice });
  t.equal(back.status, 302, 'the callback redirects back');
  t.equal(back.headers.get('location'), '/?connected=tickets#/chat/c1', 'to the chat the user came from');
  t.same(tickets.auth.grants, ['authorization_code'], 'one code grant');

  const status = await alice.client.json('GET', '/api/connections/tickets');
  t.match(status.body, { connector_id: 'tickets', connected: true, offline: true });
  t.notOk(JSON.stringify(status.body).match(/token"/), 'the status holds no token');

  // The host's token service (the gateway's ConnectorTokens) gives the token; the tool works with it.
  const logs = logSink();
  const log = createLogger({ level: 'debug', destination: logs.stream });
  const store = new ConnectorTokenStore(app.database.sql, atRestEncryptor(app.config));
  let skew = 0;
  const service = new ConnectorTokenService({
    store,
    connectors: rig.lookup,
    db: app.database.sql,
    nodeId: 'node-a',
    log,
    clock: () => Date.now() + skew,
  });
  const first = await service.accessToken('tickets', alice.userId);
  t.ok(first, 'alice has a token');
  const filed = await callTracker(tickets.url, first!, 'create_ticket', { title: 'Printer on fire' });
  t.equal(filed.text, 'Filed ticket #1: Printer on fire');
  t.equal(tickets.tickets[0].reporter, 'alice', 'filed as the user who connected');
  t.equal(service.refreshCount, 0, 'a fresh token is not refreshed');

  t.equal(
    await service.accessToken('tickets', bob.userId),
    null,
    'bob has not connected: null (the gateway asks the model to have him connect)',
  );
  t.match((await bob.client.json('GET', '/api/connections')).body, {
    connectors: [{ connector_id: 'tickets', connected: false }],
  });

  // 90 s tokens: 40 s later fewer than 60 s remain, so the next use refreshes (once).
  skew = 40_000;
  const [second, again] = await Promise.all([
    service.accessToken('tickets', alice.userId),
    service.accessToken('tickets', alice.userId),
  ]);
  t.not(second, first, 'a new access token');
  t.equal(again, second, 'concurrent callers share the refresh');
  t.equal(service.refreshCount, 1);
  t.same(tickets.auth.grants, ['authorization_code', 'refresh_token']);
  t.match((await callTracker(tickets.url, second!, 'list_tickets', {})).text, /#1 Printer on fire \(by alice\)/);
  t.equal(await service.accessToken('tickets', alice.userId), second, 'the refreshed token is cached');

  // Stored sealed: neither token nor the refresh token is in the row.
  const rows = await dbRows(app.database.sql, 'SELECT * FROM connector_tokens');
  t.equal(rows.length, 1);
  const grant = await store.grant('tickets', alice.userId);
  for (const secret of [first!, second!, grant!.refreshToken!])
    t.notOk(JSON.stringify(rows).includes(secret), 'no token in the clear in the database');

  // Disconnect: revoked at the authorization server (RFC 7009), deleted, logged.
  const off = await alice.client.json('DELETE', '/api/connections/tickets');
  t.same(off.body, { connector_id: 'tickets', connected: false, had: true, revoked_at_server: true });
  t.ok(tickets.auth.revocations >= 1, 'the authorization server revoked');
  t.equal(await trackerStatus(tickets.url, second!), 401, 'the revoked token no longer works at the MCP server');
  t.equal(await service.accessToken('tickets', alice.userId), null, 'disconnected: null');
  t.equal((await dbRows(app.database.sql, 'SELECT * FROM connector_tokens')).length, 0);
  const events = (
    await dbRows<{ event: string }>(
      app.database.sql,
      "SELECT event FROM action_log WHERE event LIKE 'connector.%' ORDER BY id",
    )
  ).map((r) => r.event);
  t.same(events, ['connector.connected', 'connector.disconnected']);

  const text = app.logs.text() + logs.text();
  for (const secret of [first!, second!, grant!.refreshToken!, CLIENT_SECRET, TRACKER_USERS.alice])
    t.notOk(text.includes(secret), 'no token, client secret or password in the logs');
  t.match(app.logs.text(), /connector_connected/, 'the connect is logged (without its secrets)');
});

t.test('a grant the authorization server no longer knows is deleted at refresh: the user connects again', async (t) => {
  const rig = await startOAuthRig(t, { accessTokenTtlS: 90 });
  const alice = await signedIn(rig, 'alice');
  t.equal((await connect(rig, alice.client, { username: 'alice', password: TRACKER_USERS.alice })).status, 302);
  const store = new ConnectorTokenStore(rig.app.database.sql, atRestEncryptor(rig.app.config));
  const grant = (await store.grant('tickets', alice.userId))!;
  // Revoked behind Airlock's back (at the server's revocation endpoint, as the user's admin would).
  const res = await fetch(`${rig.tickets.auth.url}/token/revocation`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`airlock-tickets:${CLIENT_SECRET}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token: grant.refreshToken!, token_type_hint: 'refresh_token' }),
  });
  t.equal(res.status, 200);
  const logs = logSink();
  const service = new ConnectorTokenService({
    store,
    connectors: rig.lookup,
    db: rig.app.database.sql,
    nodeId: 'node-a',
    log: createLogger({ level: 'debug', destination: logs.stream }),
    clock: () => Date.now() + 40_000,
  });
  t.equal(await service.accessToken('tickets', alice.userId), null, 'invalid_grant: not connected any more');
  t.equal(await store.grant('tickets', alice.userId), undefined, 'the dead grant is gone');
  t.match(logs.text(), /grant gone/);
  t.notOk(logs.text().includes(grant.refreshToken!));
});
