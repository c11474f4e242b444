/**
 * OAuth per user for connectors: what the host refuses (docs/connectors.md, "OAuth per user").
 * A bad, foreign or replayed state, an answer from another issuer, a token endpoint that
 * redirects to another host or echoes the request's secrets: each refused with its code, no
 * grant saved, no secret in the logs. Also the client ID metadata document and the choice of
 * client. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { isAppError, Secret } from '../../core/index.js';
import { chooseClient } from '../../domain/connector-oauth/client.js';
import { dbRows } from '../helpers/db.js';
import {
  authorizeInBrowser,
  CLIENT_SECRET,
  signedIn,
  startOAuthRig,
  TRACKER_USERS,
  type OAuthRig,
} from '../helpers/connector-oauth.js';
import type { Client } from '../helpers/client.js';

const CALLBACK = '/api/connections/callback';

/** Start a connect as `client` and walk the authorization server's forms: the callback URL (path and query). */
async function authorized(rig: OAuthRig, client: Client): Promise<string> {
  const start = await client.json('POST', '/api/connections/tickets/connect', { return_to: '/#/chat/c9' });
  const url = await authorizeInBrowser(start.body.authorization_url, rig.origin + CALLBACK, {
    username: 'alice',
    password: TRACKER_USERS.alice,
  });
  return url.slice(rig.origin.length);
}

const grants = async (rig: OAuthRig) =>
  (await dbRows(rig.app.database.sql, 'SELECT connector_id FROM connector_tokens')).length;

t.test('state: unknown, another user or browser session, replayed', async (t) => {
  const rig = await startOAuthRig(t);
  const alice = await signedIn(rig, 'alice');
  const bob = await signedIn(rig, 'bob');

  const bogus = await alice.client.json('GET', `${CALLBACK}?state=bogus&code=whatever`);
  t.equal(bogus.status, 400);
  t.equal(bogus.body.error.code, 'ERR_CONNECTOR_OAUTH_STATE');

  const callback = await authorized(rig, alice.client);
  const stolen = await bob.client.json('GET', callback);
  t.equal(
    stolen.body.error.code,
    'ERR_CONNECTOR_OAUTH_STATE',
    "another user's (and browser session's) state is refused",
  );
  t.equal(await grants(rig), 0, 'nothing saved');

  const ok = await alice.client.request('GET', callback);
  t.equal(ok.status, 302, 'the owner of the state completes it');
  t.equal(await grants(rig), 1);
  const replay = await alice.client.json('GET', callback);
  t.equal(replay.body.error.code, 'ERR_CONNECTOR_OAUTH_STATE', 'a state is used once');
});

t.test('an answer naming another issuer (RFC 9207) is refused', async (t) => {
  const rig = await startOAuthRig(t);
  const alice = await signedIn(rig, 'alice');
  const callback = new URL(await authorized(rig, alice.client), rig.origin);
  t.equal(callback.searchParams.get('iss'), rig.tickets.auth.url, 'the server names itself');
  callback.searchParams.set('iss', 'https://evil.example');
  const r = await alice.client.json('GET', callback.pathname + callback.search);
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'ERR_CONNECTOR_OAUTH_ISSUER');
  t.equal(await grants(rig), 0);
});

t.test(
  'a token endpoint that redirects to another host, or echoes secrets: refused, nothing saved, nothing logged',
  async (t) => {
    const rig = await startOAuthRig(t);
    const alice = await signedIn(rig, 'alice');

    rig.tickets.auth.tamper.redirectTokenTo = 'http://127.0.0.2:9/steal';
    let callback = await authorized(rig, alice.client);
    let r = await alice.client.json('GET', callback);
    t.equal(r.status, 502);
    t.equal(r.body.error.code, 'ERR_CONNECTOR_OAUTH_REDIRECT');
    t.equal(await grants(rig), 0);

    rig.tickets.auth.tamper = { echoSecrets: true };
    callback = await authorized(rig, alice.client);
    r = await alice.client.json('GET', callback);
    t.equal(r.status, 502);
    t.equal(r.body.error.code, 'ERR_CONNECTOR_OAUTH_ECHO');
    t.equal(await grants(rig), 0, 'the echoed "token" is not stored');
    const code = new URL(callback, rig.origin).searchParams.get('code')!;
    const text = rig.app.logs.text() + JSON.stringify(r.body);
    for (const secret of [CLIENT_SECRET, code, 'echo-token'])
      t.notOk(text.includes(secret), 'no secret of the exchange in the logs or the answer');
  },
);

t.test('bad requests: return_to, unknown connector, audience', async (t) => {
  const rig = await startOAuthRig(t);
  const alice = await signedIn(rig, 'alice');
  const far = await alice.client.json('POST', '/api/connections/tickets/connect', { return_to: '//evil.example/x' });
  t.equal(far.body.error.code, 'ERR_CONNECTOR_OAUTH_RETURN_TO');
  const unknown = await alice.client.json('POST', '/api/connections/nope/connect', {});
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.code, 'ERR_CONNECTOR_OAUTH_UNKNOWN');
  const anon = await rig.app.client().json('GET', '/api/connections');
  t.equal(anon.status, 401);
});

t.test("Airlock's client ID metadata document, and which client a grant uses", async (t) => {
  const rig = await startOAuthRig(t);
  const doc = await rig.app.client().json('GET', '/oauth/client-metadata.json');
  t.equal(doc.status, 200);
  t.same(doc.body, {
    client_id: `${rig.origin}/oauth/client-metadata.json`,
    client_name: 'Airlock',
    client_uri: rig.origin,
    redirect_uris: [`${rig.origin}${CALLBACK}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  });
  const meta = (await (await fetch(`${rig.tickets.auth.url}/.well-known/openid-configuration`)).json()) as Parameters<
    typeof chooseClient
  >[0];
  t.equal(meta.client_id_metadata_document_supported, true, 'the tracker takes metadata documents');
  const pre = { clientId: 'pre', clientSecret: new Secret('pre-secret-0123456789') };
  t.same(
    chooseClient(meta, pre, 'https://airlock.example/oauth/client-metadata.json'),
    { client_id: 'https://airlock.example/oauth/client-metadata.json' },
    'https origin: the document URL is the client id, no secret',
  );
  t.same(
    chooseClient(meta, pre, `${rig.origin}/oauth/client-metadata.json`),
    { client_id: 'pre', client_secret: 'pre-secret-0123456789' },
    'http origin: the pre-registered client',
  );
  t.same(
    chooseClient(
      { ...meta, client_id_metadata_document_supported: false },
      pre,
      'https://airlock.example/oauth/client-metadata.json',
    ).client_id,
    'pre',
    'no metadata documents: the pre-registered client',
  );
  let refused: unknown;
  try {
    chooseClient(
      { ...meta, client_id_metadata_document_supported: false },
      {},
      'https://airlock.example/oauth/client-metadata.json',
    );
  } catch (err) {
    refused = err;
  }
  t.ok(isAppError(refused, 'ERR_CONNECTOR_OAUTH_CLIENT'), 'neither: no usable client');
});
