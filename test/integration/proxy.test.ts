import t from 'tap';
import { statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCredentialProxy, SCRUBBED } from '../../proxy/index.js';
import { join } from 'node:path';
import { buildProfile, buildRoutes, ROUTE_ENV } from '../../daemon/host/overlay.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { createLogger } from '../../core/index.js';
import { start as startFakeUpstream } from '../../emulator/fake-upstream.js';
import { tempDir } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import {
  outcomeOf,
  rawExchange,
  rawRequest,
  REAL_ACCESS,
  REAL_MODEL_KEY,
  startProxyRig,
} from '../helpers/proxy-rig.js';
import type { ProxyDecision } from '../../proxy/index.js';

const MAIL = '/gmail/mail/v1/users/me/messages/send';
const SHEET = '/sheets/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3';
const FILES = '/search/drive/v3/files';

t.test('real token arrives upstream, the placeholder never does; logs hold no secrets', async (t) => {
  const rig = await startProxyRig(t);
  const ph = rig.placeholders;
  const raw = Buffer.from('To: bob@example.test\r\nSubject: hi\r\n\r\nbody').toString('base64url');
  const mail = await fetch(rig.base + MAIL, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ph.MAIL_API_KEY}`,
      'content-type': 'application/json',
      'proxy-authorization': 'x',
      'x-keep': 'yes',
    },
    body: JSON.stringify({ raw }),
  });
  t.equal(mail.status, 200);
  t.equal(((await mail.json()) as { labelIds: string[] }).labelIds[0], 'SENT');
  const sheet = await fetch(rig.base + SHEET + '?majorDimension=ROWS&valueRenderOption=FORMATTED_VALUE', {
    headers: { authorization: `Bearer ${ph.SHEETS_API_KEY}` },
  });
  t.equal(sheet.status, 200);
  t.equal(((await sheet.json()) as { range: string }).range, 'Sheet1!A1:B3');
  const files = await fetch(
    rig.base + FILES + "?q=mimeType%3D'application%2Fvnd.google-apps.spreadsheet'&pageSize=10",
    { headers: { authorization: `Bearer ${ph.SEARCH_SHEETS_API_KEY}` } },
  );
  t.equal(files.status, 200);
  const model = await fetch(rig.base + '/model/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${ph.AGENT_MODEL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [] }),
  });
  t.equal(model.status, 200);

  const reqs = rig.upstream.requests;
  t.same(
    reqs.map((r) => `${r.method} ${r.path.split('?')[0]}`),
    [
      'POST /gmail/v1/users/me/messages/send',
      'GET /v4/spreadsheets/sheet-1/values/Sheet1!A1:B3',
      'GET /drive/v3/files',
      'POST /v1/chat/completions',
    ],
  );
  t.equal(reqs[0].headers.authorization, `Bearer ${REAL_ACCESS}`);
  t.equal(reqs[1].headers.authorization, `Bearer ${REAL_ACCESS}`);
  t.equal(reqs[2].headers.authorization, `Bearer ${REAL_ACCESS}`);
  t.equal(reqs[3].headers.authorization, `Bearer ${REAL_MODEL_KEY}`);
  t.same(JSON.parse(reqs[0].body), { raw }, 'body forwarded unchanged');
  t.notOk(reqs[0].headers['x-keep'], 'a header off the allow-list is dropped');
  t.equal(reqs[0].headers['content-type'], 'application/json', 'an allowed header passes');
  t.notOk(reqs[0].headers['proxy-authorization'], 'Proxy-* stripped');
  t.match(reqs[1].path, /\?majorDimension=ROWS&valueRenderOption=FORMATTED_VALUE$/, 'query forwarded');
  const upstreamSeen = JSON.stringify(reqs);
  for (const p of Object.values(ph)) t.notOk(upstreamSeen.includes(p), 'no placeholder reached the upstream');

  const logText = rig.proxyLogs.join('\n') + rig.logs.text();
  for (const secret of [REAL_ACCESS, REAL_MODEL_KEY, ...Object.values(ph), raw, 'FORMATTED_VALUE', 'vnd.google-apps']) {
    t.notOk(logText.includes(secret), 'logs carry no token, placeholder, body or query value');
  }
  const line = rig.proxyLogs.map((l) => JSON.parse(l)).find((l) => l.route === 'sheets');
  t.same(line.query_keys, ['majorDimension', 'valueRenderOption'], 'query keys are logged');
  t.equal(line.template, '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}');
  t.equal(line.status, 200);
  t.ok(typeof line.res_bytes === 'number' && typeof line.ms === 'number');
  t.same(
    rig.decisions.map(outcomeOf),
    ['mail', 'sheets', 'search', 'model'].map((route) => ({
      route,
      outcome: 'forwarded',
      status: 200,
      ...(route === 'mail' ? { dropped_headers: 2 } : {}),
    })),
    'one decision per request, for /metrics (with the count of dropped headers)',
  );
  const sheets = rig.decisions.find((d) => d.route === 'sheets')!;
  t.same(
    { method: sheets.method, template: sheets.template, turn_id: sheets.turn_id, call_id: sheets.call_id },
    { method: 'GET', template: '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}', turn_id: null, call_id: null },
    'the audit fields: method and path template (never the values), no turn or call outside a session',
  );
  t.ok(
    rig.decisions.every(
      (d) => typeof d.req_bytes === 'number' && typeof d.res_bytes === 'number' && typeof d.ms === 'number',
    ),
    'bytes and time of each',
  );
  t.equal(rig.proxy.stats().droppedHeaders, 2, 'x-keep and proxy-authorization counted');
});

t.test('hop-by-hop headers, and any header the child names in Connection, never reach the upstream', async (t) => {
  const rig = await startProxyRig(t);
  const raw = Buffer.from('To: bob@example.test\r\nSubject: hi\r\n\r\nbody').toString('base64url');
  const body = JSON.stringify({ raw });
  const r = await rawRequest(
    rig.proxy.port,
    `POST ${MAIL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${rig.placeholders.MAIL_API_KEY}\r\n` +
      'Content-Type: application/json\r\nConnection: close, X-Listed-Hop\r\nX-Listed-Hop: drop-me\r\nKeep-Alive: timeout=5\r\n' +
      'TE: trailers\r\nTrailer: X-Later\r\nVia: 1.1 child\r\nX-Forwarded-For: 10.0.0.1\r\nForwarded: for=10.0.0.1\r\n' +
      `X-Keep: yes\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  t.equal(r.status, 200, 'the request itself is forwarded');
  t.equal(rig.upstream.requests.length, 1);
  const seen = rig.upstream.requests[0].headers;
  for (const h of ['x-listed-hop', 'keep-alive', 'te', 'trailer', 'via', 'x-forwarded-for', 'forwarded'])
    t.notOk(seen[h], `${h} stripped`);
  t.notMatch(String(seen.connection ?? ''), /x-listed-hop/i, "the child's Connection list is not passed on");
  t.notOk(seen['x-keep'], 'a header off the allow-list is dropped too');
  t.equal(seen['content-type'], 'application/json', 'an allowed header passes');
  t.same(JSON.parse(rig.upstream.requests[0].body), { raw }, 'body forwarded unchanged');
});

t.test('anthropic model route injects x-api-key', async (t) => {
  const rig = await startProxyRig(t, { provider: 'anthropic' });
  const r = await fetch(rig.base + '/model/v1/messages', {
    method: 'POST',
    headers: {
      'x-api-key': rig.placeholders.AGENT_MODEL_API_KEY,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    },
    body: '{}',
  });
  t.equal(r.status, 200);
  t.equal(rig.upstream.requests[0].headers['x-api-key'], REAL_MODEL_KEY);
  t.notOk(rig.upstream.requests[0].headers.authorization);
});

t.test("wrong, missing or another route's placeholder → 401 ERR_PROXY_PLACEHOLDER, nothing forwarded", async (t) => {
  const rig = await startProxyRig(t);
  const cases: Record<string, string>[] = [
    {},
    { authorization: 'Bearer wrong' },
    { authorization: `Bearer ${rig.placeholders.MAIL_API_KEY}x` },
    { authorization: `Bearer ${rig.placeholders.SHEETS_API_KEY}` },
    { authorization: `Basic ${rig.placeholders.MAIL_API_KEY}` },
    { authorization: `Bearer ${REAL_ACCESS}` },
    { 'x-api-key': rig.placeholders.MAIL_API_KEY },
  ];
  for (const headers of cases) {
    const r = await fetch(rig.base + MAIL, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{"raw":"eA"}',
    });
    t.equal(r.status, 401);
    t.equal(r.headers.get('x-airlock-error'), 'ERR_PROXY_PLACEHOLDER');
    t.equal(((await r.json()) as { error: { code: string } }).error.code, 'ERR_PROXY_PLACEHOLDER');
  }
  // A refused connection is never read again: a valid send pipelined behind a 401 is dropped.
  const valid = `POST ${MAIL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${rig.placeholders.MAIL_API_KEY}\r\nContent-Length: 2\r\n\r\n{}`;
  const wrong = valid.replace(rig.placeholders.MAIL_API_KEY, 'nope');
  const r = await rawRequest(rig.proxy.port, wrong + valid);
  t.equal(r.status, 401);
  t.equal(r.text.match(/HTTP\/1\.1 /g)?.length, 1, 'one answer only');
  // The proxy's own word that it took the send off the pipe and dropped it: its last say on it.
  await waitFor(
    () => rig.proxyLogs.some((l) => JSON.parse(l).msg === 'proxy dropped a request behind a refusal'),
    'the pipelined send to be dropped',
  );
  t.equal(rig.upstream.requests.length, 0);
  t.same(
    rig.decisions.map(outcomeOf),
    Array(cases.length + 1).fill({ route: 'mail', outcome: 'refused', status: 401, code: 'ERR_PROXY_PLACEHOLDER' }),
    'each refusal is one decision; the dropped pipelined send is none',
  );
});

