import type { HostileCase } from '../fakes/hostile-client.js';

/** What a hostile case must produce: the answer's status (and code), and whether the upstream may see it. */
export interface HostileExpectation {
  status: number;
  /** The x-airlock-error code, when the proxy refuses. */
  code?: string;
  /** True only for the allowed calls: the upstream must see exactly these, each once. */
  forwarded: boolean;
  /** Headers that must not reach the upstream on a forwarded case. */
  absent?: string[];
}

export interface HostileEntry {
  c: HostileCase;
  expect: HostileExpectation;
}

export interface Placeholders {
  MAIL_API_KEY: string;
  SHEETS_API_KEY: string;
  SEARCH_SHEETS_API_KEY: string;
  AGENT_MODEL_API_KEY: string;
}

const MAIL = '/gmail/mail/v1/users/me/messages/send';
const SHEET = '/sheets/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3';
const FILES = '/search/drive/v3/files';
const BODY = '{"raw":"aGk"}';

/** The header the upstream sees on forwarded cases, naming the case (Accept is on every allow-list). */
export function marker(id: string): string {
  return `application/json; case=${id}`;
}

/** The case id an upstream request carries, or null. */
export function caseOf(headers: Record<string, string | string[] | undefined>): string | null {
  const m = /case=([\w.-]+)/.exec(String(headers.accept ?? ''));
  return m ? m[1] : null;
}

function req(o: {
  id: string;
  method?: string;
  path?: string;
  head?: string[];
  body?: string;
  auth?: string | null;
  cl?: string | null;
  host?: string | null;
  version?: string;
}): string {
  const method = o.method ?? 'POST';
  const body = o.body ?? (method === 'POST' ? BODY : '');
  const lines = [`${method} ${o.path ?? MAIL} ${o.version ?? 'HTTP/1.1'}`];
  if (o.host !== null) lines.push(`Host: ${o.host ?? '127.0.0.1'}`);
  if (o.auth !== null && o.auth !== undefined) lines.push(`Authorization: ${o.auth}`);
  lines.push(`Accept: ${marker(o.id)}`);
  if (method === 'POST') lines.push('Content-Type: application/json');
  if (o.cl !== null && (body.length || method === 'POST'))
    lines.push(`Content-Length: ${o.cl ?? Buffer.byteLength(body)}`);
  lines.push(...(o.head ?? []));
  lines.push('Connection: close');
  return lines.join('\r\n') + '\r\n\r\n' + body;
}

/**
 * The hostile table against the credential proxy: each case with the status it must get and
 * whether the upstream may see it. Allowed calls carry an Accept marker so the test can tell
 * exactly which requests reached the upstream.
 */
