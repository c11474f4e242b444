import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { tempDir } from '../helpers/app.js';
import { ROOT } from '../docker/helpers.js';

/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against Airlock's MCP
 * client side (domain/connectors: what tool discovery and the egress gateway use), client
 * scenarios `initialize` and `tools_call`. The suite's scenario servers run on localhost.
 * Not run: `sse-retry` (the gateway does not resume a dropped stream: a call whose stream breaks
 * fails with ERR_CONNECTOR_UPSTREAM and the model is told), the `auth/*` scenarios (the per-user
 * OAuth piece) and elicitation (connectors offer tools only).
 */
const CLIENT = join(ROOT, 'dist', 'test', 'conformance', 'connector-client.js');
const SUITE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

function run(scenario: string, out: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SUITE, 'client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '-o', out], { cwd: out, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

for (const scenario of ['initialize', 'tools_call']) {
  t.test(`conformance client scenario ${scenario}`, async (t) => {
    const out = tempDir(t);
    const r = await run(scenario, out);
    t.equal(r.code, 0, r.output.slice(-1500));
    const checks = readdirSync(out, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('checks.json'))
      .flatMap((f) => JSON.parse(readFileSync(join(out, f), 'utf8')) as { id: string; status: string }[]);
    t.ok(checks.length > 0, 'the suite wrote its checks');
    t.same(
      checks.filter((c) => c.status === 'FAILURE').map((c) => c.id),
      [],
      'no check failed',
    );
    if (scenario === 'tools_call')
      t.ok(
        checks.some((c) => c.id === 'tool-add-numbers' && c.status === 'SUCCESS'),
        'the tool was called',
      );
  });
}
