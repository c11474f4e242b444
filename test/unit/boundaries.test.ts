import t from 'tap';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { repoRoot, tsFiles } from '../helpers/source-tree.js';

/**
 * Who may import whom is an ESLint rule (lint/import-boundaries.js, its table of arrows in
 * eslint.config.js): `npm run lint` and the editor report an import that breaks a boundary. These
 * tests prove the rule is on for the product files and fires on planted bad imports of every kind
 * (and stays quiet on allowed ones). The files are loaded from the repository root, so the test
 * runs the same from the sources and from dist/.
 */
async function boundaryLinter(): Promise<{ eslint: ESLint; config: any }> {
  const root = repoRoot();
  const { airlock } = await import(pathToFileURL(join(root, 'lint', 'import-boundaries.js')).href);
  const { IMPORT_BOUNDARIES } = await import(pathToFileURL(join(root, 'eslint.config.js')).href);
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { airlock },
        rules: { 'airlock/import-boundaries': ['error', IMPORT_BOUNDARIES] },
      },
    ],
  });
  return { eslint, config: IMPORT_BOUNDARIES };
}

/** The boundary messages ESLint gives `code` written in `file` (repository-relative). */
async function boundaryFindings(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: join(repoRoot(), file) });
  return r.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

t.test('eslint.config.js turns the boundary rule on for every product folder', async (t) => {
  const root = repoRoot();
  const real = new ESLint({ cwd: root });
  for (const file of [
    'core/config.ts',
    'domain/users.ts',
    'web/app.ts',
    'daemon/serve.ts',
    'agent/loop.ts',
    'supervisor/main.ts',
    'web/ui/src/main.tsx',
  ]) {
    const cfg = await real.calculateConfigForFile(join(root, file));
    t.same(cfg.rules?.['airlock/import-boundaries']?.[0], 2, `${file}: airlock/import-boundaries is an error`);
  }
});