export function proxyCases(ph: Placeholders): HostileEntry[] {
  const bearer = `Bearer ${ph.MAIL_API_KEY}`;
  const out: HostileEntry[] = [];
  const add = (c: HostileCase, expect: HostileExpectation) => out.push({ c, expect });
  const raw = (id: string, data: string, expect: HostileExpectation, timeoutMs?: number) =>
    add({ id, kind: 'raw', data, ...(timeoutMs ? { timeoutMs } : {}) }, expect);
  const denied = (code = 'ERR_PROXY_ROUTE_DENIED') => ({ status: 403, code, forwarded: false });
  const bad = { status: 400, code: 'ERR_PROXY_BAD_REQUEST', forwarded: false };

  // 1. The allowed calls (controls): forwarded, 200.
  raw('ok-mail', req({ id: 'ok-mail', auth: bearer }), { status: 200, forwarded: true });
  raw('ok-sheet', req({ id: 'ok-sheet', method: 'GET', path: SHEET, auth: `Bearer ${ph.SHEETS_API_KEY}` }), {
    status: 200,
    forwarded: true,
  });
  raw(
    'ok-files',
    req({ id: 'ok-files', method: 'GET', path: `${FILES}?pageSize=10`, auth: `Bearer ${ph.SEARCH_SHEETS_API_KEY}` }),
    { status: 200, forwarded: true },
  );
  raw(
    'ok-model',
    req({
      id: 'ok-model',
      path: '/model/chat/completions',
      body: '{"model":"x","messages":[]}',
      auth: `Bearer ${ph.AGENT_MODEL_API_KEY}`,
    }),
    { status: 200, forwarded: true },
  );

  // 2. Headers off the allow-list: the request goes on, the header does not (finding 5).
  const hostileHeaders = [
    'Cookie: SID=stolen',
    'X-Original-URL: /gmail/v1/users/me/settings/forwardingAddresses',
    'X-Rewrite-URL: /admin',
    'X-Forwarded-Host: evil.example',
    'X-Forwarded-For: 10.0.0.1',
    'X-Forwarded-Proto: http',
    'X-Forwarded-Prefix: /admin',
    'Forwarded: for=10.0.0.1;host=evil.example',
    'X-Real-IP: 10.0.0.1',
    'X-Client-IP: 10.0.0.1',
    'True-Client-IP: 10.0.0.1',
    'X-Host: evil.example',
    'X-Forwarded-Server: evil.example',
    'X-Original-Host: evil.example',
    'X-Goog-User-Project: attacker-billing',
    'X-Goog-Api-Key: AIzaAttacker',
    'X-Goog-AuthUser: 1',
    'X-Goog-Request-Params: x',
    'X-Server-Timeout: 1',
    'X-Upload-Content-Length: 1',
    'Origin: https://evil.example',
    'Referer: https://evil.example/',
    'Range: bytes=0-1',
    'If-Range: x',
    'Via: 1.1 evil',
    'X-Request-Id: forged',
    'Traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    'X-Cloud-Trace-Context: 1/1',
    'X-Envoy-Original-Path: /admin',
    'X-Middleware-Subrequest: middleware',
    'X-Amz-Date: 20260101T000000Z',
    'Proxy-Authorization: Basic eDp4',
    'Proxy-Connection: keep-alive',
    'X-Csrf-Token: x',
    'X-Api-Version: 99',
    'Upgrade-Insecure-Requests: 1',
    'Content-Language: de',
    'X-Custom-Smuggle: a\tb',
    'DNT: 1',
    'Priority: u=0',
  ];
  hostileHeaders.forEach((h, i) => {
    const id = `hdr-${i}`;
    raw(id, req({ id, auth: bearer, head: [h] }), {
      status: 200,
      forwarded: true,
      absent: [h.split(':')[0].toLowerCase()],
    });
  });
  // The placeholder in an allowed header never leaves either.
  raw('hdr-placeholder', req({ id: 'hdr-placeholder', auth: bearer, head: [`Accept-Language: ${ph.MAIL_API_KEY}`] }), {
    status: 200,
    forwarded: true,
    absent: ['accept-language'],
  });
  // Method override headers are refused outright: Google honours them.
  for (const h of ['X-HTTP-Method-Override: DELETE', 'X-HTTP-Method: GET', 'X-Method-Override: PUT']) {
    const id = `override-${h.split(':')[0].toLowerCase()}`;
    raw(id, req({ id, auth: bearer, head: [h] }), denied());
  }

  // 3. Declared lengths (finding 5): over the limit → 413 before any upstream request; signs, zeros → 400.
  raw('cl-huge', req({ id: 'cl-huge', auth: bearer, cl: '99999999999' }), {
    status: 413,
    code: 'ERR_PROXY_BODY_TOO_LARGE',
    forwarded: false,
  });
  raw('cl-limit+1', req({ id: 'cl-limit+1', auth: bearer, cl: String(25 * 1024 * 1024 + 1) }), {
    status: 413,
    code: 'ERR_PROXY_BODY_TOO_LARGE',
    forwarded: false,
  });
  raw('cl-leading-zero', req({ id: 'cl-leading-zero', auth: bearer, cl: `0${BODY.length}` }), bad);
  raw('cl-zeros', req({ id: 'cl-zeros', auth: bearer, cl: `000${BODY.length}` }), bad);
  for (const [name, v] of [
    ['plus', `+${BODY.length}`],
    ['minus', '-1'],
    ['hex', '0x0d'],
    ['exp', '1e1'],
    ['list', `${BODY.length}, ${BODY.length}`],
    ['alpha', 'abc'],
    ['decimal', `${BODY.length}.0`],
  ]) {
    raw(`cl-${name}`, req({ id: `cl-${name}`, auth: bearer, cl: v }), { status: 400, forwarded: false });
  }
  raw('cl-twice', req({ id: 'cl-twice', auth: bearer, head: [`Content-Length: ${BODY.length}`] }), {
    status: 400,
    forwarded: false,
  });
  raw('cl-and-te', req({ id: 'cl-and-te', auth: bearer, head: ['Transfer-Encoding: chunked'] }), {
    status: 400,
    forwarded: false,
  });
  raw('te-gzip', req({ id: 'te-gzip', auth: bearer, cl: null, head: ['Transfer-Encoding: gzip'] }), {
    status: 400,
    forwarded: false,
  });
  raw(
    'te-twice',
    req({
      id: 'te-twice',
      auth: bearer,
      cl: null,
      body: `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`,
      head: ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
    }),
    { status: 400, forwarded: false },
  );
  raw('ce-gzip', req({ id: 'ce-gzip', auth: bearer, head: ['Content-Encoding: gzip'] }), bad);
  raw('ce-deflate', req({ id: 'ce-deflate', auth: bearer, head: ['Content-Encoding: deflate'] }), bad);
  // A well-formed chunked send is an allowed call (forwarded with an exact length).
  raw(
    'ok-chunked',
    req({
      id: 'ok-chunked',
      auth: bearer,
      cl: null,
      body: `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`,
      head: ['Transfer-Encoding: chunked'],
    }),
    { status: 200, forwarded: true },
  );

  // 4. Targets the allow-list does not name (path confusion, traversal, encodings).
  const paths = [
    '/gmail/mail/v1/users/me/messages/send/..',
    '/gmail/mail/v1/users/me/messages/send/',
    '/gmail/mail/v1/users/me/messages/./send',
    '/gmail/mail/v1/users/me/messages//send',
    '/gmail//mail/v1/users/me/messages/send',
    '/gmail/mail/v1/users/me/messages/%73end',
    '/gmail/mail/v1/users/me/messages/send%2f..%2f..%2fsettings',
    '/gmail/mail/v1/users/me/messages/send%00',
    '/gmail/mail/v1/users/me/messages/send;x=1',
    '/gmail/mail/v1/users/other/messages/send',
    '/gmail/mail/v1/users/me/messages/import',
    '/gmail/mail/v1/users/me/settings/forwardingAddresses',
    '/gmail/mail/v1/users/me/drafts/send',
    '/GMAIL/mail/v1/users/me/messages/send',
    '/gmail/mail/v1/users/me/messages/SEND',
    '/gmail/mail/v1/users/me/messages/send/%2e%2e',
    '/gmail/mail/v1/users/me/messages/%2e%2e/messages/send',
    '/gmail/mail/v1/users/me/messages/send%252f',
    '/gmail/mail/v1/users/me/../me/messages/send',
    '/gmail/mail/v1/users/me/messages/send\\..\\',
    '/gmail/mail/v2/users/me/messages/send',
    '/gmail',
    '/',
    '/admin',
    '/host/api/agent/memories/../../admin',
    '/sheets/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3/../../../drive',
    '/sheets/v4/spreadsheets/sheet-1:batchUpdate',
    '/sheets/v4/spreadsheets/sheet-1/values/A1%2f..%2f..',
    '/search/drive/v3/files/abc',
    '/search/drive/v3/files/abc/permissions',
    '/search/drive/v2/files',
    '/model/models',
    '/model/chat/completions/../../files',
    '/gmail/mail/v1/users/me/messages/send%20',
    '/gmail/mail/v1/users/me/messages/send%09',
    '/gmail/mail/v1/users/me/messages/send%0d%0aX-Injected:%201',
  ];
  paths.forEach((p, i) => {
    const id = `path-${i}`;
    raw(id, req({ id, path: p, auth: bearer }), { status: -1, forwarded: false });
  });
  raw('path-absolute', req({ id: 'path-absolute', path: `http://127.0.0.1${MAIL}`, auth: bearer }), denied());
  raw(
    'path-absolute-evil',
    req({ id: 'path-absolute-evil', path: `http://evil.example${MAIL}`, auth: bearer }),
    denied(),
  );
  raw('path-asterisk', req({ id: 'path-asterisk', method: 'OPTIONS', path: '*', auth: bearer }), {
    status: -1,
    forwarded: false,
  });
  raw('path-fragment', req({ id: 'path-fragment', path: `${MAIL}#x`, auth: bearer }), { status: -1, forwarded: false });
  raw('query-on-post', req({ id: 'query-on-post', path: `${MAIL}?uploadType=media`, auth: bearer }), denied());
  raw(
    'get-with-body',
    req({ id: 'get-with-body', method: 'GET', path: SHEET, body: 'x', auth: `Bearer ${ph.SHEETS_API_KEY}` }),
    bad,
  );

  // 5. Methods the route does not allow.
  for (const m of ['GET', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'MOVE']) {
    raw(`method-${m}`, req({ id: `method-${m}`, method: m, auth: bearer }), denied());
  }
  raw(
    'method-post-sheet',
    req({ id: 'method-post-sheet', path: SHEET, auth: `Bearer ${ph.SHEETS_API_KEY}` }),
    denied(),
  );
  raw('method-lower', req({ id: 'method-lower', method: 'post', auth: bearer }), { status: -1, forwarded: false });

  // 6. The placeholder: missing, wrong, another route's, other schemes.
  const placeholderCases: Array<[string, string | null, string[]?]> = [
    ['none', null],
    ['wrong', 'Bearer wrong'],
    ['suffix', `${bearer}x`],
    ['prefix', `Bearer x${ph.MAIL_API_KEY}`],
    ['sheets-key', `Bearer ${ph.SHEETS_API_KEY}`],
    ['model-key', `Bearer ${ph.AGENT_MODEL_API_KEY}`],
    ['basic', `Basic ${ph.MAIL_API_KEY}`],
    ['lower-scheme', `bearer ${ph.MAIL_API_KEY}`],
    ['two-spaces', `Bearer  ${ph.MAIL_API_KEY}`],
    ['empty', 'Bearer '],
    ['x-api-key', null, [`X-Api-Key: ${ph.MAIL_API_KEY}`]],
    ['in-query', null],
  ];
  for (const [name, auth, head] of placeholderCases) {
    const id = `placeholder-${name}`;
    const path = name === 'in-query' ? `${MAIL}?key=${ph.MAIL_API_KEY}` : MAIL;
    raw(id, req({ id, auth, head, path }), { status: name === 'in-query' ? 403 : 401, forwarded: false });
  }
  raw('placeholder-twice', req({ id: 'placeholder-twice', auth: bearer, head: [`Authorization: ${bearer}`] }), bad);

  // 7. Framing and smuggling: the parser or the proxy refuses, nothing is forwarded.
  const head = (id: string) =>
    `POST ${MAIL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${bearer}\r\nAccept: ${marker(id)}\r\nContent-Type: application/json\r\n`;
  raw(
    'smuggle-obs-fold',
    head('smuggle-obs-fold') + `X-A: 1\r\n folded\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
    { status: 400, forwarded: false },
  );
  raw('smuggle-space-colon', head('smuggle-space-colon') + `Content-Length : ${BODY.length}\r\n\r\n${BODY}`, {
    status: 400,
    forwarded: false,
  });
  raw('smuggle-nul', head('smuggle-nul') + `X-A: a\x00b\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`, {
    status: 400,
    forwarded: false,
  });
  raw('smuggle-bare-cr', head('smuggle-bare-cr') + `X-A: a\rb\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`, {
    status: 400,
    forwarded: false,
  });
  raw(
    'smuggle-te-cl-chunk',
    head('smuggle-te-cl-chunk') +
      `Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n`,
    { status: 400, forwarded: false },
  );
  raw('smuggle-bad-chunk', head('smuggle-bad-chunk') + `Transfer-Encoding: chunked\r\n\r\nzz\r\n${BODY}\r\n0\r\n\r\n`, {
    status: 400,
    forwarded: false,
  });
  raw(
    'smuggle-chunk-ext',
    head('smuggle-chunk-ext') +
      `Transfer-Encoding: chunked\r\n\r\n${BODY.length.toString(16)};x=\x01\r\n${BODY}\r\n0\r\n\r\n`,
    { status: 400, forwarded: false },
  );
  raw('smuggle-http09', `GET ${SHEET}\r\n\r\n`, { status: -1, forwarded: false });
  raw('smuggle-http2-line', `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, { status: -1, forwarded: false });
  raw('smuggle-http10', req({ id: 'smuggle-http10', version: 'HTTP/1.0', auth: bearer }), {
    status: 200,
    forwarded: true,
  });
  raw('smuggle-http3', req({ id: 'smuggle-http3', version: 'HTTP/3.0', auth: bearer }), {
    status: -1,
    forwarded: false,
  });
  raw('smuggle-no-host', req({ id: 'smuggle-no-host', auth: bearer, host: null }), bad);
  raw('smuggle-two-hosts', req({ id: 'smuggle-two-hosts', auth: bearer, head: ['Host: evil.example'] }), bad);
  raw(
    'smuggle-65-headers',
    req({ id: 'smuggle-65-headers', auth: bearer, head: Array.from({ length: 65 }, (_, i) => `X-H${i}: v`) }),
    bad,
  );
  raw(
    'smuggle-huge-header',
    req({ id: 'smuggle-huge-header', auth: bearer, head: [`X-Big: ${'a'.repeat(17 * 1024)}`] }),
    { status: -1, forwarded: false },
  );
  raw(
    'smuggle-connect',
    `CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\nAuthorization: ${bearer}\r\n\r\n`,
    denied(),
  );
  raw('smuggle-connect-upstream', `CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n`, denied());
  raw(
    'smuggle-upgrade',
    req({
      id: 'smuggle-upgrade',
      method: 'GET',
      path: SHEET,
      auth: `Bearer ${ph.SHEETS_API_KEY}`,
      head: [
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version: 13',
      ],
    }),
    denied(),
  );
  raw(
    'smuggle-h2c',
    req({
      id: 'smuggle-h2c',
      method: 'GET',
      path: SHEET,
      auth: `Bearer ${ph.SHEETS_API_KEY}`,
      head: ['Upgrade: h2c', 'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA', 'Connection: Upgrade, HTTP2-Settings'],
    }),
    denied(),
  );
  // A refused request followed by a pipelined allowed one on the same connection: the second is never read.
  raw(
    'smuggle-pipeline',
    req({ id: 'smuggle-pipeline', method: 'DELETE', auth: bearer }).replace('Connection: close\r\n', '') +
      req({ id: 'smuggle-pipeline-2', auth: bearer }),
    denied(),
  );

  // 8. Stalled requests (finding 5): 40 sends that stop mid-body hold no upstream connection,
  // and the session's legitimate send still goes through at once. They ask for 100 Continue, so
  // the client knows the proxy admitted each head before it sends the legitimate one.
  const stalledHead = `POST ${MAIL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${bearer}\r\nAccept: ${marker('stalled')}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n{"raw":"`;
  add(
    {
      id: 'stall-40',
      kind: 'stall',
      count: 40,
      stalled: stalledHead,
      data: req({ id: 'stall-40', auth: bearer }),
      timeoutMs: 8000,
    },
    { status: 200, forwarded: true },
  );
  return out;
}

