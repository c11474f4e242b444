/**
 * Requests between nodes: a request signed with the fleet's secret by a registered node runs as
 * the user it names; a forged one (wrong secret), one from a node the fleet does not know, an old
 * one and a replayed one are refused with 401 ERR_NODE_AUTH and logged without their body. The
 * same holds for the one upgrade a node serves, `sessions attach` from another node.
 */
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { signNodeRequest } from '../../core/index.js';
import { registerNode } from '../../domain/fleet.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

const SECRET = 'fleet-auth-test-secret-0123456789abcdef';
const NODE_B = { AIRLOCK_NODE_SECRET: SECRET, AIRLOCK_NODE_ID: 'node-b', AIRLOCK_FLEET_ALLOW_HTTP: 'true' };

t.test(`${TEST_ENGINE}: signed, forged, unknown, stale and replayed requests between nodes`, async (t) => {
  const app = await startTestApp(t, { env: NODE_B });
  await registerNode(app.database.sql, { id: 'node-a', url: 'http://127.0.0.1:9', version: 't', capacity: 4 });
  const alice = await addUser(app.database, 'alice', 'alice-password-0123');
  const path = '/api/fleet/operator';
  const body = JSON.stringify({ cmd: 'inspect', id: 'secret-prompt-body-marker' });
  const send = (headers: Record<string, string>, b = body) =>
    fetch(app.url + path, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: b,
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { code: string } } }));

  const good = signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', to: 'node-b', userId: alice.id, body });
  const ok = await send(good);
  t.not(
    ok.status,
    401,
    `a signed request from a known node passes the check (${ok.status} ${ok.body.error?.code ?? ''})`,
  );
  t.equal(ok.body.error?.code, 'ERR_SESSION_UNAVAILABLE', 'and reaches the operator route (no runtime in this app)');

  const cases: [string, Record<string, string>, string?][] = [
    ['replayed', good],
    [
      'forged',
      signNodeRequest('not-the-fleet-secret-0123456789abcdef', {
        method: 'POST',
        path,
        node: 'node-a',
        to: 'node-b',
        userId: alice.id,
        body,
      }),
    ],
    [
      'unknown node',
      signNodeRequest(SECRET, { method: 'POST', path, node: 'node-z', to: 'node-b', userId: alice.id, body }),
    ],
    [
      'stale',
      signNodeRequest(
        SECRET,
        { method: 'POST', path, node: 'node-a', to: 'node-b', userId: alice.id, body },
        Date.now() - 60_000,
      ),
    ],
    [
      'body changed',
      signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', to: 'node-b', userId: alice.id, body }),
      JSON.stringify({ cmd: 'kill', id: 'x' }),
    ],
    ['unsigned', {}],
  ];
  for (const [what, headers, b] of cases) {
    const r = await send(headers, b);
    t.equal(r.status, 401, `${what}: 401`);
    t.equal(r.body.error?.code, 'ERR_NODE_AUTH', `${what}: ERR_NODE_AUTH`);
  }
  const refusals = app.logs.lines.filter((l) => l.includes('node_auth_refused'));
  t.equal(refusals.length, cases.length, 'each refusal logged');
  t.match(refusals.join('\n'), /"reason":"replayed"/);
  t.match(refusals.join('\n'), /"reason":"bad_signature"/);
  t.match(refusals.join('\n'), /"reason":"unknown_node"/);
  t.match(refusals.join('\n'), /"reason":"stale"/);
  t.notOk(app.logs.text().includes('secret-prompt-body-marker'), 'never with the body');
  t.notOk(app.logs.text().includes(SECRET), 'never with the secret');
});

/** An upgrade request: the owner's HTTP answer when it refuses, or 101 when it switches. */
function upgrade(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'GET',
      headers: { connection: 'Upgrade', upgrade: 'airlock-attach', ...headers },
    });
    req.on('error', reject);
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: {} });
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: JSON.parse(text) as { error?: { code: string; message: string } },
        }),
      );
    });
    req.end();
  });
}

t.test(
  `${TEST_ENGINE}: sessions attach between nodes is a signed upgrade, refused with an error body before any shell`,
  async (t) => {
    const app = await startTestApp(t, { env: NODE_B });
    await registerNode(app.database.sql, { id: 'node-a', url: 'http://127.0.0.1:9', version: 't', capacity: 4 });
    const path = '/api/fleet/sessions/sess-1/attach?root=0&term=xterm&rows=24&cols=80';
    const sign = (p = path, node = 'node-a', secret = SECRET) =>
      signNodeRequest(secret, { method: 'GET', path: p, node, to: 'node-b', userId: null, body: '' });

    const good = await upgrade(app.url + path, sign());
    t.equal(good.status, 503, 'a signed upgrade from a known node passes the check');
    t.equal(good.body.error?.code, 'ERR_SESSION_UNAVAILABLE', 'and reaches the attach (no runtime in this app)');

    const cases: [string, string, Record<string, string>, number, string][] = [
      ['unsigned', path, {}, 401, 'ERR_NODE_AUTH'],
      ['forged', path, sign(path, 'node-a', 'not-the-fleet-secret-0123456789abcdef'), 401, 'ERR_NODE_AUTH'],
      ['unknown node', path, sign(path, 'node-z'), 401, 'ERR_NODE_AUTH'],
      ['from itself', path, sign(path, 'node-b'), 401, 'ERR_NODE_AUTH'],
      ['another path signed', path.replace('sess-1', 'sess-2'), sign(), 401, 'ERR_NODE_AUTH'],
      ['not an attach path', '/api/chat/messages', sign('/api/chat/messages'), 404, 'ERR_NOT_FOUND'],
    ];
    for (const [what, p, headers, status, code] of cases) {
      const r = await upgrade(app.url + p, headers);
      t.equal(r.status, status, `${what}: ${status}`);
      t.equal(r.body.error?.code, code, `${what}: ${code}`);
    }
    const bad = '/api/fleet/sessions/sess-1/attach?term=x%0Ay';
    const badTerm = await upgrade(app.url + bad, sign(bad));
    t.equal(badTerm.status, 400, 'a term name with a newline: 400');
    t.equal(badTerm.body.error?.code, 'ERR_VALIDATION');
    for (const q of ['rows=024&cols=80', 'rows=24&rows=25', 'rows=-1', 'cols=65536', 'cols=8e1']) {
      const p = `/api/fleet/sessions/sess-1/attach?term=xterm&${q}`;
      const r = await upgrade(app.url + p, sign(p));
      t.equal(r.status, 400, `${q}: 400 (integers in the query are strict)`);
      t.equal(r.body.error?.code, 'ERR_VALIDATION');
    }
    t.equal(app.logs.lines.filter((l) => l.includes('node_auth_refused')).length, 5, 'each refused signature logged');
    t.notOk(app.logs.text().includes(SECRET), 'never with the secret');
  },
);
