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
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { sep } from 'node:path';
import { pgUnavailable, startPgCluster, type PgCluster } from './helpers/postgres.js';

/**
 * Pass 2 runs every test under dist/test/integration/ again on PostgreSQL: a new integration test
 * is on both engines without being listed anywhere. The exceptions are the files below, each with
 * its reason: they never open Airlock's database, or they pick their engine themselves (pass 2
 * would repeat pass 1). The list is checked: on pass 1 a listed file that opens a database on the
 * pass's engine through test/helpers/db.ts fails (AIRLOCK_TEST_PASS_1_ONLY).
 * Unit, browser and Docker tests run on SQLite only (the Docker ones again under gVisor, pass 3).
 */
const BOTH_ENGINES_DIR = 'dist/test/integration/';
const PASS_1_ONLY: Readonly<Record<string, string>> = {
  'agent-child.test.js': 'the agent child process through the TurnRunner seam: no web app, no database',
  'agent-idle.test.js': 'the agent child and its MCP servers as processes: no database',
  'agent-snapshot.test.js': "builds and starts the agent's V8 startup snapshot: no database",
  'charts.test.js': 'the chart tools over MCP: no database',
  'data-access-filter-messages.test.js': 'a property of the row-filter checker (pure functions): no database',
  'data-access-postgres.test.js': "the compiler's PostgreSQL dialect against a server of its own (a data source, not Airlock's database)",
  'data-access-property.test.js': "the compiler's SQLite dialect against an in-memory SQLite data source, not Airlock's database",
  'db-copy.test.js': 'copies a SQLite install into a PostgreSQL database of its own on either pass: pass 2 would repeat pass 1',
  'db-fault.test.js': 'stops and restarts a PostgreSQL cluster of its own on either pass: pass 2 would repeat pass 1',
  'demo.test.js': '`airlock demo` in its own data folder with no database URL: its SQLite is not the engine under test',
  'file-table-tool.test.js': 'the file and table tools over MCP: no database',
  'google-emulator.test.js': 'the Google API emulator on its own: no database',
  'mailbox-page.test.js': "the emulator's mailbox page in a browser: no database",
  'protocol-boundaries.test.js': 'malformed messages at the sandbox-protocol boundaries (processes and sockets): no database',
  'proxy-encoding.test.js': 'the credential proxy on its own: no database',
  'proxy-hostile.test.js': 'the credential proxy on its own: no database',
  'proxy-mail-strict.test.js': 'the credential proxy on its own: no database',
  'proxy-tools.test.js': 'the credential proxy and the tools over MCP: no database',
  'proxy.test.js': 'the credential proxy on its own: no database',
  'security-proxy.test.js': 'the credential proxy on its own: no database',
  'supervisor.test.js': 'the in-sandbox supervisor as a process: no database',
  'transcript-wire.test.js': 'the transcript wire format: no database',
  'workspace-tools.test.js': 'the workspace tools over MCP: no database',
};

/** Integration test files (under `dir`, recursively) that run on both engines. */
function bothEngineFiles(dir = BOTH_ENGINES_DIR): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((f) => `${dir}${f.split(sep).join('/')}`)
    .filter((f) => f.endsWith('.test.js') && !(f.slice(dir.length) in PASS_1_ONLY))
    .sort();
}

