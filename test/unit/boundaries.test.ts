import t from 'tap';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}

function* tsFiles(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'public') continue;
    if (statSync(p).isDirectory()) yield* tsFiles(p);
    else if (/\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}

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
  'supervisor',
  'agent/main.ts',
  'agent/mcp.ts',
  'daemon/runtime/sandbox-client.ts',
  'daemon/runtime/control-api.ts',
  'daemon/runtime/cli.ts',
  'daemon/local-runner.ts',
  // Readers of other HTTP peers and the container engine: another node, a token endpoint, dockerode.
  'daemon/fleet.ts',
  'core/accounts.ts',
  'daemon/runtime/docker-driver.ts',
];

t.test('no `as` cast in the files that read the sandbox protocol or a peer\'s answer', async (t) => {
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
