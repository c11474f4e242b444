/**
 * `npm test`: the whole suite on embedded SQLite, then the store and integration tests again on
 * PostgreSQL, then the sandbox's Docker tests again under gVisor (runsc; pass 3, below). A throwaway
 * PostgreSQL cluster is started for the PostgreSQL pass from the machine's `postgresql` package (or
 * AIRLOCK_TEST_POSTGRES_URL names an existing server to create test databases on) and removed at
 * the end. Without PostgreSQL that pass is skipped with the reason printed — except under CI=true,
 * where that is a failure. The whole-suite run (no arguments) starts with `npm run lint`, counted as
 * one check. The last line is tap's summary format with every pass (and the lint check) added up.
 *
 * Arguments narrow the run (the `test:*` scripts of package.json; CONTRIBUTING.md):
 * - test files: pass 1 and, for the integration files on both engines, pass 2 (and pass 3 for the
 *   runsc files);
 * - area names (`unit`, `conformance`, `integration`, `docker`, `browser`): every file under
 *   test/<area>/ on pass 1, and the runsc pass when `docker` is named; new files are found by folder;
 * - `--pg`: only pass 2 (the integration files on PostgreSQL).
 * The runner runs from dist/ (built; `node dist/test/run.js`) or from the TypeScript sources
 * (`node --experimental-transform-types --import ./test/loader/register.js test/run.ts`, as
 * `npm run test:unit` does); from the sources it runs the `.ts` test files with the same loader.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { pgUnavailable, startPgCluster, type PgCluster } from './helpers/postgres.js';

/** Whether this runner (and so the tests it starts) runs from the TypeScript sources, not dist/. */
const FROM_SOURCES = import.meta.url.endsWith('.ts');
/** Where the test files are, and how they end, in this mode. */
const TEST_DIR = FROM_SOURCES ? 'test/' : 'dist/test/';
const EXT = FROM_SOURCES ? '.test.ts' : '.test.js';
/** The node flags a test file needs from the sources (test/loader/register.js says why). */
const NODE_ARGS = FROM_SOURCES
  ? ['--experimental-transform-types', '--import=./test/loader/register.js', '--no-warnings=ExperimentalWarning']
  : [];
/** The folders under test/ that hold test files (test/helpers and test/fakes hold none). */
const AREAS = ['unit', 'conformance', 'integration', 'docker', 'browser'];

