import t from 'tap';
import { statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCredentialProxy, SCRUBBED } from '../../proxy/index.js';
import { join } from 'node:path';
import { buildProfile, buildRoutes, ROUTE_ENV } from '../../daemon/overlay.js';
import { EgressGatewayService, egressTarget } from '../../daemon/egress.js';
import { createLogger } from '../../core/index.js';
import { start as startFakeUpstream } from '../../emulator/fake-upstream.js';
import { tempDir } from '../helpers/app.js';
import { outcomeOf, rawExchange, rawRequest, REAL_ACCESS, REAL_MODEL_KEY, startProxyRig } from '../helpers/proxy-rig.js';
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
    headers: { authorization: `Bearer ${ph.MAIL_API_KEY}`, 'content-type': 'application/json', 'proxy-authorization': 'x', 'x-keep': 'yes' },
    body: JSON.stringify({ raw }),
  });
  t.equal(mail.status, 200);
  t.equal(((await mail.json()) as { labelIds: string[] }).labelIds[0], 'SENT');
  const sheet = await fetch(rig.base + SHEET + '?majorDimension=ROWS&valueRenderOption=FORMATTED_VALUE', { headers: { authorization: `Bearer ${ph.SHEETS_API_KEY}` } });
  t.equal(sheet.status, 200);
  t.equal(((await sheet.json()) as { range: string }).range, 'Sheet1!A1:B3');
  const files = await fetch(rig.base + FILES + "?q=mimeType%3D'application%2Fvnd.google-apps.spreadsheet'&pageSize=10", { headers: { authorization: `Bearer ${ph.SEARCH_SHEETS_API_KEY}` } });
  t.equal(files.status, 200);
  const model = await fetch(rig.base + '/model/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${ph.AGENT_MODEL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [] }),
  });
  t.equal(model.status, 200);

  const reqs = rig.upstream.requests;
  t.same(reqs.map((r) => `${r.method} ${r.path.split('?')[0]}`), [
    'POST /gmail/v1/users/me/messages/send',
    'GET /v4/spreadsheets/sheet-1/values/Sheet1!A1:B3',
    'GET /drive/v3/files',
    'POST /v1/chat/completions',
  ]);
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
    ['mail', 'sheets', 'search', 'model'].map((route) => ({ route, outcome: 'forwarded', status: 200, ...(route === 'mail' ? { dropped_headers: 2 } : {}) })),
    'one decision per request, for /metrics (with the count of dropped headers)',
  );
  const sheets = rig.decisions.find((d) => d.route === 'sheets')!;
  t.same(
    { method: sheets.method, template: sheets.template, turn_id: sheets.turn_id, call_id: sheets.call_id },
    { method: 'GET', template: '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}', turn_id: null, call_id: null },
    'the audit fields: method and path template (never the values), no turn or call outside a session',
  );
  t.ok(rig.decisions.every((d) => typeof d.req_bytes === 'number' && typeof d.res_bytes === 'number' && typeof d.ms === 'number'), 'bytes and time of each');
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
  for (const h of ['x-listed-hop', 'keep-alive', 'te', 'trailer', 'via', 'x-forwarded-for', 'forwarded']) t.notOk(seen[h], `${h} stripped`);
  t.notMatch(String(seen.connection ?? ''), /x-listed-hop/i, 'the child\'s Connection list is not passed on');
  t.notOk(seen['x-keep'], 'a header off the allow-list is dropped too');
  t.equal(seen['content-type'], 'application/json', 'an allowed header passes');
  t.same(JSON.parse(rig.upstream.requests[0].body), { raw }, 'body forwarded unchanged');
});