t.test('an echoed real token is scrubbed from headers and body', async (t) => {
  const rig = await startProxyRig(t);
  const r = await fetch(rig.base + SHEET, {
    headers: { authorization: `Bearer ${rig.placeholders.SHEETS_API_KEY}`, 'x-test-echo': '1' },
  });
  t.equal(r.status, 200);
  t.equal(rig.upstream.requests.length, 1, 'upstream did see the request (and the token)');
  t.equal(rig.upstream.requests[0].headers.authorization, `Bearer ${REAL_ACCESS}`);
  const echoed = r.headers.get('x-echo-authorization') ?? '';
  const body = await r.text();
  t.notOk(echoed.includes(REAL_ACCESS), 'header scrubbed');
  t.notOk(body.includes(REAL_ACCESS), 'body scrubbed');
  t.equal(echoed, `Bearer ${SCRUBBED}`);
  t.equal((JSON.parse(body) as { echoed_authorization: string }).echoed_authorization, `Bearer ${SCRUBBED}`);
  // The gateway holds the token, so it scrubs (on the host) and counts.
  const line = rig.logs.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'egress forwarded');
  t.equal(line.scrubbed, 1);
});

t.test('Expect: 100-continue on an allowed send: continue, then forwarded', async (t) => {
  const rig = await startProxyRig(t);
  const body = '{"raw":"eA"}';
  const head = `POST ${MAIL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${rig.placeholders.MAIL_API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;
  const { connect } = await import('node:net');
  const text = await new Promise<string>((resolve) => {
    const s = connect(rig.proxy.port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => {
      got += d.toString();
      if (got.startsWith('HTTP/1.1 100') && !got.includes('\r\n\r\nHTTP')) s.write(body);
    });
    s.on('close', () => resolve(got));
    s.on('connect', () => s.write(head));
  });
  t.match(text, /^HTTP\/1\.1 100 Continue/);
  t.match(text, /HTTP\/1\.1 200/);
  t.equal(rig.upstream.requests.length, 1);
  t.equal(rig.upstream.requests[0].body, body);
  t.notOk(rig.upstream.requests[0].headers.expect, 'Expect is not forwarded');
});

t.test('rotation: after a token change requests carry the new token', async (t) => {
  const rig = await startProxyRig(t);
  const send = () =>
    fetch(rig.base + MAIL, {
      method: 'POST',
      headers: { authorization: `Bearer ${rig.placeholders.MAIL_API_KEY}`, 'content-type': 'application/json' },
      body: '{"raw":"eA"}',
    });
  t.equal((await send()).status, 200);
  // Rotation replaces the token in the gateway, on the host: nothing goes to the proxy.
  rig.gateway.setTokens({ MAIL_ACCESS_TOKEN: 'ya29.ROTATED-token-after-refresh-xyz' });
  t.equal((await send()).status, 200);
  t.same(
    rig.upstream.requests.map((r) => r.headers.authorization),
    [`Bearer ${REAL_ACCESS}`, 'Bearer ya29.ROTATED-token-after-refresh-xyz'],
  );
});

t.test(
  'egress socket (second wall): mode 0600; CONNECT, absolute-form, other routes, methods and paths refused on the host; refusals logged with the session id',
  async (t) => {
    const rig = await startProxyRig(t);
    t.equal(statSync(rig.socketPath).mode & 0o777, 0o600);
    // Another local server the session has no route to.
    const hits: string[] = [];
    const other = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('secret');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => other.close(() => r())));
    const otherPort = (other.address() as AddressInfo).port;
    const at = { path: rig.socketPath };
    // A compromised proxy speaking to the gateway directly: no placeholder needed here, but only
    // the session's own allow-list goes through.
    for (const target of [
      `127.0.0.1:${otherPort}`,
      'evil.example:443',
      `127.0.0.1:${rig.upstream.port}`,
      'gmail.googleapis.com:443',
    ]) {
      const r = await rawExchange(at, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      t.equal(r.status, 403, `CONNECT ${target} refused`);
      t.match(r.text, /ERR_EGRESS_DENIED/);
    }
    const get = (target: string, method = 'GET') =>
      rawExchange(at, `${method} ${target} HTTP/1.1\r\nHost: x\r\ncontent-length: 0\r\n\r\n`);
    t.equal((await get(`http://127.0.0.1:${otherPort}/drive/v3/files`)).status, 403, 'absolute-form refused');
    t.equal(
      (await get(`http://127.0.0.1:${rig.upstream.port}/search/drive/v3/files`)).status,
      403,
      'absolute-form to the allowed upstream refused too',
    );
    t.equal((await get('/gmail/gmail/v1/users/me/drafts', 'POST')).status, 403, 'a path off the mail route');
    t.equal((await get(MAIL, 'GET')).status, 403, 'the mail path with another method');
    t.equal((await get(SHEET, 'DELETE')).status, 403, 'DELETE on the sheets path');
    t.equal((await get('/host/api/agent/memories')).status, 403, 'a route this session does not have');
    t.equal((await get('/search/drive/v3/files/..%2F..%2Fadmin')).status, 403, 'a walk out of the route');
    t.equal((await rawExchange(at, 'garbage\r\n\r\n')).status, 400);
    t.same(hits, [], 'the other server saw nothing');
    t.same(rig.upstream.requests, [], 'the upstream saw nothing');
    const ok = await get(FILES + '?pageSize=1');
    t.equal(ok.status, 200, 'an allow-listed request of the session goes through, with the token injected on the host');
    t.equal(rig.upstream.requests[0].headers.authorization, `Bearer ${REAL_ACCESS}`);
    const refusals = rig.logs.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'egress refused');
    t.ok(refusals.length >= 11);
    t.ok(
      refusals.every((l) => l.sessionId === 'sess-test-1'),
      'each refusal names the session',
    );
  },
);

