import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { tempDir } from '../helpers/app.js';
import { ROOT } from '../docker/helpers.js';

/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against Airlock's MCP
 * client side (domain/connectors: what tool discovery and the egress gateway use), client
 * scenarios `initialize` and `tools_call`, and against its connector OAuth client
 * (domain/connector-oauth, what Connect in the chat runs) every `auth/*` scenario that applies.
 * The suite's scenario servers and authorization servers run on localhost. Not run, with why
 * (docs/connectors.md, "Conformance"):
 * - `sse-retry`: the gateway does not resume a dropped stream: a call whose stream breaks fails
 *   with ERR_CONNECTOR_UPSTREAM and the model is told;
 * - `auth/scope-step-up`: a 403 `insufficient_scope` during a call is not answered by a new
 *   authorization there and then (that needs the user's consent in a browser): the call fails and
 *   the user reconnects with Connect;
 * - `auth/2025-03-26-*`: servers without protected-resource metadata (RFC 9728) are refused by
 *   design: the metadata is what binds the token's audience to the connector;
 * - `auth/client-credentials-*` (extensions): connectors act for a user, never as a machine client;
 * - elicitation: connectors offer tools only.
 */
const CLIENT = join(ROOT, 'dist', 'test', 'conformance', 'connector-client.js');
const AUTH_CLIENT = join(ROOT, 'dist', 'test', 'conformance', 'connector-auth-client.js');
const SUITE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

function run(scenario: string, out: string, client = CLIENT): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [SUITE, 'client', '--command', `${process.execPath} ${client}`, '--scenario', scenario, '-o', out],
      { cwd: out, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** The checks the suite wrote for a scenario run into `out`. */
function checksOf(out: string): { id: string; status: string }[] {
  return readdirSync(out, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('checks.json'))
    .flatMap((f) => JSON.parse(readFileSync(join(out, f), 'utf8')) as { id: string; status: string }[]);
}

for (const scenario of ['initialize', 'tools_call']) {
  t.test(`conformance client scenario ${scenario}`, async (t) => {
    const out = tempDir(t);
    const r = await run(scenario, out);
    t.equal(r.code, 0, r.output.slice(-1500));
    const checks = checksOf(out);
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

/** The auth scenarios that apply, with a check each must pass (besides none failing or warning). */
const AUTH_SCENARIOS: Record<string, string> = {
  'auth/metadata-default': 'token-request',
  'auth/metadata-var1': 'token-request',
  'auth/metadata-var2': 'token-request',
  'auth/metadata-var3': 'token-request',
  'auth/basic-cimd': 'cimd-client-id-used',
  'auth/pre-registration': 'token-request',
  'auth/scope-from-www-authenticate': 'scope-from-www-authenticate',
  'auth/scope-from-scopes-supported': 'scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined': 'scope-omitted-when-undefined',
  'auth/scope-retry-limit': 'prm-pathbased-requested',
  'auth/token-endpoint-auth-basic': 'token-endpoint-auth-method',
  'auth/token-endpoint-auth-post': 'token-endpoint-auth-method',
  'auth/token-endpoint-auth-none': 'token-endpoint-auth-method',
  'auth/resource-mismatch': 'prm-pathbased-requested',
  'auth/offline-access-scope': 'token-request',
  'auth/offline-access-not-supported': 'token-request',
};

t.test('conformance auth scenarios against the connector OAuth client', async (t) => {
  const names = Object.keys(AUTH_SCENARIOS);
  // Four at a time: each scenario is a few local servers and one short child process.
  for (let i = 0; i < names.length; i += 4) {
    await Promise.all(
      names.slice(i, i + 4).map(async (scenario) => {
        const out = tempDir(t);
        const r = await run(scenario, out, AUTH_CLIENT);
        const checks = checksOf(out);
        t.equal(r.code, 0, `${scenario}: the suite passed it${r.code ? `\n${r.output.slice(-1200)}` : ''}`);
        t.same(
          checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => c.id),
          [],
          `${scenario}: no check failed or warned`,
        );
        t.ok(
          checks.some((c) => c.id === AUTH_SCENARIOS[scenario] && c.status === 'SUCCESS'),
          `${scenario}: ${AUTH_SCENARIOS[scenario]} passed`,
        );
      }),
    );
  }
});