/** A file path in this mode's form: forward slashes, no leading `./`. */
const norm = (f: string) => f.split(sep).join('/').replace(/^\.\//, '');
/** A test file's name as PASS_1_ONLY and RUNSC_FILES write it (the built `.test.js` name). */
const builtName = (f: string) => norm(f).replace(/\.test\.ts$/, '.test.js');

/**
 * Pass 2 runs every test under dist/test/integration/ again on PostgreSQL: a new integration test
 * is on both engines without being listed anywhere. The exceptions are the files below, each with
 * its reason: they never open Airlock's database, or they pick their engine themselves (pass 2
 * would repeat pass 1). The list is checked: on pass 1 a listed file that opens a database on the
 * pass's engine through test/helpers/db.ts fails (AIRLOCK_TEST_PASS_1_ONLY).
 * Unit, browser and Docker tests run on SQLite only (the Docker ones again under gVisor, pass 3).
 */
const BOTH_ENGINES_DIR = `${TEST_DIR}integration/`;
const PASS_1_ONLY: Readonly<Record<string, string>> = {
  'agent-child.test.js': 'the agent child process through the TurnRunner seam: no web app, no database',
  'agent-idle.test.js': 'the agent child and its MCP servers as processes: no database',
  'agent-snapshot.test.js': "builds and starts the agent's V8 startup snapshot: no database",
  'charts.test.js': 'the chart tools over MCP: no database',
  'data-access-filter-messages.test.js': 'a property of the row-filter checker (pure functions): no database',
  'data-access-postgres.test.js':
    "the compiler's PostgreSQL dialect against a server of its own (a data source, not Airlock's database)",
  'data-access-property.test.js':
    "the compiler's SQLite dialect against an in-memory SQLite data source, not Airlock's database",
  'db-copy.test.js':
    'copies a SQLite install into a PostgreSQL database of its own on either pass: pass 2 would repeat pass 1',
  'db-fault.test.js': 'stops and restarts a PostgreSQL cluster of its own on either pass: pass 2 would repeat pass 1',
  'demo.test.js': '`airlock demo` in its own data folder with no database URL: its SQLite is not the engine under test',
  'file-table-tool.test.js': 'the file and table tools over MCP: no database',
  'google-emulator.test.js': 'the Google API emulator on its own: no database',
  'mailbox-page.test.js': "the emulator's mailbox page in a browser: no database",
  'model-images.test.js': 'the image loader and the model adapters against scripted servers: no database',
  'model-give-up.test.js': 'the credential proxy and the egress gateway against a model server of its own: no database',
  'protocol-boundaries.test.js':
    'malformed messages at the sandbox-protocol boundaries (processes and sockets): no database',
  'proxy-encoding.test.js': 'the credential proxy on its own: no database',
  'proxy-hostile.test.js': 'the credential proxy on its own: no database',
  'proxy-mail-strict.test.js': 'the credential proxy on its own: no database',
  'proxy-tools.test.js': 'the credential proxy and the tools over MCP: no database',
  'proxy.test.js': 'the credential proxy on its own: no database',
  'security-proxy.test.js': 'the credential proxy on its own: no database',
  'supervisor.test.js': 'the in-sandbox supervisor as a process: no database',
  'transcript-wire.test.js': 'the transcript wire format: no database',
  'turn-backstop.test.js': "the daemon's turn backstop against a supervisor process of its own: no database",
  'web-listener.test.js':
    'the web listener before and after its app (an embedded SQLite file of its own): pass 2 would repeat pass 1',
  'workspace-tools.test.js': 'the workspace tools over MCP: no database',
};

/** Integration test files (under `dir`, recursively) that run on both engines. */
function bothEngineFiles(dir = BOTH_ENGINES_DIR): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((f) => `${dir}${f.split(sep).join('/')}`)
    .filter((f) => f.endsWith(EXT) && !(builtName(f.slice(dir.length)) in PASS_1_ONLY))
    .sort();
}

/** Whether `file` (as given on the command line) runs on both engines. */
function onBothEngines(file: string): boolean {
  const f = norm(file);
  return (
    f.startsWith(BOTH_ENGINES_DIR) && f.endsWith(EXT) && !(builtName(f.slice(BOTH_ENGINES_DIR.length)) in PASS_1_ONLY)
  );
}

/**
 * Unit, conformance and integration tests start no container and no browser: they run three
 * files at a time in pass 1 (AIRLOCK_TEST_JOBS, default 3; docs/architecture.md "How many at a
 * time" has the figures). tap's own default on a 2-core machine is one (it keeps a core free),
 * which left the machine mostly waiting; at two, files that sleep through a model's retries kept
 * a core idle. The Docker and browser tests stay one at a
 * time: they load the machine with containers and chromium, and several check what a page drew
 * or how a sandbox behaved while it ran.
 */
const PARALLEL_DIRS = ['unit/', 'conformance/', 'integration/'].map((d) => TEST_DIR + d);
const JOBS = Math.max(1, Number(process.env.AIRLOCK_TEST_JOBS ?? 3) || 1);
/**
 * The PostgreSQL pass beside the Docker lane: two files at a time (AIRLOCK_TEST_PG_JOBS). Its files
 * mostly wait on sockets, the database and models' bounds; one at a time it was the run's critical
 * path (its ~500 s, then the gVisor pass, against the Docker lane's ~650 s).
 */
