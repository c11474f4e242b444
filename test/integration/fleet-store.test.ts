/**
 * The fleet's shared state on this pass's engine: nodes register and heartbeat, placement
 * prefers the receiving node, silent nodes' sandboxes are marked lost, and a lease is held by
 * exactly one holder even when several race for it.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import {
  acquireLease,
  heartbeat,
  listNodes,
  markLostSandboxes,
  nodesOfUserSandboxes,
  ownSandbox,
  placeSandbox,
  registerNode,
  releaseLease,
  releaseSandbox,
  sandboxesOfOtherNodes,
  sandboxOf,
} from '../../domain/fleet.js';
import { openDatabase } from '../../domain/db/index.js';
import { tempDir, TEST_SECRETS } from '../helpers/app.js';
import { openTestDatabase, testDatabaseUrl, TEST_ENGINE } from '../helpers/db.js';

const run = promisify(execFile);
const MAIN = join(process.cwd(), 'dist', 'daemon', 'main.js');

t.test(`${TEST_ENGINE}: nodes register, beat, and are lost when silent; their sandboxes too`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const t0 = new Date('2026-01-01T00:00:00Z');
  const at = (s: number) => new Date(t0.getTime() + s * 1000);
  await registerNode(db, { id: 'a', url: 'http://10.0.0.1:8080', version: '1', capacity: 2 }, t0);
  await registerNode(db, { id: 'b', url: 'http://10.0.0.2:8080', version: '1', capacity: 4 }, t0);
  await heartbeat(db, 'a', 2, at(20));
  await heartbeat(db, 'b', 1, at(5));
  const nodes = await listNodes(db, 30, at(40));
  t.same(
    nodes.map((n) => [n.id, n.alive, n.sessions]),
    [
      ['a', true, 2],
      ['b', false, 1],
    ],
    'b silent for 35 s of a 30 s limit',
  );

  await ownSandbox(db, { sessionId: 's1', userId: 1, nodeId: 'a', containerId: 'c1', state: 'live' });
  await ownSandbox(db, { sessionId: 's2', userId: 1, nodeId: 'b', containerId: 'c2', state: 'live' });
  t.same(await nodesOfUserSandboxes(db, 1, 'a'), ['b'], "the other nodes that ran the user's sandboxes (attachments)");
  t.same(await nodesOfUserSandboxes(db, 2, 'a'), [], 'none for a user without sandboxes');
  t.same(
    (await sandboxesOfOtherNodes(db, 'a')).map((r) => [r.session_id, r.node_id]),
    [['s2', 'b']],
    'what the other nodes own (sessions ls)',
  );
  t.equal(await markLostSandboxes(db, 30, at(40)), 1, "b's one sandbox is marked lost");
  t.equal(await markLostSandboxes(db, 30, at(40)), 0, 'idempotent');
  t.equal((await sandboxOf(db, 's2'))?.state, 'lost');
  t.equal((await sandboxOf(db, 's1'))?.state, 'live', "a's sandbox untouched");
  await ownSandbox(db, { sessionId: 's2', userId: 1, nodeId: 'a', containerId: 'c3', state: 'starting' });
  t.same(
    [(await sandboxOf(db, 's2'))?.node_id, (await sandboxOf(db, 's2'))?.state],
    ['a', 'starting'],
    'a live node takes the lost session over',
  );
  await releaseSandbox(db, 's2', 'b');
  t.ok(await sandboxOf(db, 's2'), 'only the owner releases');
  await releaseSandbox(db, 's2', 'a');
  t.notOk(await sandboxOf(db, 's2'));
});

t.test('placement: the receiving node when it has room, else the live node with most room', async (t) => {
  const n = (id: string, sessions: number, capacity: number, alive = true) => ({
    id,
    url: '',
    version: '',
    started_at: '',
    heartbeat_at: '',
    sessions,
    capacity,
    alive,
  });
  t.equal(placeSandbox([n('a', 1, 2), n('b', 0, 9)], 'a')?.id, 'a', 'receiving node first');
  t.equal(placeSandbox([n('a', 2, 2), n('b', 5, 9), n('c', 1, 3)], 'a')?.id, 'b', 'full: most free places (4 > 2)');
  t.equal(placeSandbox([n('a', 2, 2), n('b', 0, 9, false), n('c', 1, 3)], 'a')?.id, 'c', 'a lost node is never chosen');
  t.equal(placeSandbox([n('a', 2, 2)], 'a'), undefined, 'every node full');
});

t.test(`${TEST_ENGINE}: a lease has one holder, even when ten race for it; it expires and renews`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const wins = await Promise.all(
    Array.from({ length: 10 }, (_, i) => acquireLease(db, 'sync:1', `n${i}`, 10_000, 1_000)),
  );
  t.equal(wins.filter(Boolean).length, 1, 'exactly one winner');
  const holder = `n${wins.indexOf(true)}`;
  t.ok(await acquireLease(db, 'sync:1', holder, 10_000, 5_000), 'the holder renews');
  t.notOk(await acquireLease(db, 'sync:1', 'other', 10_000, 14_000), 'still held');
  t.ok(await acquireLease(db, 'sync:1', 'other', 10_000, 15_001), 'expired: another takes it');
  await releaseLease(db, 'sync:1', holder);
  t.notOk(await acquireLease(db, 'sync:1', holder, 10_000, 16_000), 'the old holder cannot release what it lost');
});

t.test(`${TEST_ENGINE}: airlock doctor and airlock nodes ls`, async (t) => {
  const dir = tempDir(t);
  const url = await testDatabaseUrl(t);
  const env = {
    ...process.env,
    ...TEST_SECRETS,
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_NODE_ID: 'node-a',
    AIRLOCK_DOCKER_SOCKET: join(dir, 'no-docker.sock'),
    ...(url ? { AIRLOCK_DATABASE_URL: url } : {}),
  };
  const doc = await run(process.execPath, [MAIN, 'doctor'], { env }).catch((e: { stdout: string; code: number }) => e);
  t.match(doc.stdout, new RegExp(`database\\s+${TEST_ENGINE} `), 'names the engine');
  t.match(doc.stdout, /schema version\s+\d+/, 'the schema version');
  t.match(doc.stdout, /node\s+node-a/);
  t.match(doc.stdout, /docker\s+UNAVAILABLE/, 'an unreachable engine is said plainly');
  t.equal((doc as { code?: number }).code, 1, 'and exits 1');
  if (url) t.notMatch(doc.stdout, /:[^@/:]+@/, 'no password in the output');

  const database = await openDatabase({ url, file: join(dir, 'airlock.db') });
  t.teardown(() => database.close());
  await registerNode(database.sql, { id: 'node-a', url: 'http://10.1.1.1:8080', version: '9.9.9', capacity: 32 });
  const ls = await run(process.execPath, [MAIN, 'nodes', 'ls'], { env });
  t.match(ls.stdout, /^NODE\s+STATE\s+URL\s+LAST HEARTBEAT\s+SESSIONS\s+CAPACITY\s+VERSION$/m);
  t.match(ls.stdout, /^node-a\s+alive\s+http:\/\/10\.1\.1\.1:8080\s+\S+\s+0\s+32\s+9\.9\.9$/m);
  const json = JSON.parse((await run(process.execPath, [MAIN, 'nodes', 'ls', '--json'], { env })).stdout) as {
    id: string;
  }[];
  t.same(
    json.map((n) => n.id),
    ['node-a'],
  );
});

t.test('airlock serve with an unreachable database: one clear error naming host and database, exit 1', async (t) => {
  const dir = tempDir(t);
  const env = {
    PATH: process.env.PATH ?? '',
    ...TEST_SECRETS,
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_PORT: '0',
    AIRLOCK_DATABASE_URL: 'postgres://airlock:hunter2-db-password@127.0.0.1:1/airlock_prod',
    AIRLOCK_NODE_SECRET: 'node-secret-0123456789abcdef0123456789',
    AIRLOCK_FLEET_ALLOW_HTTP: 'true',
    AIRLOCK_ENCRYPTION_KEY: 'a'.repeat(64),
    AIRLOCK_DOCKER_SOCKET: join(dir, 'no-docker.sock'),
  };
  const r = await run(process.execPath, [MAIN, 'serve'], { env, timeout: 60_000 }).catch(
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
  t.equal((r as { code?: number }).code, 1, 'exits 1');
  const out = r.stdout + r.stderr;
  t.match(out, /ERR_DB_UNAVAILABLE/);
  t.match(out, /127\.0\.0\.1:1\/airlock_prod/, 'names host, port and database');
  t.notMatch(out, /hunter2/, 'never the password');
  t.equal(
    out
      .trim()
      .split('\n')
      .filter((l) => /ERR_DB_UNAVAILABLE/.test(l)).length,
    1,
    'one error line',
  );
});

t.test('/metrics names the node', async (t) => {
  const { createMetrics } = await import('../../core/index.js');
  const m = createMetrics({ node: 'node-7' });
  t.match(await m.registry.metrics(), /^airlock_node_info\{node="node-7"\} 1$/m);
  t.notMatch(await createMetrics().registry.metrics(), /airlock_node_info/, 'only when a node id is given');
});

t.test(`${TEST_ENGINE}: directory sync asked on two nodes at once yields one job`, async (t) => {
  const { addUser, startTestApp } = await import('../helpers/app.js');
  const { saveConnection } = await import('../../domain/identity/index.js');
  const { Encryptor, loadOrCreateEncryptionKey } = await import('../../core/index.js');
  const dir = tempDir(t);
  const a = await startTestApp(t, { dataDir: dir, env: { AIRLOCK_NODE_ID: 'node-a' } });
  const b = await startTestApp(t, { dataDir: dir, env: { AIRLOCK_NODE_ID: 'node-b' } });
  await saveConnection(a.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, a.config.encryptionKey)), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'cid',
    service_account_json: {
      client_email: 'sync@x.iam.test',
      private_key: '-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n',
    },
    delegated_admin_email: 'admin@x.test',
  });
  await addUser(a.database, 'root', 'root-password-0123', { superuser: true });
  const [ca, cb] = [a.client(), b.client()];
  for (const c of [ca, cb]) t.equal((await c.login('root', 'root-password-0123')).status, 200);
  const answers = await Promise.all(
    [...Array(4)].flatMap(() => [
      ca.json('POST', '/api/identity/directory-sync', {}),
      cb.json('POST', '/api/identity/directory-sync', {}),
    ]),
  );
  t.same(
    answers.map((r) => r.status).sort(),
    [200, 200, 200, 200, 200, 200, 200, 202],
    'one request created the job; the others were told it runs',
  );
  t.equal(new Set(answers.map((r) => r.body.job.id)).size, 1, 'all name the same job');
  const jobs = await a.database.sql.selectFrom('directory_sync_jobs').select('id').execute();
  t.equal(jobs.length, 1, 'one row in the database');
});