t.test('the boundary rule reports an import that breaks an arrow, of every kind', async (t) => {
  const { eslint, config } = await boundaryLinter();
  const bad: [string, string, RegExp][] = [
    [
      'core/planted.ts',
      "import { x } from '../domain/users.js';",
      /core\/ may import only core\/: \.\.\/domain\/users\.js reaches domain\//,
    ],
    ['core/error-codes/planted.ts', "export { x } from '../../web/app.js';", /core\/ may import only core\//],
    [
      'domain/chat/planted.ts',
      "const m = await import('../../daemon/serve.js');",
      /domain\/ may import only domain\/, core\/: .* reaches daemon\//,
    ],
    ['web/planted.ts', "import '../agent/loop.js';", /web\/ may import only web\/, domain\/, core\//],
    ['agent/planted.ts', "export * from '../daemon/host/fleet.js';", /agent\/ may import only/],
    ['tools/planted.ts', "import type { X } from '../web/context.js';", /tools\/ may import only tools\/, core\//],
    ['supervisor/planted.ts', "import { y } from '../domain/users.js';", /supervisor\/ may import only/],
    ['proxy/planted.ts', "import { y } from '../agent/loop.js';", /proxy\/ may import only proxy\/, core\//],
    ['emulator/planted.ts', "import { y } from '../domain/users.js';", /emulator\/ may import only/],
    ['daemon/runtime/planted.ts', "import { z } from '../../proxy/index.js';", /daemon\/ never imports proxy\//],
    [
      'daemon/jobs-planted.ts',
      "import { createApp } from '../web/index.js';",
      /daemon\/ imports web\/ only in daemon\/serve\.ts, and there only web\/index\.js/,
    ],
    [
      'daemon/serve.ts',
      "import { c } from '../web/context.js';",
      /only in daemon\/serve\.ts, and there only web\/index\.js: \.\.\/web\/context\.js/,
    ],
  ];
  for (const [file, code, want] of bad) {
    const found = await boundaryFindings(eslint, file, code);
    t.equal(found.length, 1, `${file}: ${code} is reported once`);
    t.match(found[0] ?? '', /^airlock\/import-boundaries: /, `${file}: by the boundary rule`);
    t.match(found[0] ?? '', want, `${file}: names the arrow`);
  }
  t.ok(Object.keys(config.allow).length >= 9, 'the table has the folders of docs/architecture.md');
});

t.test('the boundary rule lets the allowed arrows through', async (t) => {
  const { eslint } = await boundaryLinter();
  const good: [string, string][] = [
    ['core/planted.ts', "import { a } from './errors.js'; import { z } from 'zod';"],
    ['domain/chat/planted.ts', "import { b } from '../../core/errors.js'; import { c } from '../users.js';"],
    ['web/planted.ts', "import { d } from '../domain/users.js'; import { e } from '../core/index.js';"],
    ['agent/planted.ts', "import { f } from '../tools/index.js'; import { g } from '../extensions/index.js';"],
    ['supervisor/planted.ts', "import { h } from '../proxy/index.js'; import { i } from '../agent/loop.js';"],
    ['daemon/planted.ts', "import { j } from '../domain/users.js'; import { k } from '../core/index.js';"],
    ['daemon/serve.ts', "import { createApp } from '../web/index.js';"],
    ['test/unit/planted.ts', "import { l } from '../../web/app.js'; import { m } from '../../agent/loop.js';"],
  ];
  for (const [file, code] of good) t.same(await boundaryFindings(eslint, file, code), [], `${file}: ${code}`);
});

/**
 * The files that read a sandbox boundary (control socket, child stdio, the CLI control socket,
 * MCP results), another node's answer, a token endpoint's or the container engine's, check what
 * they read with a schema; none of them casts with `as`.
 */
const WIRE_READERS = [
  'core/ndjson.ts',
  'core/agent-host.ts',
  'core/sandbox-protocol.ts',
  // Its leaves (re-exported by sandbox-protocol.ts): the schemas live there.
  'core/sandbox-events.ts',
  'core/sandbox-control.ts',
  'core/sandbox-mcp.ts',
  'core/sandbox-profile.ts',
  'supervisor',
  'agent/main.ts',
  'agent/mcp.ts',
  'daemon/runtime/sandbox-client.ts',
  'daemon/runtime/control-api.ts',
  'daemon/cli/runtime.ts',
  'daemon/dev/local-runner.ts',
  // Readers of other HTTP peers and the container engine: another node (its answers, an owner
  // node's refusal of an attach), a token endpoint, dockerode.
  'core/node-client.ts',
  'daemon/host/fleet.ts',
  'daemon/cli/fleet.ts',
  'core/accounts.ts',
  'daemon/runtime/docker-driver.ts',
];

t.test("no `as` cast in the files that read the sandbox protocol or a peer's answer", async (t) => {
  const root = repoRoot();
  const casts: string[] = [];
  let files = 0;
  for (const entry of WIRE_READERS) {
    const p = join(root, entry);
    const list = statSync(p).isDirectory() ? [...tsFiles(p)] : [p];
    for (const file of list) {
      files++;
      // Drop comments and string literals, then look for `expr as Type` (not `as const`, not import renames).
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '')
        .replace(/'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, "''");
      // An import or re-export list may stand one name a line (`Agent as HttpAgent,`): skipped whole.
      let inList = false;
      code.split('\n').forEach((line, i) => {
        if (inList || /^\s*(import|export)(\s+type)?\s*([\w$]+\s*,\s*)?\{\s*$/.test(line)) {
          inList = !/^\s*\}.*\bfrom\b/.test(line);
          return;
        }
        if (/^\s*(import|export)\b.*\bfrom\b/.test(line) || /^\s*import\s*\{/.test(line)) return;
        if (/[\w)\]}]\s+as\s+(?!const\b)[\w{([]/.test(line))
          casts.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  t.ok(files >= WIRE_READERS.length, 'the boundary files exist');
  t.same(casts, [], 'wire data is checked by a schema, never cast');
});

/**
 * Every statement lives in a store module of domain/ (docs/architecture.md#the-data-layer): the
 * routes of web/, and the jobs, the directory sync and the CLI of daemon/, call typed store
 * functions and hold no SQL. A query-builder call, a raw `sql` template, a transaction begun by
 * hand or a database driver imported there is refused. inTransaction (domain/db) may be called:
 * it groups store calls, it writes no SQL itself.
 */
const NO_SQL = ['web', 'daemon'];
const SQL_PATTERNS: [RegExp, string][] = [
  [/\.\s*(selectFrom|selectNoFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto)\s*\(/, 'query builder'],
  [/\bsql\s*(<[^>]*>)?\s*`/, 'raw sql template'],
  [/\bsql\s*\.\s*(raw|ref|lit|id|table|join|val)\s*\(/, 'raw sql fragment'],
  [/\.\s*transaction\s*\(\s*\)/, 'transaction begun by hand'],
  [
    /\bfrom\s+['"](kysely|better-sqlite3|pg)['"]|\bimport\s*\(\s*['"](kysely|better-sqlite3|pg)['"]\s*\)/,
    'database library imported',
  ],
];

/** The SQL a source text holds outside its comments, as `line: what: code`. */
function sqlIn(src: string): string[] {
  const code = src.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/.*$/gm, '');
  const found: string[] = [];
  code.split('\n').forEach((line, i) => {
    for (const [re, what] of SQL_PATTERNS) if (re.test(line)) found.push(`${i + 1}: ${what}: ${line.trim()}`);
  });
  return found;
}

t.test('the check finds SQL where it is (so a pass means something)', async (t) => {
  t.equal(sqlIn("await db.selectFrom('users').select('id').execute();").length, 1);
  t.equal(sqlIn("await db\n  .updateTable('users')\n  .set({ a: 1 })").length, 1);
  t.equal(sqlIn('await sql`SELECT 1`.execute(db);').length, 1);
  t.equal(sqlIn('const r = await sql<{ n: number }>`SELECT 1`.execute(db);').length, 1);
  t.equal(sqlIn("x.where(sql.ref('a'), '=', 1)").length, 1);
  t.equal(sqlIn('await db.transaction().execute(fn);').length, 1);
  t.equal(sqlIn("import { sql } from 'kysely';").length, 1);
  t.equal(sqlIn("import pg from 'pg';").length, 1);
  t.same(
    sqlIn("// db.selectFrom('users') in a comment\n/* sql`x` */\nawait inTransaction(db, fn);\nconst m = /x/.exec(s);"),
    [],
    'comments, inTransaction and regex exec are not SQL',
  );
});

t.test('web/ and daemon/ hold no SQL: every statement is in a domain/ store module', async (t) => {
  const root = repoRoot();
  const found: string[] = [];
  let files = 0;
  for (const folder of NO_SQL) {
    for (const file of tsFiles(join(root, folder))) {
      files++;
      for (const hit of sqlIn(readFileSync(file, 'utf8'))) found.push(`${relative(root, file)}:${hit}`);
    }
  }
  t.ok(files > 50, 'the files were read');
  t.same(found, [], 'no query builder, raw SQL, hand-begun transaction or database driver in web/ or daemon/');
});

const IMPORT_RE =
  /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** The files `from` imports, directly or through others (relative imports only, .js → .ts). */
function reachable(root: string, from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [from];
  while (todo.length) {
    const file = todo.pop()!;
    for (const m of readFileSync(join(root, file), 'utf8').matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(join(root, file)), spec)).replace(/\.js$/, '.ts');
      if (seen.has(target) || !existsSync(join(root, target))) continue;
      seen.add(target);
      todo.push(target);
    }
  }
  return seen;
}

t.test('web/context.ts is in no import cycle: the route files import it, it imports no route file', async (t) => {
  const root = repoRoot();
  const reached = reachable(root, 'web/context.ts');
  t.ok(reached.has('web/ports.ts') && reached.has('domain/chat/turn-service.ts'), 'its imports were followed');
  t.notOk(reached.has('web/context.ts'), 'web/context.ts does not import itself through other files');
  t.ok(
    reachable(root, 'web/chat-routes.ts').has('web/context.ts'),
    'the check sees a route file reach it (so a pass means something)',
  );
});
