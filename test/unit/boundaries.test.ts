import t from 'tap';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { repoRoot, tsFiles } from '../helpers/source-tree.js';

/**
 * Who may import whom (the folder table in the README and docs/architecture). Code shipped in
 * the sandbox never imports host code (web/, daemon/), and host code never imports sandbox
 * code: what both sides need (the sandbox protocol, NDJSON framing, the agent-child host)
 * lives in core/.
 */
const SANDBOX = ['supervisor', 'proxy', 'agent', 'tools', 'extensions'];
const HOST = ['web', 'daemon'];

/** Allow-lists: a folder here imports only the folders named. */
const ALLOWED: Record<string, string[]> = {
  core: ['core'],
  domain: ['domain', 'core'],
  proxy: ['proxy', 'core'],
  supervisor: ['supervisor', 'core', 'proxy', 'agent'],
  // The agent child hosts the sandbox's two MCP servers in its own process (agent/in-process.ts).
  agent: ['agent', 'core', 'tools', 'extensions'],
  tools: ['tools', 'core'],
  extensions: ['extensions', 'core'],
  web: ['web', 'domain', 'core'],
  emulator: ['emulator', 'core'],
};

/**
 * Deny-lists for folders that may import anything else (daemon/ is the composition root; its
 * imports of web/ are narrowed further below).
 */
const FORBIDDEN: Record<string, string[]> = {
  daemon: SANDBOX,
  web: SANDBOX,
};

const IMPORT_RE = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** Every relative import of every .ts file under `folder`, as [file, spec, target folder]. */
function* importsOf(root: string, folder: string): Generator<[string, string, string]> {
  for (const file of tsFiles(join(root, folder))) {
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec.startsWith('.')) continue;
      yield [relative(root, file), spec, relative(root, resolve(dirname(file), spec)).split('/')[0]];
    }
  }
}

/** Imports from `folders` whose target folder `refused` says no to, and how many imports were seen. */
function check(folders: Record<string, string[]>, refused: (target: string, list: string[]) => boolean): { violations: string[]; checked: number } {
  const root = repoRoot();
  const violations: string[] = [];
  let checked = 0;
  for (const [folder, list] of Object.entries(folders)) {
    for (const [file, spec, target] of importsOf(root, folder)) {
      checked++;
      if (refused(target, list)) violations.push(`${file} imports ${spec} (${target}/)`);
    }
  }
  return { violations, checked };
}

t.test('folder import boundaries hold', async (t) => {
  const r = check(ALLOWED, (target, allowed) => !allowed.includes(target));
  t.ok(r.checked > 0, 'some imports were checked');
  t.same(r.violations, [], 'no forbidden imports');
});

/**
 * daemon/ reaches web/ only at the composition root: daemon/serve.ts builds and serves the web
 * app through web/'s public entry and implements the ports web/ declares. Every other daemon/
 * file takes what it shares with web/ (identity, agent policy, data access) from domain/ or core/.
 */
const WEB_ROOT = 'daemon/serve.ts';
const WEB_ENTRY = 'web/index.js';

t.test('daemon/ imports web/ only in the composition root, and only its public entry', async (t) => {
  const root = repoRoot();
  const violations: string[] = [];
  let rootImportsEntry = false;
  for (const [file, spec, target] of importsOf(root, 'daemon')) {
    if (target !== 'web') continue;
    const path = relative(root, resolve(dirname(join(root, file)), spec));
    if (file === WEB_ROOT && path === WEB_ENTRY) rootImportsEntry = true;
    else violations.push(`${file} imports ${spec}`);
  }
  t.ok(rootImportsEntry, `${WEB_ROOT} wires the web app through ${WEB_ENTRY}`);
  t.same(violations, [], `no daemon/ file but ${WEB_ROOT} imports web/, and it imports only ${WEB_ENTRY}`);
});

t.test('host code never imports sandbox code', async (t) => {
  const r = check(FORBIDDEN, (target, denied) => denied.includes(target));
  t.ok(r.checked > 0, 'some imports were checked');
  t.same(r.violations, [], 'web/ and daemon/ import nothing from supervisor/, proxy/, agent/, tools/, extensions/');
});

t.test('sandbox code never imports host code', async (t) => {
  const r = check(Object.fromEntries(SANDBOX.map((f) => [f, HOST])), (target, host) => host.includes(target));
  t.ok(r.checked > 0, 'some imports were checked');
  t.same(r.violations, []);
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
  'daemon/runtime/cli.ts',
  'daemon/local-runner.ts',
  // Readers of other HTTP peers and the container engine: another node (its answers, an owner
  // node's refusal of an attach), a token endpoint, dockerode.
  'core/node-client.ts',
  'daemon/fleet.ts',
  'daemon/fleet-cli.ts',
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
      code.split('\n').forEach((line, i) => {
        if (/^\s*(import|export)\b.*\bfrom\b/.test(line) || /^\s*import\s*\{/.test(line)) return;
        if (/[\w)\]}]\s+as\s+(?!const\b)[\w{([]/.test(line)) casts.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
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
  [/\bfrom\s+['"](kysely|better-sqlite3|pg)['"]|\bimport\s*\(\s*['"](kysely|better-sqlite3|pg)['"]\s*\)/, 'database library imported'],
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
  t.same(sqlIn("// db.selectFrom('users') in a comment\n/* sql`x` */\nawait inTransaction(db, fn);\nconst m = /x/.exec(s);"), [], 'comments, inTransaction and regex exec are not SQL');
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
  t.ok(reachable(root, 'web/chat-routes.ts').has('web/context.ts'), 'the check sees a route file reach it (so a pass means something)');
});
