/**
 * The egress gateway's connection caps (daemon/host/egress-conns.ts, docs/security.md): a client acting
 * as root in a sandbox opens idle connections to its session's egress socket. Past the session's
 * cap a new connection is closed at accept (before any byte is read), past the gateway's cap too
 * (another session); the refusals are logged once per burst, not once per connection; a connection
 * that sends no request head is closed after the headers timeout; the slots come back as
 * connections close, and requests pass again.
 */
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildRoutes } from '../../daemon/host/overlay.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { logSink, tempDir } from '../helpers/app.js';
import { rawExchange } from '../helpers/proxy-rig.js';
import { waitFor } from '../helpers/wait.js';

const GET = 'GET /sheets/v4/spreadsheets/s1/values/A1 HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n';

/** Open a connection; resolves once connected, with a promise of its close and what it received. */
function open(path: string): Promise<{ s: Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let got = '';
    s.on('data', (d) => (got += String(d)));
    const closed = new Promise<string>((r) => s.once('close', () => r(got)));
    s.once('connect', () => resolve({ s, closed }));
    s.once('error', (e) => (s.connecting ? reject(e) : undefined));
  });
}

t.test(
  'per-session and global connection caps: closed at accept, one log line per burst, idle ones time out',
  async (t) => {
    const upstream = await startUpstream();
    t.teardown(() => upstream.close());
    const dir = tempDir(t, 'airlock-egress-caps-');
    const logs = logSink();
    const gateway = new EgressGatewayService({
      log: createLogger({ level: 'debug', destination: logs.stream }),
      caps: { perSession: 5, total: 8, headersTimeoutMs: 1_500 },
    });
    t.teardown(() => gateway.close());
    const routes = buildRoutes({
      google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
      model: { provider: 'demo' },
      hasAccountToken: true,
      hasModelKey: false,
    });
    const tokens = {
      MAIL_ACCESS_TOKEN: 'ya29.real',
      SHEETS_ACCESS_TOKEN: 'ya29.real',
      SEARCH_ACCESS_TOKEN: 'ya29.real',
    };
    const a = join(dir, 'a.sock');
    const b = join(dir, 'b.sock');
    await gateway.open('sess-a', a, { userId: 1, routes, tokens });
    await gateway.open('sess-b', b, { userId: 2, routes, tokens });

    // Session A holds its 5; a burst of 200 more is closed at accept, each with nothing read.
    const heldA = await Promise.all(Array.from({ length: 5 }, () => open(a)));
    await waitFor(() => gateway.openConnections === 5, 'five connections counted');
    const burst = await Promise.all(Array.from({ length: 200 }, () => open(a)));
    const answers = await Promise.all(burst.map((c) => c.closed));
    t.ok(
      answers.every((x) => x === ''),
      'all 200 past the session cap were closed without an answer',
    );
    t.equal(gateway.openConnections, 5, 'the refused ones were never counted');
    await waitFor(() => logs.lines.some((l) => l.includes('connection cap reached')), 'the burst is logged');
    const capLines = () => logs.lines.filter((l) => l.includes('connection cap reached'));
    t.equal(capLines().length, 1, 'one log line for the burst of 200');
    const line = JSON.parse(capLines()[0]) as { refused: number; sessionId: string };
    t.equal(line.refused, 200, 'naming how many were refused');
    t.equal(line.sessionId, 'sess-a');

    // Session B is under its own cap, but the gateway's (8) stops it after 3.
    const heldB = await Promise.all(Array.from({ length: 3 }, () => open(b)));
    await waitFor(() => gateway.openConnections === 8, 'eight connections counted');
    const overTotal = await open(b);
    t.equal(await overTotal.closed, '', "past the gateway's cap, another session's connection is closed at accept too");

    // Idle connections are not kept: no request head within the headers timeout → 408, closed.
    const idle = await Promise.all([...heldA, ...heldB].map((c) => c.closed));
    t.same(
      idle.map((x) => x.split('\r\n')[0]),
      Array.from({ length: 8 }, () => 'HTTP/1.1 408 Request Timeout'),
      'every idle connection got 408 and was closed after the headers timeout',
    );
    t.notOk(
      logs.lines.some((l) => l.includes('egress refused')),
      'idle connections timing out log nothing each (a hoarder cannot flood the log)',
    );
    await waitFor(() => gateway.openConnections === 0, 'the slots are free again');
    const r = await rawExchange({ path: a }, GET, 5_000);
    t.equal(r.status, 200, 'and a request passes again');
    await waitFor(() => capLines().length === 2, 'the second burst is logged');
    t.equal(capLines().length, 2, 'the second burst (one connection) had its own line, the request none');
  },
);
