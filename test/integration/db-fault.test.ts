/**
 * PostgreSQL stopped for a few seconds under chat and admin traffic: while it is down every
 * request that needs it answers 503 ERR_DB_UNAVAILABLE with Retry-After (and /healthz says so);
 * once it is back the service resumes by itself; nothing is lost or half-written (row counts and
 * the action log match what succeeded).
 */
import t from 'tap';
import { addUser, freePort } from '../helpers/app.js';
import { startChatHarness, streamTurn, waitFor } from '../helpers/chat.js';
import { createPgDatabase, pgUnavailable, startPgCluster } from '../helpers/postgres.js';

const why = pgUnavailable();
if (why && process.env.CI === 'true') t.fail(`CI=true: ${why}`);

t.test('the database goes away and comes back', { skip: why ?? false }, async (t) => {
  const cluster = startPgCluster(await freePort());
  t.teardown(() => cluster.stop());
  const db = await createPgDatabase(cluster.url);
  const h = await startChatHarness(t, { app: { databaseUrl: db.url }, childEnv: { AGENT_MODEL_TIMEOUT_S: '60' } });
  const sql = h.app.database.sql;
  await addUser(h.app.database, 'root', 'root-password-0123', { superuser: true });
  const admin = h.app.client();
  t.equal((await admin.login('root', 'root-password-0123')).status, 200);
  const alice = await h.login('alice');

  // ---- before: a chat turn and an admin change.
  h.model.push({ kind: 'reply', text: 'first answer' });
  const turn1 = await streamTurn(alice, { message: 'first' });
  t.equal(turn1.events.at(-1)?.stop_reason, 'end_turn', 'a turn before the outage');
  const sessionId = turn1.events.at(-1).session_id as string;
  t.equal(
    (await admin.json('POST', '/api/data-authorization/roles', { name: 'before', description: '' })).status,
    201,
    'an admin change before',
  );
  const counts = async () => ({
    sessions: Number(
      (
        await sql
          .selectFrom('chat_sessions')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    turns: await sql.selectFrom('chat_turns').select(['id', 'status', 'stop_reason']).orderBy('started_at').execute(),
    roles: (await sql.selectFrom('data_roles').select('name').orderBy('id').execute()).map((r) => r.name),
    log: (await sql.selectFrom('action_log').select('event').orderBy('id').execute()).map((r) => r.event),
  });
  const before = await counts();

  // ---- PostgreSQL stops.
  cluster.pause();
  const health = await fetch(`${h.app.url}/healthz`);
  t.equal(health.status, 503, '/healthz says the database is down');
  t.equal(((await health.json()) as { error: { code: string } }).error.code, 'ERR_DB_UNAVAILABLE');
  const down = [
    await alice.json('GET', '/api/chat/sessions'),
    await admin.json('POST', '/api/data-authorization/roles', { name: 'during', description: '' }),
    await alice.json('POST', '/api/memories', { content: 'remember me' }),
  ];
  for (const r of down) {
    t.equal(r.status, 503, `503 while down (${r.body?.error?.code})`);
    t.equal(r.body?.error?.code, 'ERR_DB_UNAVAILABLE');
    t.equal(r.res.headers.get('retry-after'), '5', 'with Retry-After');
  }
  h.model.push({ kind: 'reply', text: 'never seen' });
  const refused = await streamTurn(alice, { message: 'during', session_id: sessionId });
  t.equal(refused.status, 503, 'a chat message while down is refused before anything streams');
  t.equal(refused.error?.error?.code, 'ERR_DB_UNAVAILABLE');

  // ---- PostgreSQL is back: the service resumes by itself.
  cluster.start();
  await waitFor(async () => (await fetch(`${h.app.url}/healthz`)).status === 200, 'healthz to recover', 30_000);
  h.model.push({ kind: 'reply', text: 'second answer' });
  const turn2 = await streamTurn(alice, { message: 'after', session_id: sessionId });
  t.equal(turn2.events.at(-1)?.stop_reason, 'end_turn', 'chat works again with the same session and login');
  t.equal(
    (await admin.json('POST', '/api/data-authorization/roles', { name: 'after', description: '' })).status,
    201,
    'admin works again',
  );

  const after = await counts();
  t.equal(after.sessions, before.sessions, 'no chat session was created by the refused requests');
  t.same(after.turns.slice(0, before.turns.length), before.turns, 'earlier turns untouched');
  t.equal(after.turns.length, before.turns.length + 1, 'exactly one new turn (the one after the outage)');
  t.notOk(
    after.turns.some((x) => x.status === 'running'),
    'no turn left half-written',
  );
  t.same(after.roles, [...before.roles, 'after'], 'the role asked for during the outage does not exist');
  t.same(after.log.slice(0, before.log.length), before.log, 'the action log kept everything before');
  t.notOk(
    after.log.slice(before.log.length).some((e) => e.includes('during')),
    'and has nothing of the refused change',
  );
  await db.drop().catch(() => undefined);
});
