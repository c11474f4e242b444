import t from 'tap';
import { NodeRequestVerifier, signNodeRequest } from '../../core/index.js';

const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const parts = { method: 'POST', path: '/api/fleet/chat/messages', node: 'node-a', userId: 7, body: '{"message":"hi"}' };

t.test('a signed request verifies once, with its node and user', async (t) => {
  const v = new NodeRequestVerifier(SECRET);
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  t.same(v.verify(h, { method: 'POST', path: parts.path, body: parts.body }, 1_000_500), { ok: true, node: 'node-a', userId: 7 });
  t.same(v.verify(h, { method: 'POST', path: parts.path, body: parts.body }, 1_000_600), { ok: false, reason: 'replayed' }, 'the same request again is a replay');
});

t.test('every changed part breaks the signature', async (t) => {
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  const cases: [string, Record<string, string>, { method: string; path: string; body: string }][] = [
    ['body', h, { method: 'POST', path: parts.path, body: '{"message":"bye"}' }],
    ['path', h, { method: 'POST', path: '/api/fleet/chat/sessions/x/turns/y/cancel', body: parts.body }],
    ['method', h, { method: 'PUT', path: parts.path, body: parts.body }],
    ['user', { ...h, 'x-airlock-node-user': '8' }, { method: 'POST', path: parts.path, body: parts.body }],
    ['node', { ...h, 'x-airlock-node': 'node-b' }, { method: 'POST', path: parts.path, body: parts.body }],
    ['time', { ...h, 'x-airlock-node-time': '1000001' }, { method: 'POST', path: parts.path, body: parts.body }],
  ];
  for (const [what, headers, p] of cases) {
    t.same(new NodeRequestVerifier(SECRET).verify(headers, p, 1_000_000), { ok: false, reason: 'bad_signature' }, `changed ${what}`);
  }
  const other = signNodeRequest('another-secret-0123456789abcdef01234567', parts, 1_000_000);
  t.same(new NodeRequestVerifier(SECRET).verify(other, { method: 'POST', path: parts.path, body: parts.body }, 1_000_000), { ok: false, reason: 'bad_signature' }, 'wrong secret');
});

t.test('old or future times, missing and malformed headers are refused', async (t) => {
  const v = new NodeRequestVerifier(SECRET);
  const p = { method: 'POST', path: parts.path, body: parts.body };
  t.same(v.verify(signNodeRequest(SECRET, parts, 1_000_000), p, 1_031_000), { ok: false, reason: 'stale' }, '31 s old');
  t.same(v.verify(signNodeRequest(SECRET, parts, 1_031_000), p, 1_000_000), { ok: false, reason: 'stale' }, '31 s ahead');
  t.same(v.verify({}, p), { ok: false, reason: 'missing' });
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  t.same(v.verify({ ...h, 'x-airlock-node-signature': 'v1=zz' }, p, 1_000_000), { ok: false, reason: 'malformed' });
  t.same(v.verify({ ...h, 'x-airlock-node-user': '-1' }, p, 1_000_000), { ok: false, reason: 'malformed' });
});
