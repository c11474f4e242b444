import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from '../helpers/app.js';
import { ROOT } from '../docker/helpers.js';
import { TEST_ENGINE, testDatabaseUrl } from '../helpers/db.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';

/**
 * `airlock connectors add|ls|tools|rm` (docs/connectors.md) as an operator runs them: the real
 * CLI process against the database, a real MCP server; the static secret read from the variable
 * named by --secret-env, never printed. Runs on SQLite and PostgreSQL.
 */
const CLI = join(ROOT, 'dist', 'daemon', 'main.js');
const SECRET = 'cli-connector-secret-0123456789-abc';

function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test(`connectors CLI (${TEST_ENGINE})`, async (t) => {
  const up = await startMcpUpstream({ requireHeader: { name: 'x-acme-key', value: SECRET } });
  t.teardown(() => up.close());
  const url = await testDatabaseUrl(t);
  const env = {
    AIRLOCK_DATA_DIR: tempDir(t),
    AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true',
    ACME_KEY: SECRET,
    AIRLOCK_ENCRYPTION_KEY: 'a'.repeat(64),
    ...(url ? { AIRLOCK_DATABASE_URL: url } : {}),
  };
  const add = await cli(
    [
      'connectors',
      'add',
      'acme',
      '--label',
      'Acme',
      '--url',
      up.url,
      '--auth',
      'header',
      '--header',
      'X-Acme-Key',
      '--secret-env',
      'ACME_KEY',
    ],
    env,
  );
  t.equal(add.code, 0, add.stderr);
  t.match(add.stdout, /added acme \(streamable_http\) with 5 tools/);
  const bad = await cli(['connectors', 'add', 'web', '--label', 'Web', '--url', 'http://example.com/mcp'], env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /ERR_CONNECTOR_URL/);
  const ls = await cli(['connectors', 'ls'], env);
  t.match(ls.stdout, /acme\s+Acme\s+http:\/\/127\.0\.0\.1:\d+\/mcp\s+header\s+everyone\s+5\s+yes/);
  const tools = await cli(
    ['connectors', 'tools', 'acme', '--set', 'echo=disabled', 'create_ticket=enabled', '--json'],
    env,
  );
  t.equal(tools.code, 0, tools.stderr);
  const modes = Object.fromEntries(
    (JSON.parse(tools.stdout) as { name: string; mode: string }[]).map((x) => [x.name, x.mode]),
  );
  t.match(modes, { echo: 'disabled', create_ticket: 'enabled' });
  const refreshed = await cli(['connectors', 'tools', 'acme', '--refresh'], env);
  t.match(refreshed.stdout, /acme__echo\s+disabled/);
  const rm = await cli(['connectors', 'rm', 'acme'], env);
  t.equal(rm.code, 0);
  t.match((await cli(['connectors', 'rm', 'acme'], env)).stderr, /ERR_CONNECTOR_NOT_FOUND/);
  for (const r of [add, ls, tools, refreshed]) t.notMatch(r.stdout + r.stderr, SECRET, 'no secret printed');
});
