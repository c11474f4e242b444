/**
 * Replay-proof requests between nodes (docs/deploy.md, Requests between nodes): a signed request
 * names its receiver, and its nonce is kept fleet-wide in the database. The same request sent to
 * a second node, again to the same node, or again after that node restarted (a fresh app on the
 * same database) is refused, as is one whose query, body or user changed. The nonce insert is
 * atomic on either engine; expired nonces are purged. Then https between nodes: a node answering
 * on https with a certificate of a CA made in this test, reached by a client that trusts only
 * that CA; plain http refused unless AIRLOCK_FLEET_ALLOW_HTTP=true.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { loadConfig, NodeClient, signNodeRequest } from '../../core/index.js';
import { claimNonce, ownSandbox, purgeNonces, registerNode, sandboxOf } from '../../domain/fleet.js';
import { FleetMember } from '../../daemon/host/fleet.js';
import { addUser, startTestApp, tempDir, testConfig } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { TestClock } from '../helpers/clock.js';

const SECRET = 'fleet-replay-test-secret-0123456789abcdef';
const node = (id: string, extra: Record<string, string> = {}) => ({
  AIRLOCK_NODE_SECRET: SECRET,
  AIRLOCK_NODE_ID: id,
  AIRLOCK_FLEET_ALLOW_HTTP: 'true',
  ...extra,
});

type Answer = { status: number; code?: string };
async function post(url: string, path: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const r = await fetch(url + path, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body,
  });
  const b = (await r.json()) as { error?: { code: string } };
  return { status: r.status, code: b.error?.code };
}

t.test(`${TEST_ENGINE}: one signed request is used once, by the node it names, across restarts`, async (t) => {
  const dir = tempDir(t);
  const b = await startTestApp(t, { dataDir: dir, env: node('node-b') });
  const c = await startTestApp(t, { dataDir: dir, env: node('node-c') });
  await registerNode(b.database.sql, { id: 'node-a', url: 'https://127.0.0.1:9', version: 't', capacity: 4 });
  const alice = await addUser(b.database, 'alice', 'alice-password-0123');
  const bob = await addUser(b.database, 'bob', 'bob-password-01234567');
  const path = '/api/fleet/operator?x=1';
  const body = JSON.stringify({ cmd: 'inspect', id: 'sess-1' });
  const signed = signNodeRequest(SECRET, {
    method: 'POST',
    path,
    node: 'node-a',
    to: 'node-b',
    userId: alice.id,
    body,
  });

  // Signed for node-b: another node of the same fleet refuses it, even first.
  t.match(
    await post(c.url, path, signed, body),
    { status: 401, code: 'ERR_NODE_AUTH' },
    'sent to a second node first: refused',
  );
  t.match(
    await post(c.url, path, { ...signed, 'x-airlock-node-to': 'node-c' }, body),
    { status: 401, code: 'ERR_NODE_AUTH' },
    'with the receiver renamed: refused',
  );
  const first = await post(b.url, path, signed, body);
  t.same(first, { status: 503, code: 'ERR_SESSION_UNAVAILABLE' }, 'the node it names runs it (no runtime in this app)');
  t.match(
    await post(b.url, path, signed, body),
    { status: 401, code: 'ERR_NODE_AUTH' },
    'again to the same node: refused',
  );
  t.match(
    await post(c.url, path, signed, body),
    { status: 401, code: 'ERR_NODE_AUTH' },
    'then to the second node: refused',
  );

  // node-b restarts: a fresh app (new process state) on the same database still refuses it.
  await b.close();
  const b2 = await startTestApp(t, { dataDir: dir, env: node('node-b') });
  t.match(
    await post(b2.url, path, signed, body),
    { status: 401, code: 'ERR_NODE_AUTH' },
    'again after the node restarted: refused',
  );
  t.match(b2.logs.text(), /"reason":"replayed"/, 'as a replay');
  t.match(c.logs.text(), /"reason":"wrong_receiver"/, 'the second node: signed for another node');
  t.match(c.logs.text(), /"reason":"bad_signature"/, 'the renamed receiver: a broken signature');

  // Each part is signed: a fresh signature for one request does not carry another.
  const fresh = () =>
    signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', to: 'node-b', userId: alice.id, body });
  const changed: [string, string, Record<string, string>, string][] = [
    ['query', '/api/fleet/operator?x=2', fresh(), body],
    ['query dropped', '/api/fleet/operator', fresh(), body],
    ['body', path, fresh(), JSON.stringify({ cmd: 'kill', id: 'sess-1' })],
    ['user', path, { ...fresh(), 'x-airlock-node-user': String(bob.id) }, body],
    ['user as 0-prefixed', path, { ...fresh(), 'x-airlock-node-user': `0${alice.id}` }, body],
  ];
  for (const [what, p, h, bd] of changed)
    t.match(await post(b2.url, p, h, bd), { status: 401, code: 'ERR_NODE_AUTH' }, `changed ${what}: refused`);
  t.same(
    await post(b2.url, path, fresh(), body),
    { status: 503, code: 'ERR_SESSION_UNAVAILABLE' },
    'an unchanged fresh one still passes',
  );
});

t.test(`${TEST_ENGINE}: the nonce store: one winner of a race, expired rows purged`, async (t) => {
  const app = await startTestApp(t, { env: node('node-b') });
  const db = app.database.sql;
  const now = Date.now();
  const wins = await Promise.all(
    Array.from({ length: 8 }, () => claimNonce(db, 'ab'.repeat(12), 'node-a', now + 31_000)),
  );
  t.equal(wins.filter(Boolean).length, 1, 'eight claims of one nonce at once: exactly one wins');
  t.ok(await claimNonce(db, 'cd'.repeat(12), 'node-a', now - 1), 'another nonce');
  t.equal(await purgeNonces(db, now), 1, 'the expired one is purged');
  t.notOk(await claimNonce(db, 'ab'.repeat(12), 'node-a', now + 31_000), 'the live one is kept');
  t.ok(
    await claimNonce(db, 'cd'.repeat(12), 'node-a', now + 31_000),
    'a purged nonce is free again (its signature is stale by then)',
  );

  // Every node's heartbeat purges them.
  const member = new FleetMember({ config: app.config, database: app.database, log: app.log, liveSessions: () => 0 });
  await member.start();
  t.teardown(() => member.stop());
  t.ok(await claimNonce(db, 'ef'.repeat(12), 'node-a', Date.now() - 1), 'an expired nonce');
  await member.beat();
  const left = await db.selectFrom('node_nonces').select('nonce').orderBy('nonce').execute();
  t.same(
    left.map((r) => r.nonce),
    ['ab'.repeat(12), 'cd'.repeat(12)],
    'the heartbeat purged the expired one, kept the live ones',
  );
});

t.test(`${TEST_ENGINE}: a node's heartbeat decides which nodes are silent on its clock`, async (t) => {
  const app = await startTestApp(t, { env: node('node-b', { AIRLOCK_NODE_LOST_S: '30' }) });
  const db = app.database.sql;
  await registerNode(db, { id: 'node-z', url: 'https://127.0.0.1:9', version: 't', capacity: 4 });
  const zed = await addUser(app.database, 'zed', 'zed-password-0123456789');
  await ownSandbox(db, { sessionId: 'sess-z', userId: zed.id, nodeId: 'node-z', state: 'live' });
  const clock = new TestClock();
  const member = new FleetMember({
    config: app.config,
    database: app.database,
    log: app.log,
    liveSessions: () => 0,
    clock,
  });
  await member.start();
  t.teardown(() => member.stop());
  await member.beat();
  t.equal((await sandboxOf(db, 'sess-z'))?.state, 'live', 'node-z beat just now: its sandbox is live');
  clock.advance(31_000);
  await member.beat();
  t.equal(
    (await sandboxOf(db, 'sess-z'))?.state,
    'lost',
    'silent for 31 s of a 30 s limit on the clock: marked lost, with no sleep',
  );
});

/** A CA and a certificate for 127.0.0.1 signed by it, made with openssl in `dir`. */
function makeCa(dir: string, name: string): { ca: string; cert: string; key: string } {
  const f = (x: string) => join(dir, `${name}-${x}`);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${name} test CA`,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
  ]);
  run([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    f('node.key'),
    '-out',
    f('node.csr'),
  ]);
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\n' > '${f('ext.cnf')}'`]);
  run([
    'x509',
    '-req',
    '-in',
    f('node.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('node.pem'),
  ]);
  return { ca: f('ca.pem'), cert: f('node.pem'), key: f('node.key') };
}