t.test('the gateway holds no token for a route: 503 ERR_PROXY_TOKEN_MISSING, nothing upstream', async (t) => {
  const up = await startFakeUpstream();
  t.teardown(() => up.close());
  const routes = buildRoutes({
    google: { mailBaseUrl: up.url, sheetsBaseUrl: up.url, driveBaseUrl: up.url },
    model: { provider: 'demo' },
    hasAccountToken: true,
    hasModelKey: false,
  });
  const sock = join(tempDir(t), 'egress.sock');
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const h = await gw.open('no-token', sock, { userId: 1, routes, tokens: {} });
  t.teardown(() => h.close());
  const proxy = await startCredentialProxy({
    profile: buildProfile('no-token', 0, routes),
    getPlaceholder: () => 'ph-value-abcdefabcdef',
    egressSocket: sock,
  });
  t.teardown(() => proxy.close());
  const r = await fetch(`http://127.0.0.1:${proxy.port}${FILES}`, {
    headers: { authorization: 'Bearer ph-value-abcdefabcdef' },
  });
  t.equal(r.status, 503);
  t.equal(r.headers.get('x-airlock-error'), 'ERR_PROXY_TOKEN_MISSING');
  t.same(up.requests, []);
});

t.test('an opaque name that is no parameter of its template makes the proxy fail at start', async (t) => {
  await t.rejects(
    startCredentialProxy({
      profile: buildProfile('s', 0, [
        {
          name: 'sheets',
          prefix: '/sheets',
          allow: [{ method: 'GET', path: '/sheets/v4/spreadsheets/{id}/values/A1', opaque: ['range'] }],
          upstream: 'http://127.0.0.1:1',
          placeholder_env: 'P',
          token_ref: '${T}',
          base_url_env: 'B',
        },
      ]),
      getPlaceholder: () => 'x',
      egressSocket: '/nonexistent',
    }),
    { code: 'ERR_PROXY_PROFILE' },
  );
});