const PG_LANE_JOBS = Math.max(1, Number(process.env.AIRLOCK_TEST_PG_JOBS ?? 2) || 1);
const inParallelDir = (f: string) => PARALLEL_DIRS.some((d) => norm(f).startsWith(d));

/**
 * Docker tests that run a second time with the sandboxes under gVisor (AIRLOCK_SANDBOX_RUNTIME=runsc):
 * the hardening and token isolation, chat end to end, the hostile table from inside, workspaces
 * and quotas, runtime selection, adoption after a SIGKILL and the operator CLI. The engine: AIRLOCK_TEST_RUNSC_SOCKET (CI starts a second dockerd with runsc), else
 * the default engine when it has runsc registered as docs/security.md says. Without one the
 * pass is skipped with the reason, except under CI=true, where that is a failure.
 */
const RUNSC_FILES = [
  'sandbox',
  'sandbox-isolation',
  'sandbox-lifecycle',
  'chat-e2e',
  'chat-e2e-sandbox-lost',
  'hostile-proxy',
  'workspace',
  'workspace-quota',
  'runtime-select',
  'adopt-cli',
  'run-python',
  'connectors-e2e',
].map((name) => `${TEST_DIR}docker/${name}${EXT}`);

/**
 * Docker files that spend most of their time waiting out the model's DEFAULT bounds (30 s of
 * silence, docs/chat.md "Bounds") with a sandbox or more: they run in a lane of their own beside
 * the other Docker and browser files (and the PostgreSQL pass), since a timer running out costs
 * the machine nothing. model-stall-many's twenty cold sandbox starts at once make that lane a
 * loaded host on purpose: its stall bounds must hold there too (docs/chat.md "Bounds").
 */
const WAITING_FILES = ['model-fault-sequence', 'model-stall-many'].map((name) => `${TEST_DIR}docker/${name}${EXT}`);

/** The socket of an engine that can run runsc sandboxes, or why there is none. */
async function runscEngine(): Promise<{ socket: string } | { why: string }> {
  const { default: Docker } = await import('dockerode');
  const { checkRuntime } = await import('../daemon/runtime/sandbox-runtime.js');
  const candidates = [process.env.AIRLOCK_TEST_RUNSC_SOCKET, '/var/run/docker.sock'].filter((x): x is string => !!x);
  const problems: string[] = [];
  for (const socket of candidates) {
    try {
      const info = (await new Docker({ socketPath: socket }).info()) as {
        Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
      };
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

/** A pass that did not run. */
const NONE: Tally & { code: number } = { total: 0, pass: 0, fail: 0, code: 0 };

/** Seconds since the runner started, for the pass headers and the closing time table. */
const T0 = Date.now();
const elapsed = () => Math.round((Date.now() - T0) / 1000);
/** Each pass's label and wall time, printed at the end (where the suite's time goes). */
const wallTimes: string[] = [];

/** Where a pass's TAP goes: stdout live, or a buffer printed whole when a concurrent lane ends. */
type Out = (text: string | Buffer) => void;
const live: Out = (text) => process.stdout.write(text);

function tap(
  files: string[],
  env: NodeJS.ProcessEnv,
  label: string,
  jobs = 1,
  out: Out = live,
): Promise<Tally & { code: number }> {
  const started = Date.now();
  out(`\n# ${label} (at ${elapsed()} s)\n`);
  return new Promise((resolve) => {
    const nodeArgs = NODE_ARGS.map((a) => `--node-arg=${a}`);
    const child = spawn('npx', ['tap', `--jobs=${jobs}`, ...nodeArgs, ...files], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let last = '';
    let buf = '';
    const times: [string, number][] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      out(chunk);
      buf += chunk.toString('utf8');
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        if (/^# \{ total:/.test(l)) last = l;
        const m = /^(?:not )?ok \d+ - (\S+) # time=([\d.]+)ms/.exec(l);
        if (m) times.push([m[1], Number(m[2])]);
      }
    });
    child.on('close', (code) => {
      if (/^# \{ total:/.test(buf)) last = buf;
      out(slowest(times));
      wallTimes.push(`${label}: ${Math.round((Date.now() - started) / 1000)} s`);
      const n = (k: string) => Number(new RegExp(`${k}: (\\d+)`).exec(last)?.[1] ?? 0);
      resolve({ total: n('total'), pass: n('pass'), fail: n('fail') || (code ? 1 : 0), code: code ?? 1 });
    });
  });
}

/** The slowest files of a pass as TAP comments: where the suite's time goes (CONTRIBUTING.md, "Profiling"). */
function slowest(times: [string, number][], n = 8): string {
  if (!times.length) return '';
  const top = [...times].sort((a, b) => b[1] - a[1]).slice(0, n);
  return `# slowest files: ${top.map(([f, ms]) => `${f} ${(ms / 1000).toFixed(1)} s`).join(', ')}\n`;
}

/**
 * `npm run lint` (ESLint + Prettier's check, docs/architecture.md "Lint and format") as one check of
 * the whole-suite run: it counts as 1 test in the tally, and a finding fails the run.
 */
function lint(): Promise<Tally & { code: number }> {
  process.stdout.write('\n# lint: npm run lint\n');
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'lint'], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('close', (code) => {
      wallTimes.push(`lint: ${Math.round((Date.now() - started) / 1000)} s`);
      const ok = code === 0;
      process.stdout.write(`${ok ? 'ok' : 'not ok'} 1 - npm run lint\n`);
      resolve({ total: 1, pass: ok ? 1 : 0, fail: ok ? 0 : 1, code: ok ? 0 : 1 });
    });
  });
}

