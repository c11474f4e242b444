import t from 'tap';
import { NodeRequestVerifier, signNodeRequest, type NonceClaim } from '../../core/index.js';

const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const parts = {
  method: 'POST',
  path: '/api/fleet/chat/messages',
  node: 'node-a',
  to: 'node-b',
  userId: 7,
  body: '{"message":"hi"}',
};
const p = { method: 'POST', path: parts.path, body: parts.body };

/** A nonce store like the fleet's table: one use per nonce (the database's is tested in fleet-auth). */
function memoryNonces(): NonceClaim {
  const seen = new Set<string>();
  return async (nonce) => (seen.has(nonce) ? false : (seen.add(nonce), true));
}
const verifier = (self = 'node-b', claim = memoryNonces()) => new NodeRequestVerifier(SECRET, self, claim);

t.test('a signed request verifies once, with its node and user, on the node it names', async (t) => {
  const v = verifier();
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  t.same(await v.verify(h, p, 1_000_500), { ok: true, node: 'node-a', userId: 7 });
  t.same(await v.verify(h, p, 1_000_600), { ok: false, reason: 'replayed' }, 'the same request again is a replay');
  t.same(
    await verifier('node-c').verify(h, p, 1_000_500),
    { ok: false, reason: 'wrong_receiver' },
    'another node refuses it',
  );
  t.same(
    await verifier('node-c').verify({ ...h, 'x-airlock-node-to': 'node-c' }, p, 1_000_500),
    { ok: false, reason: 'bad_signature' },
    'renaming the receiver breaks the signature',
  );
});

t.test('the expiry given to the nonce store ends the signature window', async (t) => {
  const claims: number[] = [];
  const v = new NodeRequestVerifier(
    SECRET,
    'node-b',
    async (_n, node, expiresAt) => (claims.push(expiresAt), node === 'node-a'),
  );
  t.same(await v.verify(signNodeRequest(SECRET, parts, 1_000_000), p, 1_000_000), {
    ok: true,
    node: 'node-a',
    userId: 7,
  });
  t.same(claims, [1_031_000], 'kept for the 30 s window after the signed time, plus 1 s');
});

t.test('every changed part breaks the signature', async (t) => {
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  const cases: [string, Record<string, string>, { method: string; path: string; body: string }][] = [
    ['body', h, { ...p, body: '{"message":"bye"}' }],
    ['path', h, { ...p, path: '/api/fleet/chat/sessions/x/turns/y/cancel' }],
    ['query', h, { ...p, path: `${parts.path}?x=1` }],
    ['method', h, { ...p, method: 'PUT' }],
    ['user', { ...h, 'x-airlock-node-user': '8' }, p],
    ['node', { ...h, 'x-airlock-node': 'node-c' }, p],
    ['time', { ...h, 'x-airlock-node-time': '1000001' }, p],
    ['nonce', { ...h, 'x-airlock-node-nonce': '0'.repeat(24) }, p],
  ];
  for (const [what, headers, q] of cases) {
    t.same(await verifier().verify(headers, q, 1_000_000), { ok: false, reason: 'bad_signature' }, `changed ${what}`);
  }
  const other = signNodeRequest('another-secret-0123456789abcdef01234567', parts, 1_000_000);
  t.same(await verifier().verify(other, p, 1_000_000), { ok: false, reason: 'bad_signature' }, 'wrong secret');
});

t.test('old or future times, missing and malformed headers are refused', async (t) => {
  const v = verifier();
  t.same(
    await v.verify(signNodeRequest(SECRET, parts, 1_000_000), p, 1_031_000),
    { ok: false, reason: 'stale' },
    '31 s old',
  );
  t.same(
    await v.verify(signNodeRequest(SECRET, parts, 1_031_000), p, 1_000_000),
    { ok: false, reason: 'stale' },
    '31 s ahead',
  );
  t.same(await v.verify({}, p), { ok: false, reason: 'missing' });
  const h = signNodeRequest(SECRET, parts, 1_000_000);
  const { 'x-airlock-node-to': _to, ...noTo } = h;
  t.same(await v.verify(noTo, p, 1_000_000), { ok: false, reason: 'missing' }, 'no receiver named');
  t.same(await v.verify({ ...h, 'x-airlock-node-signature': 'v2=zz' }, p, 1_000_000), {
    ok: false,
    reason: 'malformed',
  });
  t.same(
    await v.verify({ ...h, 'x-airlock-node-signature': `v1=${'0'.repeat(64)}` }, p, 1_000_000),
    { ok: false, reason: 'malformed' },
    'the old v1 signature',
  );
  for (const user of ['-1', '01', '007', '0', '1e3', ' 7', '7 ', '+7', '0x7', '1234567890123456', '7,8']) {
    t.same(
      await v.verify({ ...h, 'x-airlock-node-user': user }, p, 1_000_000),
      { ok: false, reason: 'malformed' },
      `user ${JSON.stringify(user)}`,
    );
  }
  t.same(
    await v.verify({ ...h, 'x-airlock-node-user': ['7', '7'] }, p, 1_000_000),
    { ok: false, reason: 'malformed' },
    'a repeated user header',
  );
});
