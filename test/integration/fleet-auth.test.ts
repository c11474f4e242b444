/**
 * Requests between nodes: a request signed with the fleet's secret by a registered node runs as
 * the user it names; a forged one (wrong secret), one from a node the fleet does not know, an old
 * one and a replayed one are refused with 401 ERR_NODE_AUTH and logged without their body.
 */
import t from 'tap';
import { signNodeRequest } from '../../core/index.js';
import { registerNode } from '../../domain/fleet.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

const SECRET = 'fleet-auth-test-secret-0123456789abcdef';

t.test(`${TEST_ENGINE}: signed, forged, unknown, stale and replayed requests between nodes`, async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_NODE_SECRET: SECRET, AIRLOCK_NODE_ID: 'node-b' } });
  await registerNode(app.database.sql, { id: 'node-a', url: 'http://127.0.0.1:9', version: 't', capacity: 4 });
  const alice = await addUser(app.database, 'alice', 'alice-password-0123');
  const path = '/api/fleet/operator';
  const body = JSON.stringify({ cmd: 'inspect', id: 'secret-prompt-body-marker' });
  const send = (headers: Record<string, string>, b = body) =>
    fetch(app.url + path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: b }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { code: string } } }));

  const good = signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', userId: alice.id, body });
  const ok = await send(good);
  t.not(ok.status, 401, `a signed request from a known node passes the check (${ok.status} ${ok.body.error?.code ?? ''})`);
  t.equal(ok.body.error?.code, 'ERR_SESSION_UNAVAILABLE', 'and reaches the operator route (no runtime in this app)');

  const cases: [string, Record<string, string>, string?][] = [
    ['replayed', good],
    ['forged', signNodeRequest('not-the-fleet-secret-0123456789abcdef', { method: 'POST', path, node: 'node-a', userId: alice.id, body })],
    ['unknown node', signNodeRequest(SECRET, { method: 'POST', path, node: 'node-z', userId: alice.id, body })],
    ['stale', signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', userId: alice.id, body }, Date.now() - 60_000)],
    ['body changed', signNodeRequest(SECRET, { method: 'POST', path, node: 'node-a', userId: alice.id, body }), JSON.stringify({ cmd: 'kill', id: 'x' })],
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