/** Sums tallies; the exit code is the first failing one's. */
function sum(runs: (Tally & { code: number })[]): Tally & { code: number } {
  return runs.reduce(
    (a, b) => ({ total: a.total + b.total, pass: a.pass + b.pass, fail: a.fail + b.fail, code: a.code || b.code }),
    { total: 0, pass: 0, fail: 0, code: 0 },
  );
}

/** Pass 1's first half: the files without containers or a browser, JOBS at a time. */
async function passOneParallel(files: string[], env: NodeJS.ProcessEnv): Promise<Tally & { code: number }> {
  const parallel = files.filter(inParallelDir);
  if (!files.length) process.stdout.write('\n# pass 1: no test files\n');
  return parallel.length
    ? tap(parallel, env, `pass 1: embedded SQLite, unit, conformance and integration (${JOBS} at a time)`, JOBS)
    : NONE;
}

/**
 * Pass 1's second half: the Docker and browser files, one at a time; with `overlap`, the files that
 * wait out the model's bounds (WAITING_FILES) run meanwhile in a lane of their own, its TAP to `held`.
 */
async function passOneSerial(
  files: string[],
  env: NodeJS.ProcessEnv,
  overlap: boolean,
  held: Out,
): Promise<Tally & { code: number }> {
  const serial = files.filter((f) => !inParallelDir(f));
  const waiting = overlap ? serial.filter((f) => WAITING_FILES.includes(norm(f))) : [];
  const rest = serial.filter((f) => !waiting.includes(f));
  const [a, b] = await Promise.all([
    rest.length ? tap(rest, env, 'pass 1: embedded SQLite, Docker and browser (one at a time)') : NONE,
    waiting.length
      ? tap(
          waiting,
          env,
          "pass 1: embedded SQLite, the Docker files that wait out the model's bounds (beside)",
          1,
          held,
        )
      : NONE,
  ]);
  return sum([a, b]);
}

/** Every test file under test/<area>/ (of this mode) for each area, sorted. */
function filesOf(areas: string[]): string[] {
  return areas
    .flatMap((a) => {
      const dir = `${TEST_DIR}${a}/`;
      return existsSync(dir) ? (readdirSync(dir, { recursive: true }) as string[]).map((f) => `${dir}${norm(f)}`) : [];
    })
    .filter((f) => f.endsWith(EXT))
    .sort();
}

