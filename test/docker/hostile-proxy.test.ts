/**
 * The hostile proxy table run from INSIDE a live sandbox as the agent child's uid (1001): the
 * real image, supervisor, proxy and the daemon's egress gateway, with a recording upstream on
 * the host. Every case asserts its status and exactly what reached the upstream. The child also
 * tries the egress and control sockets directly: it cannot even connect.
 */
import t from 'tap';
import { copyFileSync, chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../core/index.js';
import type { PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { EgressGatewayService, egressTarget } from '../../daemon/host/egress.js';
import { buildRoutes } from '../../daemon/host/overlay.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import type { HostileResult } from '../fakes/hostile-client.js';
import { assertHostile, egressCases, proxyCases, type Placeholders } from '../helpers/hostile-cases.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, ROOT, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const log = createLogger({ level: 'warn', destination: process.stderr });
/** One allow-listed request written straight to the egress socket (root in the container). */
const CONTROL = `const s = require('net').connect('/run/airlock/egress.sock'); let b = ''; s.on('data', (d) => (b += d)); s.on('close', () => process.stdout.write(b));
s.write('GET /sheets/v4/spreadsheets/s1/values/A1 HTTP/1.1\\r\\nHost: x\\r\\nAccept: application/json\\r\\nConnection: close\\r\\n\\r\\n');`;
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('hostile table from inside the sandbox as uid 1001', async (t) => {
    const upstream = await startUpstream();
    t.teardown(() => upstream.close());
    const routes = buildRoutes({
      google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
      model: { provider: 'openai', baseUrl: `${upstream.url}/v1` },
      hasAccountToken: true,
      hasModelKey: true,
    });
    const ph: Placeholders = {
      MAIL_API_KEY: `ph-mail-${randomBytes(12).toString('hex')}`,
      SHEETS_API_KEY: `ph-sheets-${randomBytes(12).toString('hex')}`,
      SEARCH_SHEETS_API_KEY: `ph-search-${randomBytes(12).toString('hex')}`,
      AGENT_MODEL_API_KEY: `ph-model-${randomBytes(12).toString('hex')}`,
    };
    let proxyPort = 0;
    const preparer: SessionPreparer = {
      async prepare(req): Promise<PreparedSession> {
        proxyPort = req.proxyPort;
        return {
          routes,
          tokens: {
            MAIL_ACCESS_TOKEN: 'ya29.real-hostile',
            SHEETS_ACCESS_TOKEN: 'ya29.real-hostile',
            SEARCH_ACCESS_TOKEN: 'ya29.real-hostile',
            MODEL_API_KEY_REAL: 'sk-real-hostile',
          },
          placeholders: { ...ph, AGENT_USER_TOKEN: `ph-host-${randomBytes(12).toString('hex')}` },
          agentEnv: { AIRLOCK_MODEL_PROVIDER: 'demo' },
          egressAllow: [...new Set(routes.map((r) => egressTarget(r.upstream)))],
        };
      },
    };
    const owner = uniqueOwner('hostile');
    const dir = dataDir(t);
    t.teardown(() => sweep(docker, owner));
    const egress = new EgressGatewayService({ log });
    t.teardown(() => egress.close());
    const m = new SessionManager({
      config: runtimeConfig(dir, image, { AIRLOCK_POOL_SIZE: '0' }),
      docker,
      log,
      owner,
      preparer,
      egress,
    });
    t.teardown(() => m.close({ removeContainers: true }));
    await m.start();
    const r = await m.runTurn({
      userId: 41,
      sessionId: 'hostile',
      turnId: 't1',
      prompt: 'hi',
      signal: new AbortController().signal,
      onEvent: () => {},
    });
    t.equal(r.stop_reason, 'end_turn', 'the session is live');
    t.ok(proxyPort > 0, 'proxy port known');

    // The client and its cases go into the user's workspace (bind-mounted at /workspace).
    const ws = join(dir, 'workspaces', '41');
    const entries = proxyCases(ph);
    const sockets = egressCases('/run/airlock/egress.sock', egressTarget(upstream.url)).concat(
      egressCases('/run/airlock/control.sock', egressTarget(upstream.url)).map((e) => ({
        ...e,
        c: { ...e.c, id: `control-${e.c.id}` },
      })),
    );
    writeFileSync(join(ws, 'hostile-cases.json'), JSON.stringify([...entries, ...sockets].map((e) => e.c)));
    copyFileSync(join(ROOT, 'dist', 'test', 'fakes', 'hostile-client.js'), join(ws, 'hostile-client.mjs'));
    for (const f of ['hostile-cases.json', 'hostile-client.mjs']) chmodSync(join(ws, f), 0o644);

    const run = await execIn(
      docker,
      r.containerId!,
      ['/usr/local/bin/node', '/workspace/hostile-client.mjs', '/workspace/hostile-cases.json'],
      {
        user: '1001',
        env: [`HOSTILE_PROXY_PORT=${proxyPort}`],
      },
    );
    t.equal(run.code, 0, `client ran (${run.stderr.slice(0, 300)})`);
    const results = JSON.parse(run.stdout) as HostileResult[];
    const proxyResults = results.slice(0, entries.length);
    const socketResults = results.slice(entries.length);
    t.ok(
      entries.length + socketResults.length >= 150,
      `${entries.length + socketResults.length} cases from inside the sandbox`,
    );
    await new Promise((res) => setTimeout(res, 200));
    assertHostile(t, entries, proxyResults, upstream.requests);
    const stall = proxyResults.find((x) => x.id === 'stall-40')!;
    t.ok(stall.ms < 3000, `the legit send was answered in ${stall.ms} ms while 40 requests stalled`);
    // The sockets are root's (0600): the child cannot connect at all, whatever it would send.
    for (const s of socketResults) t.equal(s.error, 'EACCES', `${s.id}: EACCES`);
    t.equal(socketResults.filter((s) => s.status !== 0).length, 0, 'no answer came from either socket');

    // A compromised supervisor: root in the container, on the egress socket itself, without the
    // proxy in front. The gateway on the host (second wall) refuses every case off the session's
    // route table (tunnels, absolute-form, other routes, methods and paths, a route of another
    // session); the Google emulator sees nothing. Then the control: an allow-listed request passes.
    upstream.requests.length = 0;
    const asRoot = egressCases('/run/airlock/egress.sock', egressTarget(upstream.url)).map((e) => ({
      ...e,
      c: { ...e.c, id: `root-${e.c.id}` },
    }));
    writeFileSync(join(ws, 'root-cases.json'), JSON.stringify(asRoot.map((e) => e.c)));
    chmodSync(join(ws, 'root-cases.json'), 0o644);
    const rootRun = await execIn(
      docker,
      r.containerId!,
      ['/usr/local/bin/node', '/workspace/hostile-client.mjs', '/workspace/root-cases.json'],
      { user: '0', env: [`HOSTILE_PROXY_PORT=${proxyPort}`] },
    );
    t.equal(rootRun.code, 0, `root client ran (${rootRun.stderr.slice(0, 300)})`);
    await new Promise((res) => setTimeout(res, 200));
    assertHostile(t, asRoot, JSON.parse(rootRun.stdout) as HostileResult[], upstream.requests);
    t.same(upstream.requests, [], 'the Google emulator saw nothing of the compromised supervisor');
    const control = await execIn(docker, r.containerId!, ['/usr/local/bin/node', '-e', CONTROL], { user: '0' });
    t.match(control.stdout, /^HTTP\/1\.1 200 /, 'an allow-listed request of its own session passes the gateway');
    t.equal(upstream.requests.length, 1);
    t.equal(
      upstream.requests[0].headers.authorization,
      'Bearer ya29.real-hostile',
      'the token was injected on the host',
    );
    t.notMatch(control.stdout, /ya29\.real-hostile/, 'and does not come back into the sandbox');
  });
}
