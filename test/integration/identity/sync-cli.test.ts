import t from 'tap';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { start as startDirectory } from '../../../emulator/directory.js';
import { createOrGetRunningJob, identityEncryptor, saveConnection } from '../../../web/index.js';
import { createLogger } from '../../../core/index.js';
import { serve } from '../../../daemon/serve.js';
import { logSink, serveEngineEnv, tempDir, testConfig } from '../../helpers/app.js';
import { dbRow, dbRun } from '../../helpers/db.js';
import { waitFor } from '../../helpers/wait.js';
import { openDatabase } from '../../../domain/db/index.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'daemon', 'main.js');

function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('airlock sync-directory (and sync_directory) runs the sync inline with progress', async (t) => {
  const dir = await startDirectory();
  t.teardown(() => dir.close());
  dir.seed({ users: 25, groups: 4, memberships: 50 });
  const dataDir = tempDir(t);
  const engine = await serveEngineEnv(t);
  const env = {
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url,
    AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl,
    AIRLOCK_LOG_LEVEL: 'silent',
    ...engine,
  };
  const config = testConfig(dataDir, env);
  const open = () => openDatabase({ url: engine.AIRLOCK_DATABASE_URL, file: join(dataDir, 'airlock.db') });
  const database = await open();
  const conn = await saveConnection(database.sql, identityEncryptor(config), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'cid',
    service_account_json: dir.serviceAccount as unknown as Record<string, unknown>,
    delegated_admin_email: `admin@${dir.domain}`,
  });
  await database.close();

  const r = await run(['sync-directory', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    job: { status: string; trigger: string; result: { users_created: number; memberships_added: number } };
  };
  t.equal(out.job.status, 'succeeded');
  t.equal(out.job.trigger, 'manual');
  t.equal(out.job.result.users_created, 25);
  t.equal(out.job.result.memberships_added, 50);
  t.match(r.stderr, /members: 4\/4/, 'progress printed');

  const again = await run(['sync_directory'], env);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /rows written 0/, 'alias works; nothing to write the second time');
  t.notMatch(again.stderr, /daemon/, 'nobody deactivated: the daemon is not asked');

  // A user is suspended: the CLI ends their web sessions and asks the daemon to end their live
  // sandboxes; none runs here, which it says plainly (the sync still succeeds).
  dir.users[3].suspended = true;
  const db1 = await open();
  const uid = (
    (await dbRow(db1.sql, 'SELECT id FROM users WHERE email = ?', dir.users[3].primaryEmail)) as { id: number }
  ).id;
  await dbRun(
    db1.sql,
    'INSERT INTO web_sessions (sid, user_id, data, expires_at) VALUES (?, ?, ?, ?)',
    'sid-of-user3',
    uid,
    '{}',
    Date.now() + 3600_000,
  );
  await db1.close();
  const deact = await run(['sync-directory'], env);
  t.equal(deact.code, 0, deact.stderr);
  t.match(deact.stdout, /users \+0 ~0 -1, .*web sessions ended 1/);
  t.notMatch(deact.stdout, /sandboxes ended/, 'no count claimed when no daemon answered');
  t.match(
    deact.stderr,
    /no daemon answers on .*control\.sock \(not running, or running without a sandbox runtime\): no live sandboxes of deactivated users were ended/,
  );

  // A job already running for the connection (e.g. in `serve`): the command reports it, runs nothing.
  const db2 = await open();
  t.teardown(() => db2.close());
  const { job } = await createOrGetRunningJob(db2.sql, conn.id, 'manual', null);
  const busy = await run(['sync-directory'], env);
  t.equal(busy.code, 1);
  t.match(busy.stderr, new RegExp(`already running .*job ${job.id}`));
});

/** A seeded directory emulator, a data dir whose IdP connection points at it, and the CLI env. */
async function slowDirectory(
  t: Parameters<typeof tempDir>[0] & { teardown(fn: () => unknown): void },
  users: number,
  groups: number,
  memberships: number,
) {
  const dir = await startDirectory();
  t.teardown(() => dir.close());
  dir.seed({ users, groups, memberships });
  const dataDir = tempDir(t);
  const engine = await serveEngineEnv(t);
  const env = {
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url,
    AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl,
    AIRLOCK_LOG_LEVEL: 'silent',
    ...engine,
  };
  const config = testConfig(dataDir, env);
  const database = await openDatabase({ url: engine.AIRLOCK_DATABASE_URL, file: join(dataDir, 'airlock.db') });
  const db = database.sql;
  t.teardown(() => database.close());
  await saveConnection(database.sql, identityEncryptor(config), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'cid',
    service_account_json: dir.serviceAccount as unknown as Record<string, unknown>,
    delegated_admin_email: `admin@${dir.domain}`,
  });
  const job = async () =>
    (await dbRow(db, 'SELECT id, status, owner_pid, error FROM directory_sync_jobs ORDER BY id DESC LIMIT 1')) as
      { id: number; status: string; owner_pid: number; error: string | null } | undefined;
  return { dir, env, config, db, job };
}

t.test(
  'a daemon starting while the CLI runs a sync leaves the live job alone; the CLI records its result',
  async (t) => {
    const { dir, env, config, job } = await slowDirectory(t, 25, 4, 50);
    // Slow directory: the CLI's run lasts a few seconds.
    dir.latencyMs = 800;
    const cli = spawn(process.execPath, [MAIN, 'sync-directory', '--json'], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    cli.stdout.on('data', (d: Buffer) => (stdout += d));
    const exited = new Promise<number | null>((r) => cli.on('close', r));
    await waitFor(async () => (await job())?.status === 'running', 'the CLI to claim the job');
    t.equal((await job())?.status, 'running', 'the CLI claimed the job');
    t.equal((await job())?.owner_pid, cli.pid, 'owned by the CLI process');

    // The daemon starts meanwhile (its start recovers jobs of dead processes).
    const logs = logSink();
    const daemon = await serve(config, {
      runtime: false,
      log: createLogger({ level: 'debug', destination: logs.stream }),
    });
    await daemon.close();
    t.equal((await job())?.status, 'running', 'daemon start did not fail the live job');
    t.notMatch(logs.text(), /marked failed/, 'nothing recovered');

    t.equal(await exited, 0);
    const out = JSON.parse(stdout) as { job: { id: number; status: string; result: { users_created: number } } };
    t.equal(out.job.status, 'succeeded');
    t.equal(out.job.result.users_created, 25);
    t.equal((await job())?.status, 'succeeded');
    t.equal((await job())?.error, null);
  },
);

t.test('a job left by a crashed CLI does not block the next run', async (t) => {
  const { dir, env, db, job } = await slowDirectory(t, 5, 1, 5);
  dir.latencyMs = 2000;
  const crashing = spawn(process.execPath, [MAIN, 'sync-directory'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'ignore',
  });
  const gone = new Promise((r) => crashing.on('close', r));
  await waitFor(async () => (await job())?.status === 'running', 'the crashing CLI to claim the job');
  t.equal((await job())?.owner_pid, crashing.pid);
  const stuck = (await job())!.id;
  crashing.kill('SIGKILL');
  await gone;
  dir.latencyMs = 0;
  const r = await run(['sync-directory'], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /marked 1 directory-sync job\(s\) failed whose process had stopped/);
  const failed = (await dbRow(db, 'SELECT status, error FROM directory_sync_jobs WHERE id = ?', stuck)) as {
    status: string;
    error: string;
  };
  t.equal(failed.status, 'failed');
  t.equal(JSON.parse(failed.error).code, 'ERR_SYNC_INTERRUPTED');
});
