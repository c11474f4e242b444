import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  brotliCompressSync,
  constants as zc,
  createBrotliCompress,
  createGzip,
  deflateSync,
  gzipSync,
} from 'node:zlib';
import { createLogger } from '../../core/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildProfile } from '../../daemon/host/overlay.js';
import { SCRUBBED, startCredentialProxy, type ProxyDecision } from '../../proxy/index.js';
import { logSink, tempDir } from '../helpers/app.js';
import { outcomeOf, rawRequest } from '../helpers/proxy-rig.js';

/**
 * Upstreams that answer compressed although the proxy asked for identity: the proxy must
 * decode before it scrubs, or refuse when it cannot.
 */

const REAL = 'ya29.REAL-encoding-token-0123456789abcdef';
const PH = 'ph-encoding-0123456789abcdef';

interface Upstream {
  seen: IncomingMessage[];
  /** Releases a /stream/* answer that is waiting after its first event. */
  release(): void;
}

const body = (auth: string) => JSON.stringify({ note: 'hello', echoed_authorization: auth, pad: 'x'.repeat(3000) });

/** Writes `data` in small pieces, so compressed bytes (and the token) straddle chunks. */
async function dribble(res: ServerResponse, data: Buffer): Promise<void> {
  for (let i = 0; i < data.length; i += 7) {
    res.write(data.subarray(i, i + 7));
    if (i % 700 === 0) await new Promise((r) => setImmediate(r));
  }
  res.end();
}