/** What the command line asks for: the whole suite, some areas, some files, or the PostgreSQL pass. */
interface Selection {
  whole: boolean;
  pgOnly: boolean;
  files: string[];
  /** Whether the integration files among `files` run again on PostgreSQL (not for an area run: `test:pg` is that). */
  pg: boolean;
  runsc: boolean;
}

function select(argv: string[]): Selection {
  const pgOnly = argv.includes('--pg');
  const rest = argv.filter((a) => a !== '--pg');
  const unknown = rest.filter((a) => a.startsWith('--'));
  if (unknown.length) throw new Error(`unknown option ${unknown.join(' ')} (files, areas ${AREAS.join(' ')}, or --pg)`);
  const areas = rest.filter((a) => AREAS.includes(a));
  const files = rest.filter((a) => !AREAS.includes(a));
  if (!rest.length) return { whole: !pgOnly, pgOnly, files: pgOnly ? [] : filesOf(AREAS), pg: true, runsc: !pgOnly };
  return {
    whole: false,
    pgOnly,
    files: [...filesOf(areas), ...files],
    pg: pgOnly || files.length > 0,
    runsc: areas.includes('docker') || files.length > 0,
  };
}

/** Pass 2: the integration files on PostgreSQL (a failure under CI=true when there is none). */
async function pgPass(
  files: string[],
  env: NodeJS.ProcessEnv,
  haveUrl: boolean,
  out: Out,
  jobs: number,
): Promise<Tally & { code: number }> {
  if (!haveUrl) {
    out(`\n# pass 2 (PostgreSQL) skipped: ${pgUnavailable() ?? 'no server'}\n`);
    return process.env.CI === 'true' ? { total: 1, pass: 0, fail: 1, code: 1 } : NONE;
  }
  return tap(files, { ...env, AIRLOCK_TEST_ENGINE: 'postgres' }, `pass 2: PostgreSQL (${jobs} at a time)`, jobs, out);
}

/** Pass 3: the sandbox files again under gVisor, on the engine that has runsc. */
async function runscPass(files: string[], env: NodeJS.ProcessEnv, out: Out): Promise<Tally & { code: number }> {
  const engine = await runscEngine();
  if ('why' in engine) {
    out(`\n# pass 3 (runsc) skipped: no engine with runsc: ${engine.why}\n`);
    return process.env.CI === 'true' ? { total: 1, pass: 0, fail: 1, code: 1 } : NONE;
  }
  const runscEnv = {
    ...env,
    AIRLOCK_TEST_ENGINE: 'sqlite',
    AIRLOCK_TEST_DOCKER_SOCKET: engine.socket,
    AIRLOCK_SANDBOX_RUNTIME: 'runsc',
  };
  return tap(files, runscEnv, `pass 3: sandboxes under gVisor (runsc, engine ${engine.socket})`, 1, out);
}

/**
 * The route contract check (web/contract.ts): every web app the tests start, in process or as
 * `airlock serve`, appends each answer that disagrees with its route definition to one file; after
 * the passes that file is one check, failed with each disagreement named.
 */
function contractLog(): { file: string; check: () => Tally & { code: number } } {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-contract-'));
  const file = join(dir, 'contract.jsonl');
  process.env.AIRLOCK_CONTRACT_LOG = file;
  return {
    file,
    check: () => {
      const lines = existsSync(file) ? [...new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))] : [];
      rmSync(dir, { recursive: true, force: true });
      if (!lines.length) {
        process.stdout.write('\n# route contract: every answer agreed with its route definition\n');
        return { total: 1, pass: 1, fail: 0, code: 0 };
      }
      process.stdout.write(
        `\nnot ok - route contract: ${lines.length} answers disagree with their route definitions (web/routes/)\n${lines.map((l) => `#   ${l}`).join('\n')}\n`,
      );
      return { total: 1, pass: 0, fail: 1, code: 1 };
    },
  };
}

