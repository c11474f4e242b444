/**
 * One refresh grant per fleet for a connector's OAuth grant (docs/connectors.md, "OAuth per
 * user"): two nodes (two token services with their own node ids, sharing the database) find the
 * same token due at once; one sends the refresh_token grant under the database lease, the other
 * waits for it and uses the token it saved. On SQLite and, in pass 2, PostgreSQL.
 */
import t from 'tap';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import { ConnectorTokenStore } from '../../domain/connector-oauth/store.js';
import { ConnectorTokenService } from '../../daemon/host/connector-tokens.js';
import { logSink } from '../helpers/app.js';
import { callTracker, connect, signedIn, startOAuthRig, TRACKER_USERS } from '../helpers/connector-oauth.js';

t.test('two nodes, one due token: one grant, both get the new token', async (t) => {
  const rig = await startOAuthRig(t, { accessTokenTtlS: 90 });
  const alice = await signedIn(rig, 'alice');
  t.equal((await connect(rig, alice.client, { username: 'alice', password: TRACKER_USERS.alice })).status, 302);
  const store = new ConnectorTokenStore(rig.app.database.sql, atRestEncryptor(rig.app.config));
  const before = (await store.grant('tickets', alice.userId))!.accessToken;
  const logs = logSink();
  const node = (nodeId: string) =>
    new ConnectorTokenService({
      store,
      connectors: rig.lookup,
      db: rig.app.database.sql,
      nodeId,
      log: createLogger({ level: 'debug', destination: logs.stream }),
      clock: () => Date.now() + 40_000,
    });
  const a = node('node-a');
  const b = node('node-b');

  const [ta, tb] = await Promise.all([a.accessToken('tickets', alice.userId), b.accessToken('tickets', alice.userId)]);
  t.ok(ta && ta !== before, 'a new token');
  t.equal(tb, ta, 'both nodes use the same token');
  t.equal(a.refreshCount + b.refreshCount, 1, 'one grant between the two nodes');
  t.same(
    rig.tickets.auth.grants.filter((g) => g === 'refresh_token'),
    ['refresh_token'],
    'the authorization server saw one refresh',
  );
  t.match((await callTracker(rig.tickets.url, ta!, 'list_tickets', {})).text, /No tickets yet/, 'the token works');
  // Fresh now on both nodes (90 s from the refresh, read with the same skew): no further grant.
  t.equal(await b.accessToken('tickets', alice.userId), ta);
  t.equal(await a.accessToken('tickets', alice.userId), ta);
  t.equal(a.refreshCount + b.refreshCount, 1, 'still one grant');
  t.notOk(logs.text().includes(before), 'no token in the logs');
});