async function start(t: Tap): Promise<{
  base: string;
  up: Upstream;
  decisions: ProxyDecision[];
  logs: { join(sep: string): string; gateway(): Record<string, unknown>[] };
}> {
  let release: () => void = () => {};
  const released = () => new Promise<void>((r) => (release = r));
  const seen: IncomingMessage[] = [];
  const srv = createServer((req, res) => {
    seen.push(req);
    const auth = String(req.headers.authorization ?? '');
    const [, kind, coding] = (req.url ?? '').split('/');
    const plain = Buffer.from(body(auth));
    const headers = { 'content-type': 'application/json', 'x-echo-authorization': auth };
    if (kind === 'body') {
      const encoded: Record<string, Buffer> = {
        gzip: gzipSync(plain),
        'x-gzip': gzipSync(plain),
        deflate: deflateSync(plain),
        br: brotliCompressSync(plain),
        'deflate, gzip': gzipSync(deflateSync(plain)),
        identity: plain,
        zstd: plain, // not really zstd: the proxy must refuse before reading it anyway
        compress: plain,
        // says gzip, is not: the raw token must not slip through
        'gzip-lie': plain,
      };
      const name = decodeURIComponent(coding);
      res.writeHead(200, { ...headers, 'content-encoding': name === 'gzip-lie' ? 'gzip' : name });
      void dribble(res, encoded[name]);
      return;
    }
    if (kind === 'empty') {
      res.writeHead(204, { 'content-encoding': 'gzip' });
      res.end();
      return;
    }
    if (kind === 'stream') {
      // A model stream: one event, flushed, then a pause until the test releases it.
      const z = coding === 'br' ? createBrotliCompress() : createGzip();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': coding });
      z.on('data', (d: Buffer) => res.write(d));
      z.on('end', () => res.end());
      const flush = () =>
        new Promise<void>((r) =>
          coding === 'br' ? z.flush(zc.BROTLI_OPERATION_FLUSH, r) : z.flush(zc.Z_SYNC_FLUSH, r),
        );
      const wait = released();
      void (async () => {
        z.write(`data: {"delta":"Thinking about ${auth}"}\n\n`);
        await flush();
        await wait;
        z.end('data: [DONE]\n\n');
      })();
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  const port = (srv.address() as AddressInfo).port;
  const sock = join(tempDir(t, 'airlock-proxy-enc-'), 'egress.sock');
  // The gateway decodes and scrubs (it holds the token): its log lines are the ones read below.
  const gwLogs = logSink();
  const gw = new EgressGatewayService({ log: createLogger({ level: 'debug', destination: gwLogs.stream }) });
  const routes = [
    {
      name: 'up',
      prefix: '/up',
      allow: ['body', 'empty', 'stream'].map((k) => ({ method: 'GET', path: `/up/${k}/{coding}` })),
      upstream: `http://127.0.0.1:${port}`,
      rewrite: { from: '/up/', to: '/' },
      placeholder_env: 'P',
      token_ref: '${T}',
      base_url_env: 'B',
    },
  ];
  // The gateway decodes and scrubs on the host (it holds the token).
  const h = await gw.open('enc', sock, { userId: 1, routes, tokens: { T: REAL } });
  t.teardown(() => h.close());
  const decisions: ProxyDecision[] = [];
  const logs: string[] = [];
  const proxy = await startCredentialProxy({
    profile: buildProfile('enc', 0, routes),
    getPlaceholder: () => PH,
    egressSocket: sock,
    onDecision: (d) => decisions.push(d),
    log: (level, msg, data) => logs.push(JSON.stringify({ level, msg, ...data })),
  });
  t.teardown(() => proxy.close());
  return {
    base: `http://127.0.0.1:${proxy.port}`,
    up: { seen, release: () => release() },
    decisions,
    logs: {
      join: (sep: string) => [...logs, ...gwLogs.lines].join(sep),
      gateway: () => gwLogs.lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    },
  };
}

type Tap = { teardown(fn: () => unknown): void };
const auth = { authorization: `Bearer ${PH}` };

t.test(
  'gzip, x-gzip, deflate, br and stacked codings: the child gets the decoded body with the token replaced',
  async (t) => {
    const { base, up, decisions, logs } = await start(t);
    for (const coding of ['gzip', 'x-gzip', 'deflate', 'br', 'deflate, gzip']) {
      const r = await fetch(`${base}/up/body/${encodeURIComponent(coding)}`, { headers: auth });
      t.equal(r.status, 200, coding);
      t.equal(r.headers.get('content-encoding'), null, `${coding}: content-encoding dropped, the body is plain`);
      t.equal(r.headers.get('content-length'), null, `${coding}: no stale content-length`);
      t.equal(r.headers.get('x-echo-authorization'), `Bearer ${SCRUBBED}`, `${coding}: header scrubbed`);
      const text = await r.text();
      t.notOk(text.includes(REAL), `${coding}: no token in the body`);
      t.same(
        JSON.parse(text),
        JSON.parse(body(`Bearer ${SCRUBBED}`)),
        `${coding}: decoded, token replaced, nothing else changed`,
      );
    }
    t.ok(
      up.seen.every((q) => q.headers['accept-encoding'] === 'identity' && q.headers.authorization === `Bearer ${REAL}`),
      'identity asked for, real token injected',
    );
    t.same(
      decisions.map((d) => d.outcome),
      Array(5).fill('forwarded'),
    );
    const lines = logs.gateway().filter((l) => l.msg === 'egress forwarded');
    t.same(
      lines.map((l) => [l.decoded, l.scrubbed]),
      [
        [['gzip'], 1],
        [['x-gzip'], 1],
        [['deflate'], 1],
        [['br'], 1],
        [['deflate', 'gzip'], 1],
      ],
      'decoded codings and scrub counts logged',
    );
    t.notOk(logs.join('\n').includes(REAL), 'no token in the logs');

    const ident = await fetch(`${base}/up/body/identity`, { headers: auth });
    t.equal((await ident.text()).includes(REAL), false, 'identity: scrubbed as before');
    const empty = await fetch(`${base}/up/empty/gzip`, { headers: auth });
    t.equal(empty.status, 204, 'an empty gzip-labelled answer stays empty');
  },
);

t.test('unknown content-encoding → 502 ERR_PROXY_UPSTREAM_ENCODING, nothing of the body passes', async (t) => {
  const { base, decisions } = await start(t);
  for (const coding of ['zstd', 'compress']) {
    const r = await fetch(`${base}/up/body/${coding}`, { headers: auth });
    t.equal(r.status, 502, coding);
    t.equal(r.headers.get('x-airlock-error'), 'ERR_PROXY_UPSTREAM_ENCODING');
    const text = await r.text();
    t.equal(
      (JSON.parse(text) as { error: { code: string } }).error.code,
      'ERR_PROXY_UPSTREAM_ENCODING',
      'the documented error body',
    );
    t.notOk(text.includes(REAL) || text.includes('hello'), 'no upstream bytes');
  }
  t.same(
    decisions.map(outcomeOf),
    Array(2).fill({ route: 'up', outcome: 'upstream_error', status: 502, code: 'ERR_PROXY_UPSTREAM_ENCODING' }),
  );
});

t.test('a body that is not what its content-encoding says is cut off, never passed raw', async (t) => {
  const { base, decisions } = await start(t);
  const port = Number(new URL(base).port);
  const r = await rawRequest(
    port,
    `GET /up/body/gzip-lie HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${PH}\r\n\r\n`,
  );
  t.comment(`child received ${r.text.length} bytes`);
  t.notOk(r.text.includes(REAL), 'the raw token never reaches the child');
  t.notOk(r.text.includes('hello'), 'nor any undecoded byte');
  // The gateway decodes before it sends the headers: the child gets the coded refusal, nothing of the body.
  t.equal(r.status, 502);
  t.match(r.text, /ERR_PROXY_UPSTREAM_ENCODING/);
  t.same(decisions.map(outcomeOf), [
    { route: 'up', outcome: 'upstream_error', status: 502, code: 'ERR_PROXY_UPSTREAM_ENCODING' },
  ]);
});

t.test('a compressed model stream that pauses is not held back by the decoder', async (t) => {
  for (const coding of ['gzip', 'br']) {
    const { base, up } = await start(t);
    const r = await fetch(`${base}/up/stream/${coding}`, { headers: auth });
    t.equal(r.headers.get('content-encoding'), null);
    const reader = r.body!.getReader();
    let first = '';
    const timer = setTimeout(() => reader.cancel(), 3000);
    while (!first.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      first += Buffer.from(value).toString();
    }
    clearTimeout(timer);
    t.equal(
      first,
      `data: {"delta":"Thinking about Bearer ${SCRUBBED}"}\n\n`,
      `${coding}: the first event arrives while the upstream still waits, token replaced`,
    );
    up.release();
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    t.equal(rest, 'data: [DONE]\n\n', `${coding}: then the rest`);
  }
});
