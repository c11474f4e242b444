/**
 * The `airlock` command as an operator runs it (a child process of dist/daemon/main.js):
 * --help, configuration errors listed all at once, create-superuser reading the password from
 * stdin, serve shutting down cleanly on SIGTERM, and the demo's message without Docker.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { verifyPassword } from '../../core/index.js';
import { getCredentials } from '../../domain/users.js';
import { tempDir } from '../helpers/app.js';
import { ROOT } from '../docker/helpers.js';
import { openDatabase } from '../../domain/db/index.js';
import { testDatabaseUrl } from '../helpers/db.js';

const CLI = join(ROOT, 'dist', 'daemon', 'main.js');
const SECRETS = {
  AGENT_USER_TOKEN_SECRET: 'cli-test-agent-user-token-secret',
  MCP_INTERNAL_SECRET: 'cli-test-mcp-internal-secret-012',
};

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI with only PATH and `env`; `input` goes to stdin; `onOutput` may act on the output so far. */
function cli(
  args: string[],
  env: Record<string, string>,
  opts: { input?: string; onOutput?: (out: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      opts.onOutput?.(stdout + stderr, child);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      opts.onOutput?.(stdout + stderr, child);
    });
    child.stdin.end(opts.input ?? '');
    const kill = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(kill);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

t.test('--help lists the commands', async (t) => {
  const r = await cli(['--help'], {});
  t.equal(r.code, 0);
  for (const c of ['serve', 'demo', 'create-superuser', 'sessions', 'image', 'sync-directory'])
    t.match(r.stdout, new RegExp(`\\b${c}\\b`), c);
});

t.test('serve with a bad and missing configuration exits 1 listing every problem', async (t) => {
  const dir = tempDir(t);
  const r = await cli(['serve'], { AIRLOCK_DATA_DIR: dir, AIRLOCK_PORT: 'eighty', AIRLOCK_MAX_STEPS: '0' });
  t.equal(r.code, 1);
  t.match(r.stderr, /invalid configuration/);
  for (const name of ['AIRLOCK_PORT', 'AIRLOCK_MAX_STEPS', 'AGENT_USER_TOKEN_SECRET', 'MCP_INTERNAL_SECRET'])
    t.match(r.stderr, name, `names ${name}`);
  t.equal(r.stdout, '', 'nothing started');
});

t.test('create-superuser reads the password from stdin, never echoes it', async (t) => {
  const dir = tempDir(t);
  const password = 'cli-superuser-password-42';
  // On the PostgreSQL pass the command writes to the test database the URL names.
  const url = await testDatabaseUrl(t);
  const env = { AIRLOCK_DATA_DIR: dir, ...(url ? { AIRLOCK_DATABASE_URL: url } : {}) };
  const r = await cli(['create-superuser', '--username', 'root', '--email', 'root@example.test'], env, {
    input: `${password}\n`,
  });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /created superuser root/);
  t.notOk((r.stdout + r.stderr).includes(password), 'the password is not printed');
  const database = await openDatabase({ url, file: join(dir, 'airlock.db') });
  t.teardown(() => database.close());
  const creds = (await getCredentials(database.sql, 'root'))!;
  t.equal(creds.user.is_superuser, true);
  t.ok(await verifyPassword(password, creds.passwordHash!), 'the stored hash verifies the password');
  const again = await cli(['create-superuser', '--username', 'ROOT', '--email', 'root@example.test'], env, {
    input: `${password}\n`,
  });
  t.equal(again.code, 1);
  t.match(again.stderr, /ERR_USER_EXISTS/);
  const short = await cli(['create-superuser', '--username', 'x', '--email', 'x@example.test'], env, {
    input: 'short\n',
  });
  t.equal(short.code, 1);
  t.match(short.stderr, /at least 8 characters/);
});

t.test('serve starts (no Docker engine: runtime off), answers /healthz, and stops cleanly on SIGTERM', async (t) => {
  const dir = tempDir(t);
  let url: string | undefined;
  let probed: Promise<{ status: number; body: unknown }> | undefined;
  const r = await cli(
    ['serve'],
    {
      AIRLOCK_DATA_DIR: dir,
      AIRLOCK_PORT: '0',
      AIRLOCK_LOG_LEVEL: 'info',
      AIRLOCK_DOCKER_SOCKET: join(dir, 'no-docker.sock'),
      ...SECRETS,
    },
    {
      onOutput: (out, child) => {
        const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
        if (m && !url) {
          url = m[1];
          probed = fetch(`${url}/healthz`)
            .then(async (res) => ({ status: res.status, body: (await res.json()) as unknown }))
            .finally(() => child.kill('SIGTERM'));
        }
      },
    },
  );
  t.ok(url, 'logged its URL');
  const health = await probed;
  t.equal(health?.status, 200, 'served while running');
  // The schema version the node runs with is visible to a load balancer or an operator's probe.
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  t.teardown(() => database.close());
  t.match(
    health?.body,
    { ok: true, database: 'sqlite', schema_version: database.schemaVersion, node: /\S/ },
    '/healthz: ok, engine, schema version, node id',
  );
  t.ok(database.schemaVersion >= 9, `a real schema version (${database.schemaVersion})`);
  t.equal(r.code, 0, 'exit 0 after SIGTERM');
  t.match(r.stdout + r.stderr, /docker engine unreachable/, 'says the runtime is off');
  t.match(r.stdout, /shutting down/);
  for (const s of Object.values(SECRETS)) t.notOk((r.stdout + r.stderr).includes(s), 'no secret in the output');
});

t.test('demo without a Docker engine says how to get one and exits 1', async (t) => {
  const dir = tempDir(t);
  const r = await cli(['demo'], {
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_PORT: '0',
    AIRLOCK_DOCKER_SOCKET: join(dir, 'no-docker.sock'),
  });
  t.equal(r.code, 1);
  t.match(r.stderr, /The demo needs a Docker engine, and none answered at/);
  t.match(r.stderr, /To get one/);
});