async function main(): Promise<number> {
  const sel = select(process.argv.slice(2));
  const contract = contractLog();
  // The whole suite starts with the lint check (a narrowed run does not lint).
  const linted = sel.whole ? await lint() : NONE;
  // One throwaway cluster for both passes: pass 1 needs it too (the fleet and fault tests). The
  // unit tests open no PostgreSQL database: `npm run test:unit` starts none.
  const needsPg = sel.pgOnly || sel.files.some((f) => !norm(f).startsWith(`${TEST_DIR}unit/`));
  let cluster: PgCluster | undefined;
  let url = process.env.AIRLOCK_TEST_POSTGRES_URL;
  const why = url || !needsPg ? null : pgUnavailable();
  if (why) process.stdout.write(`\n# PostgreSQL unavailable: ${why}\n`);
  else if (!url && needsPg) {
    cluster = startPgCluster(await freePort());
    url = cluster.url;
  }
  try {
    const pgEnv = url ? { AIRLOCK_TEST_POSTGRES_URL: url } : {};
    const pass1Only = Object.keys(PASS_1_ONLY)
      .map((f) => BOTH_ENGINES_DIR + f.replace(/\.test\.js$/, EXT))
      .join(',');
    const env1 = { ...process.env, ...pgEnv, AIRLOCK_TEST_ENGINE: 'sqlite', AIRLOCK_TEST_PASS_1_ONLY: pass1Only };
    const first = sel.pgOnly ? NONE : await passOneParallel(sel.files, env1);
    const both = !sel.pg
      ? []
      : sel.whole || (sel.pgOnly && !sel.files.length)
        ? bothEngineFiles()
        : sel.files.filter(onBothEngines);
    const runscFiles = sel.runsc ? sel.files.filter((f) => RUNSC_FILES.includes(norm(f))) : [];
    // Two lanes: the Docker and browser files (mostly waiting on containers, a browser, a model's
    // bounds) beside the PostgreSQL pass and then the gVisor pass. The second lane's TAP is held
    // and printed whole when the first ends, so the log reads one pass at a time.
    const overlap = process.env.AIRLOCK_TEST_OVERLAP !== '0';
    const held: (string | Buffer)[] = [];
    const laneOut: Out = overlap ? (text) => held.push(text) : live;
    const laneB = async (): Promise<(Tally & { code: number })[]> => {
      const second = both.length
        ? await pgPass(both, { ...process.env, ...pgEnv }, !!url, laneOut, overlap ? PG_LANE_JOBS : JOBS)
        : NONE;
      const third = runscFiles.length ? await runscPass(runscFiles, { ...process.env, ...pgEnv }, laneOut) : NONE;
      return [second, third];
    };
    const waitingHeld: (string | Buffer)[] = [];
    const serialPass = () =>
      sel.pgOnly ? NONE : passOneSerial(sel.files, env1, overlap, (text) => waitingHeld.push(text));
    const [firstSerial, [second, third]] = overlap
      ? await Promise.all([serialPass(), laneB()])
      : [await serialPass(), await laneB()];
    for (const text of [...waitingHeld, ...held]) process.stdout.write(text);
    const all = sum([linted, first, firstSerial, second, third, contract.check()]);
    const { total, pass, fail } = all;
    process.stdout.write(
      `\n# wall time per pass${overlap ? ' (the Docker and browser pass beside the PostgreSQL and gVisor passes)' : ''}: ${wallTimes.join('; ')}; whole run ${elapsed()} s\n`,
    );
    process.stdout.write(`\n# all passes\n# { total: ${total}, pass: ${pass}, fail: ${fail} }\n`);
    return all.code ? 1 : 0;
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
