import { start as startDirectory, type DirectoryEmulator } from '../../emulator/directory.js';
import { DirectorySyncRunner } from '../../daemon/directory-sync/index.js';
import { identityEncryptor, saveConnection, type IdpConnectionRow, type SandboxControl } from '../../web/index.js';
import type { Sql } from '../../domain/db/index.js';
import { dbRow, dbRows } from './db.js';
import { addUser, startTestApp, type PortsOf, type TestApp } from './app.js';

export interface SyncSetup {
  app: TestApp;
  dir: DirectoryEmulator;
  runner: DirectorySyncRunner;
  connection: IdpConnectionRow;
  killed: number[];
  policyChanged: number[][];
}

/**
 * The web app's sandbox and directory-sync ports for a test (TestAppOptions.services): the real
 * sync runner on the app's own database, config and log, with fast retries; `runner()` once the
 * app is made.
 */
export function syncPorts(
  sandboxes: SandboxControl,
  client: { baseDelayMs?: number; maxDelayMs?: number; maxAttempts?: number } = {},
): { services: PortsOf; runner(): DirectorySyncRunner } {
  let runner: DirectorySyncRunner | undefined;
  return {
    services: (a) => {
      runner = new DirectorySyncRunner({
        config: a.config,
        db: a.database.sql,
        log: a.log,
        sandboxes,
        client: { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 3, ...client },
      });
      return { sandboxes, directorySync: runner };
    },
    runner: () => {
      if (!runner) throw new Error('syncPorts: the app is not made yet');
      return runner;
    },
  };
}

/** The app with the directory emulator behind a google connection and the real sync runner wired. */
export async function startSync(
  t: { teardown(fn: () => unknown): void },
  opts: { groupSync?: boolean; client?: { baseDelayMs?: number; maxDelayMs?: number; maxAttempts?: number } } = {},
): Promise<SyncSetup> {
  const dir = await startDirectory();
  t.teardown(() => dir.close());
  const killed: number[] = [];
  const policyChanged: number[][] = [];
  const sandboxes: SandboxControl = {
    killForUser: (id) => void killed.push(id),
    policyChanged: (ids) => void policyChanged.push(ids),
  };
  const ports = syncPorts(sandboxes, opts.client);
  const app = await startTestApp(t, {
    services: ports.services,
    env: { AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url, AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl },
  });
  const runner = ports.runner();
  t.teardown(() => runner.idle());
  const connection = await saveConnection(app.database.sql, identityEncryptor(app.config), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'cid',
    client_secret: 'csecret',
    ...(opts.groupSync === false
      ? {}
      : { service_account_json: JSON.stringify(dir.serviceAccount), delegated_admin_email: `admin@${dir.domain}` }),
  });
  return { app, dir, runner, connection, killed, policyChanged };
}

const DATA_TABLES = [
  'users',
  'directory_users',
  'external_groups',
  'external_group_members',
  'teams',
  'team_members',
  'user_agent_policies',
  'organisation_members',
  'external_identities',
];

/** Every row of the directory-data tables, for before/after comparisons. */
export async function snapshot(db: Sql): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const tb of DATA_TABLES) out[tb] = await dbRows(db, `SELECT * FROM ${tb} ORDER BY 1, 2`);
  return out;
}

const ROOT_PW = 'root-password-123';

/** A superuser `root` (root@local.test) logged in: the client the sync API answers. */
export async function syncAdmin(s: SyncSetup) {
  await addUser(s.app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });
  const c = s.app.client();
  if ((await c.login('root', ROOT_PW)).status !== 200) throw new Error('admin login failed');
  return c;
}

/** POST a sync, wait for the runner, and return the latest job as `GET /api/identity/directory-sync` shows it. */
export async function syncOnce(s: SyncSetup, c: Awaited<ReturnType<typeof syncAdmin>>) {
  const r = await c.json('POST', '/api/identity/directory-sync', {});
  if (r.status !== 202) throw new Error(`sync POST ${r.status} ${JSON.stringify(r.body)}`);
  await s.runner.idle();
  const latest = await c.json('GET', '/api/identity/directory-sync');
  return latest.body.job;
}

/** The id of the user with `email`, or undefined. */
export const userId = async (s: SyncSetup, email: string) =>
  ((await dbRow(s.app.database.sql, 'SELECT id FROM users WHERE email = ?', email)) as { id: number } | undefined)?.id;

/** The emails of the members of the external group `groupEmail`, sorted. */
export const groupMembers = async (s: SyncSetup, groupEmail: string) =>
  (
    (await dbRows(
      s.app.database.sql,
      'SELECT u.email FROM external_group_members m JOIN external_groups g ON g.id = m.group_id JOIN users u ON u.id = m.user_id WHERE g.email = ? ORDER BY u.email',
      groupEmail,
    )) as { email: string }[]
  ).map((r) => r.email);