/** Hostile heads against the daemon's egress socket (run as root on the host: the child cannot even connect). */
/**
 * What a compromised supervisor (root in the container) could send the egress gateway directly,
 * without the proxy in front: tunnels, absolute-form targets, paths and methods off the session's
 * route table, malformed heads. The gateway (second wall) refuses every one; nothing is forwarded.
 */
export function egressCases(socketPath: string, allowed: string): HostileEntry[] {
  const out: HostileEntry[] = [];
  const unix = (id: string, data: string, status: number, code?: string) =>
    out.push({
      c: { id, kind: 'unix', path: socketPath, data },
      expect: { status, forwarded: false, ...(code ? { code } : {}) },
    });
  for (const [i, target] of [
    'evil.example:443',
    '127.0.0.1:22',
    '169.254.169.254:80',
    '[::1]:80',
    'localhost:80',
    allowed,
    `${allowed.split(':')[0]}:1`,
    '0:80',
    '127.1:80',
    '2130706433:80',
    `${allowed}@evil.example:80`,
    'gmail.googleapis.com:443',
  ].entries()) {
    unix(`egress-connect-${i}`, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`, 403, 'ERR_EGRESS_DENIED');
  }
  const head = (method: string, target: string, extra = '') =>
    `${method} ${target} HTTP/1.1\r\nHost: x\r\nAccept: case=egress\r\n${extra}content-length: 0\r\n\r\n`;
  unix('egress-absolute', head('GET', `http://${allowed}/drive/v3/files`), 403, 'ERR_EGRESS_DENIED');
  unix('egress-absolute-route', head('GET', `http://${allowed}/search/drive/v3/files`), 403, 'ERR_EGRESS_DENIED');
  unix('egress-asterisk', head('OPTIONS', '*'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-other-path', head('POST', '/gmail/gmail/v1/users/me/drafts'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-mail-get', head('GET', MAIL), 403, 'ERR_EGRESS_DENIED');
  unix('egress-sheets-delete', head('DELETE', '/sheets/v4/spreadsheets/s1/values/A1'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-sheets-batch', head('POST', '/sheets/v4/spreadsheets/s1:batchUpdate'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-no-route', head('GET', '/admin/api/users'), 403, 'ERR_EGRESS_DENIED');
  // The host route belongs to other sessions (those with an agent token), not this one.
  unix('egress-other-session-route', head('GET', '/host/api/agent/memories'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-walk', head('GET', '/search/drive/v3/files/..%2F..%2Fadmin'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-dotdot', head('GET', '/search/drive/v3/../../admin'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-override', head('POST', MAIL, 'X-HTTP-Method-Override: DELETE\r\n'), 403, 'ERR_EGRESS_DENIED');
  unix('egress-query-post', head('POST', `${MAIL}?uploadType=media`), 403, 'ERR_EGRESS_DENIED');
  unix(
    'egress-upgrade',
    `GET /search/drive/v3/files HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    403,
    'ERR_EGRESS_DENIED',
  );
  unix('egress-garbage', 'hello\r\n\r\n', 400);
  unix('egress-huge-head', `GET /search/drive/v3/files HTTP/1.1\r\nX: ${'a'.repeat(17000)}`, 400);
  unix('egress-lf-only', `CONNECT evil.example:443 HTTP/1.1\nHost: x\n\n`, -1);
  return out;
}

type TapAssert = Record<'equal' | 'ok' | 'notOk' | 'same', (...args: any[]) => unknown>;

/**
 * Check every result against its expectation: the status (-1: any 4xx), the refusal code,
 * and what reached the upstream: exactly the forwarded cases, each once, without the headers
 * it must not carry, and nothing else at all.
 */
export function assertHostile(
  t: TapAssert,
  entries: HostileEntry[],
  results: Array<{ id: string; status: number; code: string | null; error: string | null }>,
  upstream: Array<{ headers: Record<string, string | string[] | undefined> }>,
): void {
  t.equal(results.length, entries.length, 'one result per case');
  const byId = new Map(results.map((r) => [r.id, r]));
  for (const { c, expect } of entries) {
    const r = byId.get(c.id);
    if (!r) {
      t.ok(false, `${c.id}: no result`);
      continue;
    }
    if (expect.status === -1)
      t.ok(
        r.status >= 400 && r.status < 500,
        `${c.id}: refused with a 4xx (got ${r.status}${r.error ? ` ${r.error}` : ''})`,
      );
    else t.equal(r.status, expect.status, `${c.id}: status ${expect.status}`);
    if (expect.code) t.equal(r.code, expect.code, `${c.id}: ${expect.code}`);
  }
  const seen = upstream.map((u) => caseOf(u.headers));
  const want = entries
    .filter((e) => e.expect.forwarded)
    .map((e) => e.c.id)
    .sort();
  t.same([...seen].sort(), want, 'the upstream saw exactly the allowed calls, each once, and nothing else');
  for (const { c, expect } of entries) {
    if (!expect.absent) continue;
    const u = upstream.find((x) => caseOf(x.headers) === c.id);
    for (const h of expect.absent) t.notOk(u?.headers[h], `${c.id}: ${h} did not reach the upstream`);
  }
}
