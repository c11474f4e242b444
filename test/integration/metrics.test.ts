import t from 'tap';
import { connect, type AddressInfo } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { serve } from '../../daemon/serve.js';
import { addUser, logSink, serveEngineEnv, tempDir, testConfig } from '../helpers/app.js';
import { Client } from '../helpers/client.js';

/** GET /metrics in Prometheus text format; counters move where the events happen. */

function value(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-z_:]+)(?:\{([^}]*)\})? ([0-9.e+-]+|NaN)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return 0;
}

/** Send one request head over the egress socket; resolve with the status line. */
function sendVia(sock: string, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(sock);
    let buf = '';
    c.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        c.destroy();
        resolve(buf.split('\r\n')[0]);
      }
    });
    c.on('error', reject);
    c.write(head);
  });
}

t.test('/metrics: logins, egress decisions by outcome, process metrics; no secrets', async (t) => {
  const dir = tempDir(t, 'airlock-metrics-');
  const config = testConfig(dir, { AIRLOCK_LOG_LEVEL: 'warn', ...(await serveEngineEnv(t)) });
  const d = await serve(config, {
    runtime: false,
    log: createLogger({ level: 'warn', destination: logSink().stream }),
  });
  t.teardown(() => d.close());
  await addUser(d.database, 'mia', 'mia-password-1');
  const scrape = async () => {
    const r = await fetch(`${d.web.url}/metrics`);
    t.equal(r.status, 200);
    t.match(r.headers.get('content-type') ?? '', /text\/plain/);
    return r.text();
  };
  const before = await scrape();
  t.equal(value(before, 'airlock_logins_total', { outcome: 'ok' }), 0);
  t.match(before, /airlock_process_/, 'default process metrics are there');

  const c = new Client(d.web.url);
  t.equal((await c.login('mia', 'wrong-password')).status, 401);
  t.equal((await c.login('mia', 'mia-password-1')).status, 200);

  // An egress socket with one route to a local upstream; a CONNECT is refused, the route's request passes.
  const upstream = createHttpServer((_q, r) => r.end('{}'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise((r) => {
        upstream.closeAllConnections();
        upstream.close(r);
      }),
  );
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const sock = join(dir, 'egress.sock');
  const route = {
    name: 'search',
    prefix: '/search',
    allow: [{ method: 'GET', path: '/search/drive/v3/files' }],
    upstream: base,
    rewrite: { from: '/search/', to: '/' },
    placeholder_env: 'P',
    token_ref: '${T}',
    base_url_env: 'B',
  };
  const h = await d.egressGateway.open('sess-metrics', sock, {
    userId: 1,
    routes: [route],
    tokens: { T: 'real-metrics-token-0123456789' },
  });
  t.teardown(() => h.close());
  t.match(
    await sendVia(sock, 'CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n'),
    / 403 /,
    'a tunnel: refused',
  );
  t.match(
    await sendVia(sock, 'GET /search/drive/v3/files HTTP/1.1\r\nHost: x\r\n\r\n'),
    / 200 /,
    'on the route table: forwarded',
  );

  const after = await scrape();
  t.equal(value(after, 'airlock_logins_total', { outcome: 'ok' }), 1, 'login ok counted');
  t.equal(value(after, 'airlock_logins_total', { outcome: 'failed' }), 1, 'failed login counted');
  t.equal(
    value(after, 'airlock_proxy_decisions_total', { route: 'egress', outcome: 'refused' }),
    1,
    'refused egress counted',
  );
  t.equal(
    value(after, 'airlock_proxy_decisions_total', { route: 'egress', outcome: 'allowed' }),
    1,
    'allowed egress counted',
  );
  for (const name of [
    'airlock_sessions_live',
    'airlock_session_starts_waiting',
    'airlock_sessions_started_total',
    'airlock_sessions_reaped_total',
    'airlock_session_start_seconds',
    'airlock_turns_total',
    'airlock_model_tokens_total',
    'airlock_sync_jobs_total',
    'airlock_token_refreshes_total',
  ]) {
    t.match(after, new RegExp(`# TYPE ${name} `), `${name} is exported`);
  }
  t.notOk(after.includes('mia-password-1') || after.includes('evil.example'), 'no passwords or targets in metrics');
});