t.test(`${TEST_ENGINE}: https between nodes with the fleet's own CA; plain http only when allowed`, async (t) => {
  const dir = tempDir(t);
  const good = makeCa(dir, 'fleet');
  const other = makeCa(dir, 'other');
  // node-b answers on https with a certificate of the fleet's CA.
  const b = await startTestApp(t, {
    dataDir: dir,
    env: {
      AIRLOCK_NODE_SECRET: SECRET,
      AIRLOCK_NODE_ID: 'node-b',
      AIRLOCK_TLS_CERT_FILE: good.cert,
      AIRLOCK_TLS_KEY_FILE: good.key,
    },
  });
  t.match(b.url, /^https:\/\/127\.0\.0\.1:\d+$/, 'the node answers on https');
  t.match(b.config.node.url, /^https:/, 'and names an https node URL by default');
  await registerNode(b.database.sql, { id: 'node-a', url: 'https://127.0.0.1:9', version: 't', capacity: 4 });
  const target = { id: 'node-b', url: b.url };
  const client = (env: Record<string, string>) =>
    new NodeClient(testConfig(dir, { AIRLOCK_NODE_SECRET: SECRET, AIRLOCK_NODE_ID: 'node-a', ...env }));

  const trusting = client({ AIRLOCK_NODE_CA_FILE: good.ca });
  t.teardown(() => trusting.close());
  await t.rejects(
    trusting.json(target, 'POST', '/api/fleet/operator', { cmd: 'inspect', id: 'sess-1' }),
    { code: 'ERR_SESSION_UNAVAILABLE' },
    'trusting the fleet CA: the signed request reaches the route over TLS',
  );
  for (const [what, env] of [
    ['the system CAs only', {}],
    ['another CA', { AIRLOCK_NODE_CA_FILE: other.ca }],
  ] as const) {
    const c = client(env);
    await t.rejects(
      c.json(target, 'POST', '/api/fleet/operator', { cmd: 'inspect', id: 'sess-1' }),
      { code: 'ERR_NODE_UNREACHABLE', message: /certificate/ },
      `trusting ${what}: the certificate is refused`,
    );
    c.close();
  }
  t.notMatch(
    b.logs.text(),
    /operator command from another node/,
    'no request over an untrusted connection reached a route',
  );

  // Plain http: refused by the client unless allowed; a fleet's config refuses an http node URL.
  const plain = await startTestApp(t, { env: node('node-p') });
  await t.rejects(
    client({}).json({ id: 'node-p', url: plain.url }, 'POST', '/api/fleet/operator', {}),
    { code: 'ERR_NODE_PLAIN_HTTP', status: 503 },
    'http node URL: refused before sending',
  );
  const allowed = client({ AIRLOCK_FLEET_ALLOW_HTTP: 'true' });
  await t.rejects(
    allowed.json({ id: 'node-p', url: plain.url }, 'POST', '/api/fleet/operator', {}),
    { code: 'ERR_NODE_AUTH' },
    'allowed: sent (and refused there: node-a is not registered in that database)',
  );
  allowed.close();
  const fleetEnv = {
    AIRLOCK_DATABASE_URL: 'postgres://a:b@127.0.0.1:1/x',
    AIRLOCK_NODE_SECRET: SECRET,
    AGENT_USER_TOKEN_SECRET: 'x'.repeat(20),
    MCP_INTERNAL_SECRET: 'y'.repeat(20),
  };
  t.throws(
    () => loadConfig({ ...fleetEnv, AIRLOCK_NODE_URL: 'http://10.0.0.11:8080' }),
    { code: 'ERR_CONFIG_INVALID' },
    'a fleet node with an http URL does not start',
  );
  t.match(
    String(
      (() => {
        try {
          loadConfig({ ...fleetEnv, AIRLOCK_NODE_URL: 'http://10.0.0.11:8080' });
        } catch (e) {
          return e;
        }
      })(),
    ),
    /AIRLOCK_FLEET_ALLOW_HTTP/,
    'and says how to allow it',
  );
  t.doesNotThrow(() => loadConfig({ ...fleetEnv, AIRLOCK_NODE_URL: 'https://10.0.0.11:8443' }), 'https: starts');
  t.doesNotThrow(
    () => loadConfig({ ...fleetEnv, AIRLOCK_NODE_URL: 'http://10.0.0.11:8080', AIRLOCK_FLEET_ALLOW_HTTP: 'true' }),
    'http explicitly allowed: starts',
  );
});