/** Whether `file` (as given on the command line) runs on both engines. */
function onBothEngines(file: string): boolean {
  const f = file.split(sep).join('/').replace(/^\.\//, '');
  return f.startsWith(BOTH_ENGINES_DIR) && f.endsWith('.test.js') && !(f.slice(BOTH_ENGINES_DIR.length) in PASS_1_ONLY);
}

/**
 * Unit, conformance and integration tests start no container and no browser: they run two files
 * at a time (AIRLOCK_TEST_JOBS, default 2). tap's own default on a 2-core machine is one (it keeps
 * a core free), which left the machine mostly waiting. The Docker and browser tests stay one at a
 * time: they load the machine with containers and chromium, and several check what a page drew
 * or how a sandbox behaved while it ran.
 */
const PARALLEL_DIRS = ['dist/test/unit/', 'dist/test/conformance/', 'dist/test/integration/'];
const JOBS = Math.max(1, Number(process.env.AIRLOCK_TEST_JOBS ?? 2) || 1);
const inParallelDir = (f: string) => PARALLEL_DIRS.some((d) => f.split(sep).join('/').replace(/^\.\//, '').startsWith(d));

/**
 * Docker tests that run a second time with the sandboxes under gVisor (AIRLOCK_SANDBOX_RUNTIME=runsc):
 * the hardening and token isolation, chat end to end, the hostile table from inside, workspaces
 * and quotas, runtime selection, adoption after a SIGKILL and the operator CLI. The engine: AIRLOCK_TEST_RUNSC_SOCKET (CI starts a second dockerd with runsc), else
 * the default engine when it has runsc registered as docs/security.md says. Without one the
 * pass is skipped with the reason, except under CI=true, where that is a failure.
 */
const RUNSC_FILES = [
  'dist/test/docker/sandbox.test.js',
  'dist/test/docker/sandbox-isolation.test.js',
  'dist/test/docker/sandbox-lifecycle.test.js',
  'dist/test/docker/chat-e2e.test.js',
  'dist/test/docker/chat-e2e-sandbox-lost.test.js',
  'dist/test/docker/hostile-proxy.test.js',
  'dist/test/docker/workspace.test.js',
  'dist/test/docker/workspace-quota.test.js',
  'dist/test/docker/runtime-select.test.js',
  'dist/test/docker/adopt-cli.test.js',
  'dist/test/docker/run-python.test.js',
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

function tap(files: string[], env: NodeJS.ProcessEnv, label: string, jobs = 1): Promise<Tally & { code: number }> {
  process.stdout.write(`\n# ${label}\n`);
  return new Promise((resolve) => {
    const child = spawn('npx', ['tap', `--jobs=${jobs}`, ...files], { env, stdio: ['ignore', 'pipe', 'inherit'] });
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

/** Pass 1: the files without containers or a browser, JOBS at a time, then the others one at a time. */
async function passOne(args: string[], env: NodeJS.ProcessEnv): Promise<Tally & { code: number }> {
  const files = args.length ? args : allFiles();
  const parallel = files.filter(inParallelDir);
  const serial = files.filter((f) => !inParallelDir(f));
  const runs: (Tally & { code: number })[] = [];
  if (parallel.length) runs.push(await tap(parallel, env, `pass 1: embedded SQLite, unit, conformance and integration (${JOBS} at a time)`, JOBS));
  if (serial.length) runs.push(await tap(serial, env, 'pass 1: embedded SQLite, Docker and browser (one at a time)'));
  return runs.reduce((a, b) => ({ total: a.total + b.total, pass: a.pass + b.pass, fail: a.fail + b.fail, code: a.code || b.code }), { total: 0, pass: 0, fail: 0, code: 0 });
}

/** Every test file under dist/test/, sorted. */
function allFiles(): string[] {
  const dir = 'dist/test/';
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((f) => `${dir}${f.split(sep).join('/')}`)
    .filter((f) => f.endsWith('.test.js'))
    .sort();
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
    const pass1Only = Object.keys(PASS_1_ONLY)
      .map((f) => BOTH_ENGINES_DIR + f)
      .join(',');
    const first = await passOne(args, { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'sqlite', AIRLOCK_TEST_PASS_1_ONLY: pass1Only });
    const both = args.length ? args.filter(onBothEngines) : bothEngineFiles();
    let second: Tally & { code: number } = { total: 0, pass: 0, fail: 0, code: 0 };
    if (both.length && !url) {
      process.stdout.write(`\n# pass 2 (PostgreSQL) skipped: ${why}\n`);
      if (process.env.CI === 'true') second = { total: 1, pass: 0, fail: 1, code: 1 };
    } else if (both.length) {
      second = await tap(both, { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'postgres' }, `pass 2: PostgreSQL (${JOBS} at a time)`, JOBS);
    }
    const runscFiles = args.length ? args.filter((a) => RUNSC_FILES.includes(a)) : RUNSC_FILES;
    let third: Tally & { code: number } = { total: 0, pass: 0, fail: 0, code: 0 };
    if (runscFiles.length) {
      const engine = await runscEngine();
      if ('why' in engine) {
        process.stdout.write(`\n# pass 3 (runsc) skipped: no engine with runsc: ${engine.why}\n`);
        if (process.env.CI === 'true') third = { total: 1, pass: 0, fail: 1, code: 1 };
      } else {
        third = await tap(
          runscFiles,
          { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'sqlite', AIRLOCK_TEST_DOCKER_SOCKET: engine.socket, AIRLOCK_SANDBOX_RUNTIME: 'runsc' },
          `pass 3: sandboxes under gVisor (runsc, engine ${engine.socket})`,
        );
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
