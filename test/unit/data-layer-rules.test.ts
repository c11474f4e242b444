import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Two rules of docs/architecture.md, checked on the source text:
 *
 * 1. One data layer. The Kysely `Database` of domain/db is the one handle on the database; no
 *    code outside domain/db names the old synchronous SQLite handle (a `Db` type, a Database's
 *    `.sqlite` connection) or prepares SQL on a better-sqlite3 connection (`.prepare('…')`).
 *    Tests read and seed through store functions or test/helpers/db.ts, on either engine.
 * 2. Tests wait on events, never on fixed sleeps: no `await new Promise((r) => setTimeout(r, N))`,
 *    no sleep/delay helper, no timers/promises `setTimeout`, in any file under test/. A test polls
 *    with test/helpers/wait.ts (waitFor) or waits on the event itself.
 *
 * Each allow-list entry names the file, how many hits it may have, and why.
 */

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}
const ROOT = repoRoot();
const SOURCE_DIRS = [
  'agent',
  'bench',
  'core',
  'daemon',
  'domain',
  'emulator',
  'extensions',
  'proxy',
  'supervisor',
  'test',
  'tools',
  'web',
];

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.split(/[\\/]/).includes('node_modules'))
    .map((f) => relative(ROOT, join(dir, f)).split('\\').join('/'));
}