t.test('upstream down → 502, upstream too slow → 504, both coded', async (t) => {
  const rig = await startProxyRig(t);
  const { EgressGatewayService } = await import('../../daemon/host/egress.js');
  const { createLogger } = await import('../../core/index.js');
  // A server that accepts and never answers.
  const hang = createServer(() => {});
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        hang.closeAllConnections();
        hang.close(() => r());
      }),
  );
  const hangPort = (hang.address() as AddressInfo).port;
  const decisions: unknown[] = [];
  const route = (name: string, upstream: string) => ({
    name,
    prefix: `/${name}`,
    allow: [{ method: 'GET', path: `/${name}/x` }],
    upstream,
    placeholder_env: 'P',
    token_ref: '${T}',
    base_url_env: 'B',
  });
  const routes = [route('down', 'http://127.0.0.1:1'), route('slow', `http://127.0.0.1:${hangPort}`)];
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }), upstreamTimeoutMs: 300 });
  const sock = rig.socketPath + '.2';
  const h = await gw.open('s2', sock, { userId: 1, routes, tokens: { T: 'real-token-value-1234567890' } });
  t.teardown(() => h.close());
  const proxy = await startCredentialProxy({
    profile: buildProfile('s2', 0, routes),
    getPlaceholder: () => 'ph-value-abcdefabcdef',
    egressSocket: sock,
    onDecision: (d) => decisions.push(d),
  });
  t.teardown(() => proxy.close());
  const auth = { authorization: 'Bearer ph-value-abcdefabcdef' };
  const down = await fetch(`http://127.0.0.1:${proxy.port}/down/x`, { headers: auth });
  t.equal(down.status, 502);
  t.equal(down.headers.get('x-airlock-error'), 'ERR_PROXY_UPSTREAM');
  const slow = await fetch(`http://127.0.0.1:${proxy.port}/slow/x`, { headers: auth });
  t.equal(slow.status, 504);
  t.equal(slow.headers.get('x-airlock-error'), 'ERR_PROXY_TIMEOUT');
  t.notOk(JSON.stringify(await slow.json()).includes('real-token'), 'no token in the error body');
  t.same((decisions as ProxyDecision[]).map(outcomeOf), [
    { route: 'down', outcome: 'upstream_error', status: 502, code: 'ERR_PROXY_UPSTREAM' },
    { route: 'slow', outcome: 'upstream_error', status: 504, code: 'ERR_PROXY_TIMEOUT' },
  ]);
});

