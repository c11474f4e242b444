import t from 'tap';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { start as startDirectory } from '../../../emulator/directory.js';
import { openDatabase } from '../../../core/index.js';
import { createOrGetRunningJob, identityEncryptor, saveConnection } from '../../../web/index.js';
import { tempDir, testConfig } from '../../helpers/app.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'daemon', 'main.js');

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const env = { AIRLOCK_DATA_DIR: dataDir, AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url, AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl, AIRLOCK_LOG_LEVEL: 'silent' };
  const config = testConfig(dataDir, env);
  const db = await openDatabase(join(dataDir, 'airlock.db'));
  const conn = saveConnection(db, identityEncryptor(config), {
    provider: 'google', issuer: 'https://accounts.google.com', client_id: 'cid',
    service_account_json: dir.serviceAccount as unknown as Record<string, unknown>, delegated_admin_email: `admin@${dir.domain}`,
  });
  db.close();

  const r = await run(['sync-directory', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { job: { status: string; trigger: string; result: { users_created: number; memberships_added: number } } };
  t.equal(out.job.status, 'succeeded');
  t.equal(out.job.trigger, 'manual');
  t.equal(out.job.result.users_created, 25);
  t.equal(out.job.result.memberships_added, 50);
  t.match(r.stderr, /members: 4\/4/, 'progress printed');

  const again = await run(['sync_directory'], env);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /rows written 0/, 'alias works; nothing to write the second time');

  // A job already running for the connection (e.g. in `serve`): the command reports it, runs nothing.
  const db2 = await openDatabase(join(dataDir, 'airlock.db'));
  t.teardown(() => db2.close());
  const { job } = createOrGetRunningJob(db2, conn.id, 'manual', null);
  const busy = await run(['sync-directory'], env);
  t.equal(busy.code, 1);
  t.match(busy.stderr, new RegExp(`already running .*job ${job.id}`));
});