/** Source text without comments (so a comment may name what the code may not do). */
function code(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
    .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** `file:line: text` for every line of `file` a pattern matches. */
function hits(file: string, patterns: RegExp[]): string[] {
  const out: string[] = [];
  code(file)
    .split('\n')
    .forEach((line, i) => {
      if (patterns.some((p) => p.test(line))) out.push(`${file}:${i + 1}: ${line.trim().slice(0, 140)}`);
    });
  return out;
}

const DATA_LAYER_PATTERNS = [
  // The type of the old handle (DbSessionStore and the like are other names).
  /\bDb\b/,
  // A Database's raw SQLite connection: `database.sqlite!`, `(await openDatabase(…)).sqlite`.
  /\.sqlite!|\b(database|base|ctx|app|d)\??\.sqlite\b|\)\.sqlite\b/,
  // SQL prepared on a better-sqlite3 connection.
  /\.prepare\(\s*(['"`]|[\w.]*sql\b)/i,
];

/** Files outside domain/db that may use a raw better-sqlite3 connection they open themselves. */
const DATA_LAYER_ALLOWED: Record<string, { max: number; why: string }> = {
  'test/unit/db.test.ts': {
    max: 17,
    why: "tests domain/db's SQLite migration runner, which takes a raw better-sqlite3 connection (a failing step rolled back; the AUTOINCREMENT upgrade built on a schema before migration 8)",
  },
  'test/integration/data-access-property.test.ts': {
    max: 7,
    why: "runs the data-access compiler's SQLite dialect on an in-memory SQLite data source inside fast-check's synchronous properties: a customer's data, not Airlock's database",
  },
};

const SLEEP_PATTERNS = [
  // await new Promise((r) => setTimeout(r, N)) and its spellings.
  /new\s+Promise[^;]*\bsetTimeout\s*\(\s*\w+\s*,/,
  // A sleep helper by name.
  /\b(const|function)\s+(sleep|delay)\b\s*[=(]/,
  // node:timers/promises' setTimeout is a sleep too.
  /from\s+['"](node:)?timers\/promises['"]/,
];

/** Test files that may pause for a fixed time, and why no event can stand in. */
const SLEEP_ALLOWED: Record<string, { max: number; why: string }> = {
  'test/helpers/mcp-upstream.ts': {
    max: 1,
    why: "the fake MCP server's `slow` tool answers after the time it is asked for: a slow upstream is the behaviour under test (the gateway's bounds), not a wait",
  },
  'test/helpers/wait.ts': {
    max: 1,
    why: 'the one poll helper: it pauses between checks of a condition and fails at its deadline',
  },
  'test/browser/admin-port.test.ts': {
    max: 1,
    why: "proves a page left stops polling: nothing happening has no event; 2 s is almost three of the page's 0.7 s intervals",
  },
  'test/browser/admin-sessions.test.ts': {
    max: 1,
    why: "proves a page left stops refreshing: nothing happening has no event; 6 s is more than the page's 5 s REFRESH_MS",
  },
  'test/browser/chat-ui.test.ts': {
    max: 1,
    why: 'the fake model drips an answer over ~2.4 s: the pacing is the thing under test (the page following a streaming answer), not a wait',
  },
  'test/integration/proxy-hostile.test.ts': {
    max: 1,
    why: 'proves no hostile request is forwarded late: nothing reaching the upstream has no event',
  },
  'test/integration/security-proxy.test.ts': {
    max: 2,
    why: 'proves no hostile request is forwarded late (proxy, then egress gateway): nothing reaching the upstream has no event',
  },
  'test/docker/hostile-proxy.test.ts': {
    max: 2,
    why: 'the same proof from inside a sandbox (agent user, then root): nothing reaching the upstream has no event',
  },
  'test/helpers/load-users.ts': {
    max: 1,
    why: "the load generator's simulated users (its sleep helper): think time and retry back-off are the workload itself (benchmarks, not timed tests)",
  },
  'test/helpers/load-chaos.ts': {
    max: 1,
    why: "the load rig's fault schedule (its sleep helper): an outage lasts its configured time by design (benchmarks, not timed tests)",
  },
};

function check(
  name: string,
  files: string[],
  patterns: RegExp[],
  allowed: Record<string, { max: number; why: string }>,
) {
  t.test(name, async (t) => {
    const problems: string[] = [];
    for (const f of files) {
      const found = hits(f, patterns);
      const allow = allowed[f];
      if (!allow) problems.push(...found);
      else if (found.length > allow.max)
        problems.push(`${f}: ${found.length} hits, ${allow.max} allowed (${allow.why}):`, ...found);
    }
    t.same(problems, [], 'no hit outside the allow-list');
    for (const [f, a] of Object.entries(allowed)) {
      t.ok(files.includes(f), `allow-list entry ${f} names a file that exists`);
      t.ok(hits(f, patterns).length > 0, `allow-list entry ${f} is still needed (${a.why})`);
    }
  });
}

const all = SOURCE_DIRS.flatMap((d) => tsFiles(join(ROOT, d)));
check(
  'one data layer: no Db type, no .sqlite handle, no prepared SQL outside domain/db',
  all.filter((f) => !f.startsWith('domain/db/') && f !== 'test/unit/data-layer-rules.test.ts'),
  DATA_LAYER_PATTERNS,
  DATA_LAYER_ALLOWED,
);
check(
  'tests wait on events: no fixed sleep in test files',
  all.filter((f) => f.startsWith('test/') && f !== 'test/unit/data-layer-rules.test.ts'),
  SLEEP_PATTERNS,
  SLEEP_ALLOWED,
);

t.test('the patterns catch what they are for (each rule can fail)', async (t) => {
  const bad = [
    "import type { Db } from '../core/index.js';",
    'const db = database.sqlite!;',
    'const db = (await openDatabase({ file })).sqlite;',
    "app.db.prepare('SELECT 1').get();",
    'db.prepare(`INSERT INTO t VALUES (?)`).run(1);',
  ];
  for (const line of bad)
    t.ok(
      DATA_LAYER_PATTERNS.some((p) => p.test(line)),
      `caught: ${line}`,
    );
  const fine = [
    'new DbSessionStore(database.sql)',
    'await preparer.prepare({ userId: 1 })',
    't.same(body.compiled.sqlite, {})',
    'const db: Sql = database.sql;',
  ];
  for (const line of fine)
    t.notOk(
      DATA_LAYER_PATTERNS.some((p) => p.test(line)),
      `not caught: ${line}`,
    );
  const sleeps = [
    'await new Promise((r) => setTimeout(r, 500));',
    'await new Promise((res) => setTimeout(res, 1300));',
    'const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));',
    "import { setTimeout as pause } from 'node:timers/promises';",
  ];
  for (const line of sleeps)
    t.ok(
      SLEEP_PATTERNS.some((p) => p.test(line)),
      `caught: ${line}`,
    );
  const guards = [
    "const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);",
    "Promise.race([p, new Promise<'hang'>((res) => setTimeout(() => res('hang'), 15_000))])",
  ];
  for (const line of guards)
    t.notOk(
      SLEEP_PATTERNS.some((p) => p.test(line)),
      `a guard, not a wait: ${line}`,
    );
});

t.test('test/run.ts: every PASS_1_ONLY entry names an integration test that exists, with a reason', async (t) => {
  const src = readFileSync(join(ROOT, 'test', 'run.ts'), 'utf8');
  const block = /const PASS_1_ONLY[^{]*\{([\s\S]*?)\n\};/.exec(src)?.[1] ?? '';
  const entries = [...block.matchAll(/^\s*'([^']+)\.js':\s*(['"`])(.+)\2,?$/gm)].map((m) => ({
    file: m[1],
    why: m[3],
  }));
  t.ok(entries.length > 0, `${entries.length} entries`);
  for (const e of entries) {
    t.ok(existsSync(join(ROOT, 'test', 'integration', `${e.file}.ts`)), `${e.file}: exists`);
    t.ok(e.why.length > 20, `${e.file}: says why`);
  }
  t.notMatch(src, /BOTH_ENGINES\s*=\s*\[/, 'no hand-made list of both-engine files');
});
