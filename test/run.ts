/**
 * `npm test`: the whole suite on embedded SQLite, then the store and integration tests again on
 * PostgreSQL, then the sandbox's Docker tests again under gVisor (runsc; pass 3, below). A throwaway PostgreSQL cluster is started for the second pass from the machine's
 * `postgresql` package (or AIRLOCK_TEST_POSTGRES_URL names an existing server to create test
 * databases on) and removed at the end. Without PostgreSQL the second pass is skipped with the
 * reason printed — except under CI=true, where that is a failure. Arguments (test files) narrow
 * both passes. The whole-suite run (no arguments) starts with `npm run lint`, counted as one check.
 * The last line is tap's summary format with every pass (and the lint check) added up.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { pgUnavailable, startPgCluster, type PgCluster } from './helpers/postgres.js';

/** Tests that run on both engines (store modules and everything that talks to the database). */
const BOTH_ENGINES = [
  'dist/test/integration/db-engines.test.js',
  'dist/test/integration/fleet-store.test.js',
  'dist/test/integration/fleet-auth.test.js',
  'dist/test/integration/fleet-forward.test.js',
  'dist/test/integration/fleet-replay.test.js',
  'dist/test/integration/data-access-migration.test.js',
  'dist/test/integration/data-access-store.test.js',
  'dist/test/integration/data-access-system-tables.test.js',
  // chat and memories (domain/chat/store.ts, domain/memories.ts)
  'dist/test/integration/chat-store.test.js',
  'dist/test/integration/chat-models-store.test.js',
  'dist/test/integration/chat-models-api.test.js',
  // the chat and memory routes over HTTP
  'dist/test/integration/chat.test.js',
  'dist/test/integration/chat-turns.test.js',
  'dist/test/integration/chat-model.test.js',
  'dist/test/integration/chat-anthropic.test.js',
  'dist/test/integration/chat-sandbox-failure.test.js',
  'dist/test/integration/chat-context.test.js',
  'dist/test/integration/chat-budget.test.js',
  // a held send's preview and the approvals of stored turns (domain/chat/approvals.ts)
  'dist/test/integration/mail-approval-preview.test.js',
  'dist/test/integration/memory.test.js',
  // files uploaded into a chat (owner checks over the chat store)
  'dist/test/integration/uploads.test.js',
  'dist/test/integration/error-body.test.js',
  // login, sessions, the login limiter, accounts, users
  'dist/test/integration/auth.test.js',
  'dist/test/integration/account.test.js',
  'dist/test/integration/admin-users.test.js',
  'dist/test/integration/tokens.test.js',
  'dist/test/integration/cli.test.js',
  // data access and identity over HTTP, every route's access matrix
  'dist/test/integration/data-access-api.test.js',
  'dist/test/integration/security-matrix.test.js',
  'dist/test/integration/security-web.test.js',
  'dist/test/integration/openapi.test.js',
  // identity, organisations, SSO and the directory client; the send policy's admin API
  'dist/test/integration/identity/admin-api.test.js',
  'dist/test/integration/identity/admin-audit.test.js',
  'dist/test/integration/identity/directory-client.test.js',
  'dist/test/integration/identity/directory-sync.test.js',
  'dist/test/integration/identity/directory-sync-jobs.test.js',
  'dist/test/integration/identity/sync-cli.test.js',
  'dist/test/integration/identity/org-admin.test.js',
  'dist/test/integration/identity/sso.test.js',
  'dist/test/integration/mail-policy-api.test.js',
  'dist/test/integration/mail-gate.test.js',
  'dist/test/integration/mail-rate.test.js',
  // serve itself on the engine: /metrics and the proxy-trust settings
  'dist/test/integration/metrics.test.js',
  'dist/test/integration/serve-proxy.test.js',
];
const ALL = ['dist/test/**/*.test.js'];

/**
 * Docker tests that run a second time with the sandboxes under gVisor (AIRLOCK_SANDBOX_RUNTIME=runsc):
 * the hardening and token isolation, chat end to end, the hostile table from inside, workspaces
 * and quotas, runtime selection, adoption after a SIGKILL and the operator CLI. The engine: AIRLOCK_TEST_RUNSC_SOCKET (CI starts a second dockerd with runsc), else
 * the default engine when it has runsc registered as docs/security.md says. Without one the
 * pass is skipped with the reason, except under CI=true, where that is a failure.
 */
const RUNSC_FILES = [
  'dist/test/docker/sandbox.test.js',
  'dist/test/docker/sandbox-lifecycle.test.js',
  'dist/test/docker/chat-e2e.test.js',
  'dist/test/docker/hostile-proxy.test.js',
  'dist/test/docker/workspace.test.js',
  'dist/test/docker/workspace-quota.test.js',
  'dist/test/docker/runtime-select.test.js',
  'dist/test/docker/adopt-cli.test.js',
];

