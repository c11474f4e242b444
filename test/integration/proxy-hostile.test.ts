/**
 * The proxy against hostile requests from the child (the table run on the host against the proxy
 * rig): every one is refused with its code, and the upstream records nothing.
 */
import t from 'tap';
import { rawRequest, startProxyRig } from '../helpers/proxy-rig.js';

const MAIL = '/gmail/mail/v1/users/me/messages/send';
const SHEET = '/sheets/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3';
const FILES = '/search/drive/v3/files';

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
  const get = (target: string, key = sph, extra = '') =>
    `GET ${target} HTTP/1.1\r\n${H}Authorization: Bearer ${key}\r\n${extra}\r\n`;
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
    [
      'websocket upgrade',
      `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    ],
    [
      'h2c upgrade',
      `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`,
    ],
    // smuggling and framing
    [
      'CL + TE',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'TE + CL',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n`,
    ],
    [
      'TE chunked, chunked',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n`,
    ],
    ['TE gzip', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: gzip\r\n\r\nxx`],
    [
      'TE xchunked',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'TE space before colon',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'two TE headers',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n`,
    ],
    [
      'two CL headers',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\n{"raw":"eA"}`,
    ],
    ['CL negative', `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: -1\r\n\r\n`],
    [
      'CL not a number',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 1e1\r\n\r\n{"raw":"eA"}`,
    ],
    [
      'bad chunk size',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n`,
    ],
    [
      'GET with body smuggling a send',
      `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nContent-Length: ${valid.length}\r\n\r\n${valid}`,
    ],
    ['denied request then pipelined send', req('GET', MAIL) + valid],
    // header tricks
    [
      'oversize header',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-Big: ${'a'.repeat(20000)}\r\nContent-Length: 0\r\n\r\n`,
    ],
    [
      'too many headers',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\n${Array.from({ length: 80 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nContent-Length: 0\r\n\r\n`,
    ],
    [
      'duplicate host',
      `POST ${MAIL} HTTP/1.1\r\n${H}Host: evil.example\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`,
    ],
    ['missing host', `POST ${MAIL} HTTP/1.1\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`],
    [
      'duplicate authorization',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nAuthorization: Bearer ${ph}\r\nContent-Length: 0\r\n\r\n`,
    ],
    [
      'obs-fold header',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n`,
    ],
    [
      'NUL in header',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX-A: b\u0000c\r\nContent-Length: 0\r\n\r\n`,
    ],
    [
      'space in header name',
      `POST ${MAIL} HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nX A: b\r\nContent-Length: 0\r\n\r\n`,
    ],
    ['expect 100-continue on a denied path', req('PUT', MAIL, ph, 'Expect: 100-continue\r\n')],
    [
      'expect 100-continue, wrong route',
      `POST /gmail/mail/v1/users/me/messages/list HTTP/1.1\r\n${H}Authorization: Bearer ${ph}\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`,
    ],
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
    [
      'sheets GET with body',
      `GET ${SHEET} HTTP/1.1\r\n${H}Authorization: Bearer ${sph}\r\nContent-Length: 2\r\n\r\n{}`,
    ],
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
    if (r.status === 403 || r.status === 400)
      t.match(r.text, /x-airlock-error: ERR_PROXY_(ROUTE_DENIED|BAD_REQUEST)/i, `${name}: coded`);
  }
  // Give any stray forwarding a chance to land before checking.
  await new Promise((r) => setTimeout(r, 100));
  t.same(rig.upstream.requests, [], 'the upstream recorded nothing');
  t.equal(rig.proxy.stats().forwarded, 0);
  t.ok(rig.decisions.length >= table.length, 'every hostile request is a decision');
  t.same(
    rig.decisions.filter((d) => d.outcome !== 'refused'),
    [],
    'all of them refusals',
  );
  t.same(
    [...new Set(rig.decisions.map((d) => d.code))].sort(),
    ['ERR_PROXY_BAD_REQUEST', 'ERR_PROXY_ROUTE_DENIED'],
    'coded',
  );
});