t.test('anthropic model route injects x-api-key', async (t) => {
  const rig = await startProxyRig(t, { provider: 'anthropic' });
  const r = await fetch(rig.base + '/model/v1/messages', {
    method: 'POST',
    headers: { 'x-api-key': rig.placeholders.AGENT_MODEL_API_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: '{}',
  });
  t.equal(r.status, 200);
  t.equal(rig.upstream.requests[0].headers['x-api-key'], REAL_MODEL_KEY);
  t.notOk(rig.upstream.requests[0].headers.authorization);
});

t.test('wrong, missing or another route\'s placeholder → 401 ERR_PROXY_PLACEHOLDER, nothing forwarded', async (t) => {
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
    const r = await fetch(rig.base + MAIL, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"raw":"eA"}' });
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
  await new Promise((res) => setTimeout(res, 100));
  t.equal(rig.upstream.requests.length, 0);
  t.same(rig.decisions.map(outcomeOf), Array(cases.length + 1).fill({ route: 'mail', outcome: 'refused', status: 401, code: 'ERR_PROXY_PLACEHOLDER' }), 'each refusal is one decision; the dropped pipelined send is none');
});

t.test('hostile requests → 403/400 and the upstream records nothing', async (t) => {
  const rig = await startProxyRig(t);
  const ph = rig.placeholders.MAIL_API_KEY;
  const sph = rig.placeholders.SHEETS_API_KEY;
  const dph = rig.placeholders.SEARCH_SHEETS_API_KEY;
  const mph = rig.placeholders.AGENT_MODEL_API_KEY;
  const up = `127.0.0.1:${rig.upstream.port}`;
  const H = 'Host: 127.0.0.1\r\n';
  const req = (method: string, target: string, key = ph, extra = '', body = '{"raw":"eA"}') =>
    `${method} ${target} HTTP/1.1\r\n${H}Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${extra}\r\n${body}`;
  const get = (target: string, key = sph, extra = '') => `GET ${target} HTTP/1.1\r\n${H}Authorization: Bearer ${key}\r\n${extra}\r\n`;
  const valid = req('POST', MAIL);

  const table: [string, string][] = [
    // methods on the mail path
    ['GET on mail', get(MAIL, ph)],
    ['PUT on mail', req('PUT', MAIL)],
    ['DELETE on mail', req('DELETE', MAIL)],
    ['PATCH on mail', req('PATCH', MAIL)],
    ['HEAD on mail', `HEAD ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\n\r\n`],
    ['OPTIONS on mail', req('OPTIONS', MAIL)],
    ['TRACE on mail', `TRACE ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\n\r\n`],
    ['lowercase method', req('post', MAIL)],
    ['unknown method', req('SEND', MAIL)],
    // other Gmail paths (send-only grant; read/list must never pass)
    ['list messages', get('/gmail/mail/v1/users/me/messages', ph)],
    ['read message', get('/gmail/mail/v1/users/me/messages/123', ph)],
    ['send to other user', req('POST', '/gmail/mail/v1/users/other/messages/send')],
    ['drafts send', req('POST', '/gmail/mail/v1/users/me/drafts/send')],
    ['messages import', req('POST', '/gmail/mail/v1/users/me/messages/import')],
    ['trailing slash', req('POST', MAIL + '/')],
    ['extra segment', req('POST', MAIL + '/x')],
    ['upstream path directly', req('POST', '/gmail/gmail/v1/users/me/messages/send')],
    ['raw gmail path', req('POST', '/gmail/v1/users/me/messages/send')],
    ['case change prefix', req('POST', '/GMAIL/mail/v1/users/me/messages/send')],
    ['case change path', req('POST', '/gmail/MAIL/v1/users/me/messages/send')],
    ['query on POST', req('POST', MAIL + '?uploadType=media')],
    // encodings
    ['encoded letter', req('POST', '/gmail/mail/v1/users/me/messages/%73end')],
    ['encoded slash', req('POST', '/gmail/mail/v1/users/me%2fmessages/send')],
    ['encoded slash upper', req('POST', '/gmail/mail/v1/users/me%2Fmessages/send')],
    ['encoded backslash', req('POST', '/gmail/mail/v1/users/me%5cmessages/send')],
    ['encoded dot-dot', req('POST', '/gmail/mail/v1/users/me/messages/%2e%2e/send')],
    ['encoded dot upper', req('POST', '/gmail/mail/v1/users/me/messages/%2E/send')],
    ['double encoding', req('POST', '/gmail/mail/v1/users/me/messages/send%252f')],
    ['encoded NUL', req('POST', MAIL + '%00')],
    ['encoded CR LF', req('POST', MAIL + '%0d%0aX:1')],
    ['malformed escape', req('POST', MAIL + '%zz')],
    ['raw backslash', req('POST', '/gmail/mail/v1/users/me\\messages/send')],
    ['matrix param', req('POST', MAIL + ';jsessionid=1')],
    ['fragment', req('POST', MAIL + '#x')],
    ['non-ascii path', req('POST', '/gmail/mail/v1/users/me/messages/s\u00e9nd')],
    ['encoded space', req('POST', MAIL + '%20')],
    // dot segments and empty segments
    ['dot-dot', req('POST', '/gmail/mail/v1/users/me/messages/../messages/send')],
    ['dot', req('POST', '/gmail/mail/v1/users/me/./messages/send')],
    ['double slash inside', req('POST', '/gmail//mail/v1/users/me/messages/send')],
    ['double slash start', req('POST', '//gmail/mail/v1/users/me/messages/send')],
    ['traverse out of sheets', get('/sheets/v4/spreadsheets/../../search/drive/v3/files', dph)],
    // absolute-form, asterisk, CONNECT, upgrade
    ['absolute-form to self', req('POST', `http://127.0.0.1${MAIL}`)],
    ['absolute-form to google', req('POST', 'https://gmail.googleapis.com/gmail/v1/users/me/messages/send')],
    ['absolute-form userinfo', req('POST', `http://x@${up}/gmail/v1/users/me/messages/send`)],
    ['asterisk-form', `OPTIONS * HTTP/1.1\r\n${H}\r\n`],
    ['CONNECT google', `CONNECT gmail.googleapis.com:443 HTTP/1.1\r\nHost: gmail.googleapis.com:443\r\n\r\n`],
    ['CONNECT upstream', `CONNECT ${up} HTTP/1.1\r\nHost: ${up}\r\nAuthorization: Bearer ${ph}\r\n\r\n`],
    ['websocket upgrade', `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`],
    ['h2c upgrade', `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`],
    // smuggling and framing
    ['CL + TE', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`],
    ['TE + CL', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n`],
    ['TE chunked, chunked', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n`],
    ['TE gzip', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: gzip\r\n\r\nxx`],
    ['TE xchunked', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`],
    ['TE space before colon', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n`],
    ['two TE headers', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n`],
    ['two CL headers', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\n{"raw":"eA"}`],
    ['CL negative', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: -1\r\n\r\n`],
    ['CL not a number', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 1e1\r\n\r\n{"raw":"eA"}`],
    ['bad chunk size', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n`],
    ['GET with body smuggling a send', `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nContent-Length: ${valid.length}\r\n\r\n${valid}`],
    ['denied request then pipelined send', req('GET', MAIL) + valid],
    // header tricks
    ['oversize header', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-Big: ${'a'.repeat(20000)}\r\nContent-Length: 0\r\n\r\n`],
    ['too many headers', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\n${Array.from({ length: 80 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nContent-Length: 0\r\n\r\n`],
    ['duplicate host', `POST ${MAIL} HTTP/1.1\r\n${H}Host: evil.example\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`],
    ['missing host', `POST ${MAIL} HTTP/1.1\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`],
    ['duplicate authorization', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`],
    ['obs-fold header', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n`],
    ['NUL in header', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-A: b\u0000c\r\nContent-Length: 0\r\n\r\n`],
    ['space in header name', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX A: b\r\nContent-Length: 0\r\n\r\n`],
    ['expect 100-continue on a denied path', req('PUT', MAIL, ph, 'Expect: 100-continue\r\n')],
    ['expect 100-continue, wrong route', `POST /gmail/mail/v1/users/me/messages/list HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`],
    ['method override header', req('POST', MAIL, ph, 'X-HTTP-Method-Override: GET\r\n')],
    ['HTTP/2.0 version', `POST ${MAIL} HTTP/2.0\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`],
    ['HTTP/0.9 style', `GET ${MAIL}\r\n\r\n`],
    ['bare LF GET', `GET ${MAIL} HTTP/1.1\n${H.trim()}\nAuthorization: Bearer ${ph}\n\n`],
    // sheets and drive routes
    ['sheets metadata', get('/sheets/v4/spreadsheets/abc')],
    ['sheets batchGet', get('/sheets/v4/spreadsheets/abc/values:batchGet')],
    ['sheets append', req('POST', '/sheets/v4/spreadsheets/abc/values/A1:append', sph)],
    ['sheets update', req('PUT', '/sheets/v4/spreadsheets/abc/values/A1', sph)],
    ['sheets extra segment', get('/sheets/v4/spreadsheets/abc/values/A1/x')],
    ['sheets encoded dots', get('/sheets/v4/spreadsheets/%2e%2e/values/A1')],
    ['sheets empty id', get('/sheets/v4/spreadsheets//values/A1')],
    // an encoded slash or backslash: only inside the opaque range, never to reach elsewhere
    ['sheets encoded slash in the id', get('/sheets/v4/spreadsheets/a%2Fb/values/A1')],
    ['sheets encoded slash for a route slash', get('/sheets/v4/spreadsheets/abc%2Fvalues%2FA1')],
    ['sheets range traversal', get('/sheets/v4/spreadsheets/abc/values/..%2F..%2F..%2Fsearch%2Fdrive%2Fv3%2Ffiles')],
    ['sheets range traversal, lower case', get('/sheets/v4/spreadsheets/abc/values/A1%2f..')],
    ['sheets range backslash traversal', get('/sheets/v4/spreadsheets/abc/values/x%5C..%5C..%5Cy')],
    ['sheets range dot part', get('/sheets/v4/spreadsheets/abc/values/.%2FA1')],
    ['sheets range double encoding', get('/sheets/v4/spreadsheets/abc/values/a%252Fb')],
    ['sheets range percent', get('/sheets/v4/spreadsheets/abc/values/50%25!A1')],
    ['sheets range encoded dots', get('/sheets/v4/spreadsheets/abc/values/%2e%2e')],
    ['drive encoded slash between literals', get('/search/drive%2Fv3/files', dph)],
    ['drive encoded slash in prefix', get('/search%2Fdrive/v3/files', dph)],
    ['sheets query with encoded CR LF', get(SHEET + '?x=%0d%0aX:1')],
    ['drive query malformed escape', get(FILES + '?q=50%', dph)],
    ['sheets GET with body', `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nContent-Length: 2\r\n\r\n{}`],
    ['drive file get', get('/search/drive/v3/files/abc', dph)],
    ['drive export', get('/search/drive/v3/files/abc/export', dph)],
    ['drive delete', req('DELETE', FILES, dph)],
    ['drive create', req('POST', FILES, dph)],
    ['drive v2', get('/search/drive/v2/files', dph)],
    ['drive about', get('/search/drive/v3/about', dph)],
    ['drive via sheets prefix', get('/sheets/drive/v3/files', sph)],
    // model and unknown routes
    ['model list', get('/model/models', mph)],
    ['model embeddings', req('POST', '/model/embeddings', mph)],
    ['model wrong shape', req('POST', '/model/v1/chat/completions', mph)],
    ['root', get('/', ph)],
    ['unknown route', get('/unknown', ph)],
    ['host route absent', get('/host/api/agent/memories', ph)],
    ['prefix without path', req('POST', '/gmail')],
    ['prefix look-alike', req('POST', '/gmailx/mail/v1/users/me/messages/send')],
  ];
  t.ok(table.length >= 60, `${table.length} hostile requests`);
  for (const [name, raw] of table) {
    const r = await rawRequest(rig.proxy.port, raw);
    t.ok(r.status === 403 || r.status === 400, `${name}: ${r.status}`);
    t.notMatch(r.text, /^HTTP\/1\.1 100/, `${name}: no 100 Continue before the check`);
    if (r.status === 403 || r.status === 400) t.match(r.text, /x-airlock-error: ERR_PROXY_(ROUTE_DENIED|BAD_REQUEST)/i, `${name}: coded`);
  }
  // Give any stray forwarding a chance to land before checking.
  await new Promise((r) => setTimeout(r, 100));
  t.same(rig.upstream.requests, [], 'the upstream recorded nothing');
  t.equal(rig.proxy.stats().forwarded, 0);
  t.ok(rig.decisions.length >= table.length, 'every hostile request is a decision');
  t.same(rig.decisions.filter((d) => d.outcome !== 'refused'), [], 'all of them refusals');
  t.same([...new Set(rig.decisions.map((d) => d.code))].sort(), ['ERR_PROXY_BAD_REQUEST', 'ERR_PROXY_ROUTE_DENIED'], 'coded');
});

t.test('an echoed real token is scrubbed from headers and body', async (t) => {
  const rig = await startProxyRig(t);
  const r = await fetch(rig.base + SHEET, { headers: { authorization: `Bearer ${rig.placeholders.SHEETS_API_KEY}`, 'x-test-echo': '1' } });
  t.equal(r.status, 200);
  t.equal(rig.upstream.requests.length, 1, 'upstream did see the request (and the token)');
  t.equal(rig.upstream.requests[0].headers.authorization, `Bearer ${REAL_ACCESS}`);
  const echoed = r.headers.get('x-echo-authorization') ?? '';
  const body = await r.text();
  t.notOk(echoed.includes(REAL_ACCESS), 'header scrubbed');
  t.notOk(body.includes(REAL_ACCESS), 'body scrubbed');
  t.equal(echoed, `Bearer ${SCRUBBED}`);
  t.equal((JSON.parse(body) as { echoed_authorization: string }).echoed_authorization, `Bearer ${SCRUBBED}`);
  const line = rig.proxyLogs.map((l) => JSON.parse(l)).find((l) => l.msg === 'proxy request');
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
    fetch(rig.base + MAIL, { method: 'POST', headers: { authorization: `Bearer ${rig.placeholders.MAIL_API_KEY}`, 'content-type': 'application/json' }, body: '{"raw":"eA"}' });
  t.equal((await send()).status, 200);
  rig.tokens.MAIL_ACCESS_TOKEN = 'ya29.ROTATED-token-after-refresh-xyz';
  t.equal((await send()).status, 200);
  t.same(rig.upstream.requests.map((r) => r.headers.authorization), [`Bearer ${REAL_ACCESS}`, 'Bearer ya29.ROTATED-token-after-refresh-xyz']);
});

t.test('egress socket: mode 0600, CONNECT only to the session\'s upstreams, refusals logged with the session id', async (t) => {
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
  for (const target of [`127.0.0.1:${otherPort}`, 'evil.example:443', `localhost:${rig.upstream.port}`, `127.0.0.1:${rig.upstream.port + 0}0`, '[::1]:22', 'gmail.googleapis.com:443']) {
    const r = await rawExchange(at, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    t.equal(r.status, 403, `CONNECT ${target} refused`);
  }
  t.equal((await rawExchange(at, `GET http://127.0.0.1:${rig.upstream.port}/drive/v3/files HTTP/1.1\r\nHost: x\r\n\r\n`)).status, 403, 'plain proxying refused');
  t.equal((await rawExchange(at, 'garbage\r\n\r\n')).status, 400);
  const ok = await rawExchange(at, `CONNECT 127.0.0.1:${rig.upstream.port} HTTP/1.1\r\nHost: x\r\n\r\n`, 300);
  t.equal(ok.status, 200, 'the allowed upstream is reachable');
  t.same(hits, [], 'the other server saw nothing');
  const refusals = rig.logs.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'egress refused');
  t.ok(refusals.length >= 7);
  t.ok(refusals.every((l) => l.sessionId === 'sess-test-1'), 'each refusal names the session');

  // A proxy route whose upstream the gateway does not allow → 502, nothing reached.
  const proxy = await startCredentialProxy({
    profile: buildProfile('sess-test-1', 0, [
      { name: 'sheets', prefix: '/sheets', allow: [{ method: 'GET', path: '/sheets/x' }], upstream: `http://127.0.0.1:${otherPort}`, placeholder_env: 'P', token_ref: '${T}', base_url_env: 'B' },
    ]),
    getToken: () => 'real-token-value-1234567890',
    getPlaceholder: () => 'ph-value-abcdefabcdef',
    egressSocket: rig.socketPath,
  });
  t.teardown(() => proxy.close());
  const r = await fetch(`http://127.0.0.1:${proxy.port}/sheets/x`, { headers: { authorization: 'Bearer ph-value-abcdefabcdef' } });
  t.equal(r.status, 502);
  t.equal(r.headers.get('x-airlock-error'), 'ERR_PROXY_UPSTREAM');
  t.same(hits, [], 'the other server still saw nothing');
});

t.test('a route naming an unset token makes the proxy fail at start', async (t) => {
  await t.rejects(
    startCredentialProxy({
      profile: buildProfile('s', 0, [{ name: 'mail', prefix: '/gmail', allow: [], upstream: 'http://127.0.0.1:1', placeholder_env: 'MAIL_API_KEY', token_ref: '${MAIL_ACCESS_TOKEN}', base_url_env: 'MAIL_BASE_URL' }]),
      getToken: () => undefined,
      getPlaceholder: () => 'x',
      egressSocket: '/nonexistent',
    }),
    { code: 'ERR_PROXY_TOKEN_MISSING' },
  );
});

t.test('an opaque name that is no parameter of its template makes the proxy fail at start', async (t) => {
  await t.rejects(
    startCredentialProxy({
      profile: buildProfile('s', 0, [{ name: 'sheets', prefix: '/sheets', allow: [{ method: 'GET', path: '/sheets/v4/spreadsheets/{id}/values/A1', opaque: ['range'] }], upstream: 'http://127.0.0.1:1', placeholder_env: 'P', token_ref: '${T}', base_url_env: 'B' }]),
      getToken: () => 'real-token-value-1234567890',
      getPlaceholder: () => 'x',
      egressSocket: '/nonexistent',
    }),
    { code: 'ERR_PROXY_PROFILE' },
  );
});

t.test('upstream down → 502, upstream too slow → 504, both coded', async (t) => {
  const rig = await startProxyRig(t);
  const { EgressGatewayService } = await import('../../daemon/egress.js');
  const { createLogger } = await import('../../core/index.js');
  // A server that accepts and never answers.
  const hang = createServer(() => {});
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { hang.closeAllConnections(); hang.close(() => r()); }));
  const hangPort = (hang.address() as AddressInfo).port;
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const sock = rig.socketPath + '.2';
  const h = await gw.open('s2', sock, [`127.0.0.1:${hangPort}`, '127.0.0.1:1']);
  t.teardown(() => h.close());
  const decisions: unknown[] = [];
  const route = (name: string, upstream: string) => ({ name, prefix: `/${name}`, allow: [{ method: 'GET', path: `/${name}/x` }], upstream, placeholder_env: 'P', token_ref: '${T}', base_url_env: 'B' });
  const proxy = await startCredentialProxy({
    profile: buildProfile('s2', 0, [route('down', 'http://127.0.0.1:1'), route('slow', `http://127.0.0.1:${hangPort}`)]),
    getToken: () => 'real-token-value-1234567890',
    getPlaceholder: () => 'ph-value-abcdefabcdef',
    egressSocket: sock,
    upstreamTimeoutMs: 300,
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

t.test('https upstream: TLS over the egress tunnel, certificate verified, token injected', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const { createServer: createHttps } = await import('node:https');
  const { join } = await import('node:path');
  const { tempDir } = await import('../helpers/app.js');
  const { EgressGatewayService } = await import('../../daemon/egress.js');
  const { createLogger } = await import('../../core/index.js');
  const dir = tempDir(t);
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
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
  t.teardown(() => new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); }));
  const port = (srv.address() as AddressInfo).port;
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const sock = join(dir, 'egress.sock');
  const h = await gw.open('tls', sock, [`127.0.0.1:${port}`]);
  t.teardown(() => h.close());
  const route = { name: 'search', prefix: '/search', allow: [{ method: 'GET', path: '/search/drive/v3/files' }], upstream: `https://127.0.0.1:${port}`, rewrite: { from: '/search/', to: '/' }, placeholder_env: 'P', token_ref: '${T}', base_url_env: 'B' };
  const start = (ca?: Buffer) =>
    startCredentialProxy({ profile: buildProfile('tls', 0, [route]), getToken: () => 'real-tls-token-0123456789', getPlaceholder: () => 'ph-tls-abcdefabcdef', egressSocket: sock, tlsCa: ca });
  const good = await start(cert);
  t.teardown(() => good.close());
  const r = await fetch(`http://127.0.0.1:${good.port}/search/drive/v3/files`, { headers: { authorization: 'Bearer ph-tls-abcdefabcdef' } });
  t.equal(r.status, 200);
  t.same(seen, ['Bearer real-tls-token-0123456789']);
  t.notOk((await r.text()).includes('real-tls-token'), 'echo scrubbed over TLS too');
  // Without trusting the certificate the handshake fails: nothing is sent.
  const untrusting = await start();
  t.teardown(() => untrusting.close());
  const bad = await fetch(`http://127.0.0.1:${untrusting.port}/search/drive/v3/files`, { headers: { authorization: 'Bearer ph-tls-abcdefabcdef' } });
  t.equal(bad.status, 502);
  t.equal(seen.length, 1, 'the untrusted upstream received no request');
});

t.test('host route: the child\'s AGENT_USER_TOKEN is checked and passed through, no injection', async (t) => {
  const daemon = await startFakeUpstream();
  t.teardown(() => daemon.close());
  const routes = buildRoutes({ google: { mailBaseUrl: 'https://x', sheetsBaseUrl: 'https://x', driveBaseUrl: 'https://x' }, model: { provider: 'demo' }, hasAccountToken: false, hasModelKey: false, hostOrigin: daemon.url });
  t.same(routes.map((r) => r.name), ['host']);
  const sock = join(tempDir(t), 'egress.sock');
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const h = await gw.open('host', sock, []);
  t.teardown(() => h.close());
  const agentToken = 'agent-user-token.signed.abcdef';
  const proxy = await startCredentialProxy({ profile: buildProfile('host', 0, routes), getToken: () => undefined, getPlaceholder: (n) => (n === 'AGENT_USER_TOKEN' ? agentToken : undefined), egressSocket: sock });
  t.teardown(() => proxy.close());
  const url = `http://127.0.0.1:${proxy.port}/host/api/agent/memories?limit=5`;
  // Not yet in the egress allow-list → 502; after update() it passes.
  t.equal((await fetch(url, { headers: { authorization: `Bearer ${agentToken}` } })).status, 502);
  h.update(routes.map((r) => egressTarget(r.upstream)));
  const r = await fetch(url, { headers: { authorization: `Bearer ${agentToken}` } });
  t.equal(r.status, 404, 'the fake daemon answered (it has no memories API)');
  t.same(daemon.requests.map((q) => [q.method, q.path, q.headers.authorization]), [['GET', '/api/agent/memories?limit=5', `Bearer ${agentToken}`]]);
  t.equal((await fetch(url, { headers: { authorization: 'Bearer forged' } })).status, 401);
  t.equal((await fetch(`http://127.0.0.1:${proxy.port}/host/admin`, { headers: { authorization: `Bearer ${agentToken}` } })).status, 403);
  t.equal(daemon.requests.length, 1);
});

t.test('keyless model route (local model server): the placeholder is checked, no credential goes upstream', async (t) => {
  const model = await startFakeUpstream();
  t.teardown(() => model.close());
  const routes = buildRoutes({ google: { mailBaseUrl: 'https://x', sheetsBaseUrl: 'https://x', driveBaseUrl: 'https://x' }, model: { provider: 'openai', baseUrl: `${model.url}/v1` }, hasAccountToken: false, hasModelKey: false });
  t.same(routes.map((r) => [r.name, r.token_ref, r.inject]), [['model', null, 'none']], 'a model route without a token reference');
  const sock = join(tempDir(t), 'egress.sock');
  const gw = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const h = await gw.open('keyless', sock, routes.map((r) => egressTarget(r.upstream)));
  t.teardown(() => h.close());
  const ph = 'ph-model-keyless-0123456789abcdef';
  const proxy = await startCredentialProxy({ profile: buildProfile('keyless', 0, routes), getToken: () => undefined, getPlaceholder: (n) => (n === ROUTE_ENV.model.placeholder ? ph : undefined), egressSocket: sock });
  t.teardown(() => proxy.close());
  const url = `http://127.0.0.1:${proxy.port}/model/chat/completions`;
  const body = JSON.stringify({ model: 'llama', messages: [] });
  const wrong = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json' }, body });
  t.equal(wrong.status, 401, 'a wrong placeholder is refused even without a key');
  t.equal(model.requests.length, 0);
  const ok = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${ph}`, 'content-type': 'application/json' }, body });
  t.equal(ok.status, 200);
  t.equal(model.requests.length, 1);
  t.equal(model.requests[0].path, '/v1/chat/completions');
  t.notOk(model.requests[0].headers.authorization, 'no Authorization upstream');
  t.notOk(JSON.stringify(model.requests[0].headers).includes(ph), 'the placeholder stays in the sandbox');
});