/** The socket of an engine that can run runsc sandboxes, or why there is none. */
async function runscEngine(): Promise<{ socket: string } | { why: string }> {
  const { default: Docker } = await import('dockerode');
  const { checkRuntime } = await import('../daemon/runtime/sandbox-runtime.js');
  const candidates = [process.env.AIRLOCK_TEST_RUNSC_SOCKET, '/var/run/docker.sock'].filter((x): x is string => !!x);
  const problems: string[] = [];
  for (const socket of candidates) {
    try {
      const info = (await new Docker({ socketPath: socket }).info()) as { Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }> };
      const c = checkRuntime(info.Runtimes, 'runsc');
      if (c.ok) return { socket };
      problems.push(`${socket}: ${c.problem}`);
    } catch (err) {
      problems.push(`${socket}: ${(err as Error).message}`);
    }
  }
  return { why: problems.join('; ') };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface Tally {
  total: number;
  pass: number;
  fail: number;
}

function tap(files: string[], env: NodeJS.ProcessEnv, label: string): Promise<Tally & { code: number }> {
  process.stdout.write(`\n# ${label}\n`);
  return new Promise((resolve) => {
    const child = spawn('npx', ['tap', ...files], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let last = '';
    let buf = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      buf += chunk.toString('utf8');
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) if (/^# \{ total:/.test(l)) last = l;
    });
    child.on('close', (code) => {
      if (/^# \{ total:/.test(buf)) last = buf;
      const n = (k: string) => Number(new RegExp(`${k}: (\\d+)`).exec(last)?.[1] ?? 0);
      resolve({ total: n('total'), pass: n('pass'), fail: n('fail') || (code ? 1 : 0), code: code ?? 1 });
    });
  });
}

/**
 * `npm run lint` (ESLint + Prettier's check, docs/architecture.md "Lint and format") as one check of
 * the whole-suite run: it counts as 1 test in the tally, and a finding fails the run.
 */
function lint(): Promise<Tally & { code: number }> {
  process.stdout.write('\n# lint: npm run lint\n');
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'lint'], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('close', (code) => {
      const ok = code === 0;
      process.stdout.write(`${ok ? 'ok' : 'not ok'} 1 - npm run lint\n`);
      resolve({ total: 1, pass: ok ? 1 : 0, fail: ok ? 0 : 1, code: ok ? 0 : 1 });
    });
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  // The whole suite starts with the lint check (a run narrowed to files does not lint).
  const linted = args.length ? { total: 0, pass: 0, fail: 0, code: 0 } : await lint();
  // One throwaway cluster for both passes: pass 1 needs it too (the fleet and fault tests).
  let cluster: PgCluster | undefined;
  let url = process.env.AIRLOCK_TEST_POSTGRES_URL;
  const why = url ? null : pgUnavailable();
  if (why) process.stdout.write(`\n# PostgreSQL unavailable: ${why}\n`);
  else if (!url) {
    cluster = startPgCluster(await freePort());
    url = cluster.url;
  }
  try {
    const pgEnv = url ? { AIRLOCK_TEST_POSTGRES_URL: url } : {};
    const first = await tap(args.length ? args : ALL, { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'sqlite' }, 'pass 1: embedded SQLite');
    const both = args.length ? args.filter((a) => BOTH_ENGINES.includes(a)) : BOTH_ENGINES;
    let second: Tally & { code: number } = { total: 0, pass: 0, fail: 0, code: 0 };
    if (both.length && !url) {
      process.stdout.write(`\n# pass 2 (PostgreSQL) skipped: ${why}\n`);
      if (process.env.CI === 'true') second = { total: 1, pass: 0, fail: 1, code: 1 };
    } else if (both.length) {
      second = await tap(both, { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'postgres' }, 'pass 2: PostgreSQL');
    }
    const runscFiles = args.length ? args.filter((a) => RUNSC_FILES.includes(a)) : RUNSC_FILES;
    let third: Tally & { code: number } = { total: 0, pass: 0, fail: 0, code: 0 };
    if (runscFiles.length) {
      const engine = await runscEngine();
      if ('why' in engine) {
        process.stdout.write(`\n# pass 3 (runsc) skipped: no engine with runsc: ${engine.why}\n`);
        if (process.env.CI === 'true') third = { total: 1, pass: 0, fail: 1, code: 1 };
      } else {
        third = await tap(runscFiles, { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'sqlite', AIRLOCK_TEST_DOCKER_SOCKET: engine.socket, AIRLOCK_SANDBOX_RUNTIME: 'runsc' }, `pass 3: sandboxes under gVisor (runsc, engine ${engine.socket})`);
      }
    }
    const total = linted.total + first.total + second.total + third.total;
    const pass = linted.pass + first.pass + second.pass + third.pass;
    const fail = linted.fail + first.fail + second.fail + third.fail;
    process.stdout.write(`\n# all passes\n# { total: ${total}, pass: ${pass}, fail: ${fail} }\n`);
    return linted.code || first.code || second.code || third.code ? 1 : 0;
  } finally {
    cluster?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`test runner: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
