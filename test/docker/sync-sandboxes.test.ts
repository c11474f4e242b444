/**
 * `airlock sync-directory` ends the live sandboxes of the users it deactivates through the running
 * daemon's control socket (`kill-user`), as `serve` does in-process: real containers, the real
 * runtime (fixtures/runtime-proc.js) and the CLI as a child process against the directory emulator.
 */
import t from 'tap';
import { join } from 'node:path';
import { loadConfig } from '../../core/index.js';
import { controlRequest } from '../../daemon/runtime/control-api.js';
import { start as startDirectory } from '../../emulator/directory.js';
import { identityEncryptor, saveConnection } from '../../web/index.js';
import { dataDir, dockerOrSkip, ensureTestImage, runCli, startRuntimeProc, sweep, uniqueOwner } from './helpers.js';
import { openDatabase } from '../../domain/db/index.js';
import { dbRow } from '../helpers/db.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

const cli = runCli;
const startProc = startRuntimeProc;

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('sync-directory ends the live sandboxes of users it deactivates, through the daemon', async (t) => {
    const dir = dataDir(t);
    const owner = uniqueOwner('sync');
    t.teardown(() => sweep(docker, owner));
    const emu = await startDirectory();
    t.teardown(() => emu.close());
    const a = emu.addUser({ primaryEmail: `a@${emu.domain}` });
    const b = emu.addUser({ primaryEmail: `b@${emu.domain}` });
    const env = {
      AIRLOCK_DATA_DIR: dir,
      AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: emu.url,
      AIRLOCK_GOOGLE_TOKEN_URL: emu.tokenUrl,
      AIRLOCK_LOG_LEVEL: 'warn',
    };
    const database = await openDatabase({ file: join(dir, 'airlock.db') });
    const db = database.sql;
    t.teardown(() => database.close());
    await saveConnection(database.sql, identityEncryptor(loadConfig(env)), {
      provider: 'google',
      issuer: 'https://accounts.google.com',
      client_id: 'cid',
      service_account_json: JSON.stringify(emu.serviceAccount),
      delegated_admin_email: `admin@${emu.domain}`,
    });
    const first = await cli(env, ['sync-directory']);
    t.equal(first.code, 0, first.stderr);
    const idOf = async (email: string) =>
      ((await dbRow(db, 'SELECT id FROM users WHERE email = ?', email)) as { id: number }).id;
    const [ua, ub] = [await idOf(a.primaryEmail), await idOf(b.primaryEmail)];

    // The daemon runs a warm sandbox for each user.
    const p = startProc(dir, image, owner);
    t.teardown(() => void p.child.kill('SIGKILL'));
    await p.ready;
    const sa = await p.prompt('sess-a', 'hello', ua);
    const sb = await p.prompt('sess-b', 'hello', ub);
    t.equal(sa.stop_reason, 'end_turn', sa.error ?? 'turn a');
    t.equal(sb.stop_reason, 'end_turn', sb.error ?? 'turn b');

    // The control command checks its argument.
    await t.rejects(controlRequest(dir, { cmd: 'kill-user', userId: 0 }), { code: 'ERR_CLI_USAGE' });

    // a is suspended in the directory; the CLI sync deactivates a and ends a's sandbox at once.
    a.suspended = true;
    const r = await cli(env, ['sync-directory']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /users \+0 ~0 -1, .*sandboxes ended 1/);
    t.match(r.stderr, new RegExp(`ended 1 live sandbox\\(es\\) of deactivated user ${ua}`));
    await t.rejects(
      docker.getContainer(sa.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      "a's container is gone",
    );
    t.equal((await docker.getContainer(sb.containerId!).inspect()).State.Running, true, "b's sandbox keeps running");
    const list = (await controlRequest(dir, { cmd: 'ls' })) as { sessionId: string | null; userId?: number }[];
    t.same(
      list.filter((s) => s.sessionId).map((s) => s.sessionId),
      ['sess-b'],
      'the daemon no longer lists a session of a',
    );
    const job = (await dbRow(db, 'SELECT status, result FROM directory_sync_jobs ORDER BY id DESC LIMIT 1')) as {
      status: string;
      result: string;
    };
    t.equal(job.status, 'succeeded');
    t.equal((JSON.parse(job.result) as { sandboxes_ended: number }).sandboxes_ended, 1, 'recorded in the job result');
  });
}
