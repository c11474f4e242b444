/**
 * Directory-sync jobs across processes and nodes: recovery fails only jobs whose owner is gone or
 * silent (never a live foreign one), and a run whose job another process failed meanwhile applies
 * nothing. On both engines.
 */
import t from 'tap';
import { dbRow, dbRun } from '../../helpers/db.js';
import { waitFor } from '../../helpers/chat.js';
import { snapshot, startSync, syncAdmin, syncOnce } from '../../helpers/directory.js';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { JOB_STALE_MS, PENDING_STALE_MS } from '../../../daemon/directory-sync/index.js';

const admin = syncAdmin;

t.test('recovery fails only jobs whose owner is gone or silent; a live foreign job survives', async (t) => {
  const s = await startSync(t);
  s.dir.addUser({ primaryEmail: `a@${s.dir.domain}` });
  const root = await admin(s);
  const db = s.app.database.sql;
  const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
  const put = async (o: {
    status?: string;
    owner_id?: string | null;
    owner_pid?: number | null;
    owner_host?: string | null;
    heartbeat_at?: string | null;
    created_at?: string;
  }) =>
    Number(
      (
        await dbRow(
          db,
          `INSERT INTO directory_sync_jobs (connection_id, trigger, status, started_at, owner_id, owner_pid, owner_host, heartbeat_at, created_at)
           VALUES (?, 'manual', ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
          s.connection.id,
          o.status ?? 'running',
          iso(0),
          o.owner_id ?? null,
          o.owner_pid ?? null,
          o.owner_host ?? null,
          o.heartbeat_at ?? null,
          o.created_at ?? iso(0),
        )
      ).id,
    );
  const job = async (id: number) =>
    (await dbRow(db, 'SELECT status, error FROM directory_sync_jobs WHERE id = ?', id)) as {
      status: string;
      error: string | null;
    };
  const reason = async (id: number) => (JSON.parse((await job(id)).error ?? '{}') as { message?: string }).message;
  const clear = (id: number) => dbRun(db, "UPDATE directory_sync_jobs SET status = 'failed' WHERE id = ?", id);

  // A live process on this host (standing in for `airlock sync-directory`) owns a running job.
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  t.teardown(() => void other.kill('SIGKILL'));
  await new Promise((r) => other.once('spawn', r));
  const live = await put({
    owner_id: 'foreign-run',
    owner_pid: other.pid,
    owner_host: hostname(),
    heartbeat_at: iso(1000),
  });
  t.equal(await s.runner.recover(), 0, 'daemon start leaves the live job alone');
  t.equal((await job(live)).status, 'running');
  const busy = await root.json('POST', '/api/identity/directory-sync', {});
  t.equal(busy.status, 200, 'a POST returns the live job instead of failing it');
  t.equal(busy.body.job.id, live);
  // Its process dies: the job is failed at once (no need to wait for the heartbeat to age).
  other.kill('SIGKILL');
  await new Promise((r) => other.once('exit', r));
  t.equal(await s.runner.recover(), 1);
  t.equal((await job(live)).status, 'failed');
  t.equal(JSON.parse((await job(live)).error!).code, 'ERR_SYNC_INTERRUPTED');
  t.match(await reason(live), /owner process gone/);

  // A live pid whose heartbeat stopped long ago (a hung run, or the pid was reused).
  const hung = await put({
    owner_id: 'hung-run',
    owner_pid: process.ppid,
    owner_host: hostname(),
    heartbeat_at: iso(JOB_STALE_MS + 60_000),
  });
  t.equal(await s.runner.recover(), 1);
  t.match(await reason(hung), /no heartbeat/);

  // Another host: only the heartbeat tells. Fresh → alive; old → failed.
  const remote = await put({
    owner_id: 'remote-run',
    owner_pid: 4242,
    owner_host: 'some-other-host',
    heartbeat_at: iso(10_000),
  });
  t.equal(await s.runner.recover(), 0);
  await dbRun(db, 'UPDATE directory_sync_jobs SET heartbeat_at = ? WHERE id = ?', iso(JOB_STALE_MS + 1000), remote);
  t.equal(await s.runner.recover(), 1);
  t.match(await reason(remote), /no heartbeat/);

  // Our own pid but not a run of this process: a restarted daemon that got the old pid (pid 1 in a container).
  const reused = await put({
    owner_id: 'previous-life',
    owner_pid: process.pid,
    owner_host: hostname(),
    heartbeat_at: iso(1000),
  });
  t.equal(await s.runner.recover(), 1);
  t.match(await reason(reused), /restarted/);

  // No owner recorded (rows from before owners were kept): nobody can finish it.
  const legacy = await put({});
  t.equal(await s.runner.recover(), 1);
  t.match(await reason(legacy), /no owner/);

  // Pending: just created → about to be claimed, left alone; old → never started, failed.
  const fresh = await put({ status: 'pending' });
  t.equal(await s.runner.recover(), 0);
  await clear(fresh);
  const orphan = await put({ status: 'pending', created_at: iso(PENDING_STALE_MS + 1000) });
  t.equal(await s.runner.recover(), 1);
  t.match(await reason(orphan), /never started/);

  // A job left by a crashed process does not block a new one: the POST fails it and starts anew.
  const crashed = await put({
    owner_id: 'crashed',
    owner_pid: process.pid,
    owner_host: hostname(),
    heartbeat_at: iso(1000),
  });
  const started = await root.json('POST', '/api/identity/directory-sync', {});
  t.equal(started.status, 202);
  t.not(started.body.job.id, crashed);
  t.equal((await job(crashed)).status, 'failed');
  await s.runner.idle();
  const j = (await root.json('GET', '/api/identity/directory-sync')).body.job;
  t.equal(j.status, 'succeeded');
  t.equal(j.id, started.body.job.id);
});

t.test(
  'a run whose job another process failed meanwhile applies nothing and does not overwrite the failure',
  async (t) => {
    const s = await startSync(t);
    s.dir.seed({ users: 20, groups: 4, memberships: 30 });
    const root = await admin(s);
    t.equal((await syncOnce(s, root)).status, 'succeeded');
    s.dir.users[0].suspended = true;
    s.dir.users.splice(3, 2);
    const before = await snapshot(s.app.database.sql);
    s.dir.latencyMs = 150;
    const r = await root.json('POST', '/api/identity/directory-sync', {});
    t.equal(r.status, 202);
    const id = r.body.job.id as number;
    const row = async () =>
      (await dbRow(
        s.app.database.sql,
        'SELECT status, owner_id, owner_pid, owner_host, heartbeat_at, error, result FROM directory_sync_jobs WHERE id = ?',
        id,
      )) as Record<string, unknown>;
    // The runner claims the job (pending → running) just after the POST answered.
    await waitFor(async () => (await row()).status === 'running', 'the runner to claim the job', 10_000);
    t.equal((await row()).status, 'running');
    t.equal((await row()).owner_pid, process.pid, 'owner recorded');
    t.equal((await row()).owner_host, hostname());
    t.ok((await row()).owner_id && (await row()).heartbeat_at);
    t.equal(await s.runner.recover(), 0, 'this process still runs it: not recovered');
    // Another process decides the job is dead while it is still fetching.
    await dbRun(
      s.app.database.sql,
      "UPDATE directory_sync_jobs SET status = 'failed', error = ?, finished_at = ? WHERE id = ?",
      JSON.stringify({ code: 'ERR_SYNC_INTERRUPTED', message: 'taken by the test' }),
      new Date().toISOString(),
      id,
    );
    await s.runner.idle();
    const after = await row();
    t.equal(after.status, 'failed', 'the failure stands');
    t.equal(JSON.parse(after.error as string).message, 'taken by the test', 'its error is not overwritten');
    t.equal(after.result, null);
    t.same(await snapshot(s.app.database.sql), before, 'nothing applied');
    t.same(s.killed, []);
    t.match(s.app.logs.text(), /no longer owned by this run/);
  },
);