t.test('https upstream: TLS from the gateway on the host, certificate verified, token injected there', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const { createServer: createHttps } = await import('node:https');
  const { join } = await import('node:path');
  const { tempDir } = await import('../helpers/app.js');
  const { EgressGatewayService } = await import('../../daemon/host/egress.js');
  const { createLogger } = await import('../../core/index.js');
  const dir = tempDir(t);
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      {
        stdio: 'ignore',
      },
    );
  } catch {
    t.comment('skipped: openssl is not available to make a test certificate');
    return;
  }
  const cert = readFileSync(join(dir, 'cert.pem'));
  const seen: string[] = [];
  const srv = createHttps({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    seen.push(String(req.headers.authorization));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ files: [], echoed: req.headers.authorization }));
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
  const route = {
    name: 'search',
    prefix: '/search',
    allow: [{ method: 'GET', path: '/search/drive/v3/files' }],
    upstream: `https://127.0.0.1:${port}`,
    rewrite: { from: '/search/', to: '/' },
    placeholder_env: 'P',
    token_ref: '${T}',
    base_url_env: 'B',
  };
  // TLS is the gateway's (on the host): the proxy speaks plain HTTP over the egress socket.
  const start = async (name: string, ca?: Buffer) => {
    const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }), ...(ca ? { tlsCa: ca } : {}) });
    const sock = join(dir, `${name}.sock`);
    const h = await gw.open('tls', sock, { userId: 1, routes: [route], tokens: { T: 'real-tls-token-0123456789' } });
    t.teardown(() => h.close());
    return startCredentialProxy({
      profile: buildProfile('tls', 0, [route]),
      getPlaceholder: () => 'ph-tls-abcdefabcdef',
      egressSocket: sock,
    });
  };
  const good = await start('good', cert);
  t.teardown(() => good.close());
  const r = await fetch(`http://127.0.0.1:${good.port}/search/drive/v3/files`, {
    headers: { authorization: 'Bearer ph-tls-abcdefabcdef' },
  });
  t.equal(r.status, 200);
  t.same(seen, ['Bearer real-tls-token-0123456789']);
  t.notOk((await r.text()).includes('real-tls-token'), 'echo scrubbed over TLS too');
  // Without trusting the certificate the handshake fails: nothing is sent.
  const untrusting = await start('untrusting');
  t.teardown(() => untrusting.close());
  const bad = await fetch(`http://127.0.0.1:${untrusting.port}/search/drive/v3/files`, {
    headers: { authorization: 'Bearer ph-tls-abcdefabcdef' },
  });
  t.equal(bad.status, 502);
  t.equal(seen.length, 1, 'the untrusted upstream received no request');
});

