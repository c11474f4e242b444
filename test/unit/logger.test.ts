/**
 * core/logger.ts redaction, seen in the JSON lines the logger writes: secret-shaped headers and
 * fields in the shapes they are logged in (pino-http's req/res, a bare headers object, an
 * upstream response, child bindings, a Secret) never reach a line; the marker does.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger, REDACT_PATHS, Secret, type Logger } from '../../core/index.js';

const MARK = '[redacted]';

function capture(): { log: Logger; lines: string[]; text(): string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { log: createLogger({ level: 'debug', destination: stream }), lines, text: () => lines.join('\n') };
}

/** A distinct, unguessable value per use, so a hit can only come from that field. */
const secret = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;

t.test('pino-http shaped req/res: secret headers redacted, the rest kept', async (t) => {
  const { log, lines, text } = capture();
  const s = {
    auth: secret('bearer'),
    cookie: secret('sid'),
    proxy: secret('proxy'),
    csrf: secret('csrf'),
    setCookie: secret('set'),
  };
  log.info(
    {
      req: {
        id: 'req-1',
        method: 'POST',
        url: '/api/auth/login',
        headers: {
          host: '127.0.0.1:8080',
          'user-agent': 'tap',
          authorization: `Bearer ${s.auth}`,
          cookie: `airlock.sid=${s.cookie}`,
          'proxy-authorization': `Basic ${s.proxy}`,
          'x-csrf-token': s.csrf,
        },
      },
      res: {
        statusCode: 200,
        headers: { 'content-type': 'application/json', 'set-cookie': [`airlock.sid=${s.setCookie}; HttpOnly`] },
      },
    },
    'request completed',
  );
  t.equal(lines.length, 1);
  for (const [k, v] of Object.entries(s)) t.notOk(text().includes(v), `${k} value not in the log`);
  const line = JSON.parse(lines[0]);
  t.same(
    line.req.headers,
    {
      host: '127.0.0.1:8080',
      'user-agent': 'tap',
      authorization: MARK,
      cookie: MARK,
      'proxy-authorization': MARK,
      'x-csrf-token': MARK,
    },
    'request headers: the four secret ones carry the marker, host and user-agent stay',
  );
  t.same(
    line.res.headers,
    { 'content-type': 'application/json', 'set-cookie': MARK },
    'response Set-Cookie redacted, content-type kept',
  );
  t.equal(line.req.url, '/api/auth/login');
  t.equal(line.msg, 'request completed');
});

t.test('a bare headers object, an upstream response, credential fields, child bindings, a Secret', async (t) => {
  const { log, lines, text } = capture();
  const values: string[] = [];
  const v = (what: string) => {
    const x = secret(what);
    values.push(x);
    return x;
  };
  // An outbound client's headers at the top of the object.
  log.warn(
    {
      headers: {
        authorization: v('a'),
        cookie: v('c'),
        'set-cookie': v('sc'),
        'proxy-authorization': v('pa'),
        accept: 'application/json',
      },
    },
    'outbound',
  );
  // An upstream response logged under its own key.
  log.warn(
    {
      upstream: {
        status: 401,
        headers: { 'set-cookie': [v('usc')], authorization: v('ua'), 'www-authenticate': 'Bearer' },
      },
    },
    'upstream refused',
  );
  // Credentials as plain fields, top level and one level down.
  log.info(
    { password: v('pw'), token: v('tok'), secret: v('sec'), authorization: v('auth'), cookie: v('ck') },
    'fields',
  );
  log.info(
    {
      user: { id: 3, password: v('upw'), password_hash: v('hash') },
      account: { access_token: v('at'), refresh_token: v('rt'), token: v('t2'), secret: v('s2') },
    },
    'nested',
  );
  // Child bindings (the per-request and per-session loggers) go through the same redaction.
  log.child({ authorization: v('bind') }).info({ sessionId: 's1' }, 'child');
  // A Secret prints as the marker under any key, redacted path or not.
  log.info({ apiKey: new Secret(v('wrapped')) }, 'wrapped');

  t.equal(lines.length, 6);
  for (const x of values) t.notOk(text().includes(x), `${x.split('-')[0]} value not in the log`);
  const [outbound, upstream, fields, nested, child, wrapped] = lines.map((l) => JSON.parse(l));
  t.same(outbound.headers, {
    authorization: MARK,
    cookie: MARK,
    'set-cookie': MARK,
    'proxy-authorization': MARK,
    accept: 'application/json',
  });
  t.same(upstream.upstream, {
    status: 401,
    headers: { 'set-cookie': MARK, authorization: MARK, 'www-authenticate': 'Bearer' },
  });
  t.match(fields, { password: MARK, token: MARK, secret: MARK, authorization: MARK, cookie: MARK });
  t.same(nested.user, { id: 3, password: MARK, password_hash: MARK });
  t.same(nested.account, { access_token: MARK, refresh_token: MARK, token: MARK, secret: MARK });
  t.equal(child.authorization, MARK, 'child binding redacted');
  t.equal(child.sessionId, 's1');
  t.equal(wrapped.apiKey, MARK, 'a Secret logs as the marker');
});

/** `a.b["c-d"]` → ['a', 'b', 'c-d']; `*` stands for any key. */
function segments(path: string): string[] {
  return [...path.matchAll(/\["([^"]+)"\]|([^.[\]]+)/g)].map((m) => m[1] ?? m[2]);
}

t.test('every path in REDACT_PATHS is redacted where it points', async (t) => {
  t.ok(REDACT_PATHS.length >= 10, 'the list is not empty');
  for (const path of REDACT_PATHS) {
    const { log, lines, text } = capture();
    const value = secret('path');
    // Build { any: { headers: { authorization: value } } } and the like; `*` becomes a real key.
    const keys = segments(path).map((k) => (k === '*' ? 'anykey' : k));
    const obj: Record<string, unknown> = {};
    let at = obj;
    for (const k of keys.slice(0, -1)) at = (at[k] = {}) as Record<string, unknown>;
    at[keys[keys.length - 1]] = value;
    log.info(obj, 'probe');
    t.notOk(text().includes(value), `${path}: value not logged`);
    let got: unknown = JSON.parse(lines[0]);
    for (const k of keys) got = (got as Record<string, unknown>)?.[k];
    t.equal(got, MARK, `${path}: the marker in its place`);
  }
});