t.test("host route: the child's AGENT_USER_TOKEN is checked and passed through, no injection", async (t) => {
  const daemon = await startFakeUpstream();
  t.teardown(() => daemon.close());
  const routes = buildRoutes({
    google: { mailBaseUrl: 'https://x', sheetsBaseUrl: 'https://x', driveBaseUrl: 'https://x' },
    model: { provider: 'demo' },
    hasAccountToken: false,
    hasModelKey: false,
    hostOrigin: daemon.url,
  });
  t.same(
    routes.map((r) => r.name),
    ['host'],
  );
  const sock = join(tempDir(t), 'egress.sock');
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const h = await gw.open('host', sock, { userId: 1, routes, tokens: {} });
  t.teardown(() => h.close());
  const agentToken = 'agent-user-token.signed.abcdef';
  const proxy = await startCredentialProxy({
    profile: buildProfile('host', 0, routes),
    getPlaceholder: (n) => (n === 'AGENT_USER_TOKEN' ? agentToken : undefined),
    egressSocket: sock,
  });
  t.teardown(() => proxy.close());
  const url = `http://127.0.0.1:${proxy.port}/host/api/agent/memories?limit=5`;
  const r = await fetch(url, { headers: { authorization: `Bearer ${agentToken}` } });
  t.equal(r.status, 404, 'the fake daemon answered (it has no memories API)');
  t.same(
    daemon.requests.map((q) => [q.method, q.path, q.headers.authorization]),
    [['GET', '/api/agent/memories?limit=5', `Bearer ${agentToken}`]],
  );
  t.equal((await fetch(url, { headers: { authorization: 'Bearer forged' } })).status, 401);
  t.equal(
    (await fetch(`http://127.0.0.1:${proxy.port}/host/admin`, { headers: { authorization: `Bearer ${agentToken}` } }))
      .status,
    403,
  );
  t.equal(daemon.requests.length, 1);
});

t.test(
  'keyless model route (local model server): the placeholder is checked, no credential goes upstream',
  async (t) => {
    const model = await startFakeUpstream();
    t.teardown(() => model.close());
    const routes = buildRoutes({
      google: { mailBaseUrl: 'https://x', sheetsBaseUrl: 'https://x', driveBaseUrl: 'https://x' },
      model: { provider: 'openai', baseUrl: `${model.url}/v1` },
      hasAccountToken: false,
      hasModelKey: false,
    });
    t.same(
      routes.map((r) => [r.name, r.token_ref, r.inject]),
      [['model', null, 'none']],
      'a model route without a token reference',
    );
    const sock = join(tempDir(t), 'egress.sock');
    const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
    const h = await gw.open('keyless', sock, { userId: 1, routes, tokens: {} });
    t.teardown(() => h.close());
    const ph = 'ph-model-keyless-0123456789abcdef';
    const proxy = await startCredentialProxy({
      profile: buildProfile('keyless', 0, routes),
      getPlaceholder: (n) => (n === ROUTE_ENV.model.placeholder ? ph : undefined),
      egressSocket: sock,
    });
    t.teardown(() => proxy.close());
    const url = `http://127.0.0.1:${proxy.port}/model/chat/completions`;
    const body = JSON.stringify({ model: 'llama', messages: [] });
    const wrong = await fetch(url, {
      method: 'POST',
      headers: { authorization: 'Bearer nope', 'content-type': 'application/json' },
      body,
    });
    t.equal(wrong.status, 401, 'a wrong placeholder is refused even without a key');
    t.equal(model.requests.length, 0);
    const ok = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${ph}`, 'content-type': 'application/json' },
      body,
    });
    t.equal(ok.status, 200);
    t.equal(model.requests.length, 1);
    t.equal(model.requests[0].path, '/v1/chat/completions');
    t.notOk(model.requests[0].headers.authorization, 'no Authorization upstream');
    t.notOk(JSON.stringify(model.requests[0].headers).includes(ph), 'the placeholder stays in the sandbox');
  },
);
