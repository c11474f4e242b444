import t from 'tap';
import { AppError, Secret, mintAgentUserToken, verifyAgentUserToken } from '../../core/index.js';

const secret = new Secret('unit-agent-token-secret-0123456789');
const code = (fn: () => unknown) => {
  try {
    fn();
    return 'NO_ERROR';
  } catch (e) {
    return (e as AppError).code;
  }
};

t.test('a minted token verifies and carries user and session', async (t) => {
  const now = Date.UTC(2026, 10, 22);
  const tok = mintAgentUserToken(secret, { userId: 7, sessionId: 'sess-1', ttlS: 600, now });
  const c = verifyAgentUserToken(secret, tok, { now: now + 1000 });
  t.equal(c.userId, 7);
  t.equal(c.sessionId, 'sess-1');
  t.equal(c.exp - c.iat, 600);
  t.equal(
    verifyAgentUserToken('unit-agent-token-secret-0123456789', tok, { now, sessionId: 'sess-1' }).userId,
    7,
    'string key works too',
  );
});

t.test('expired, tampered, foreign and malformed tokens are refused', async (t) => {
  const now = Date.UTC(2026, 10, 22);
  const tok = mintAgentUserToken(secret, { userId: 7, sessionId: 'sess-1', ttlS: 60, now });
  t.equal(
    code(() => verifyAgentUserToken(secret, tok, { now: now + 61_000 })),
    'ERR_AGENT_TOKEN_EXPIRED',
  );
  t.equal(
    code(() => verifyAgentUserToken(new Secret('another-secret-0123456789abcdef'), tok, { now })),
    'ERR_AGENT_TOKEN_INVALID',
  );
  t.equal(
    code(() => verifyAgentUserToken(secret, tok, { now, sessionId: 'sess-2' })),
    'ERR_AGENT_TOKEN_INVALID',
    'bound to its session',
  );
  const [p, payload, mac] = tok.split('.');
  const forged = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), u: 8 }),
  ).toString('base64url');
  t.equal(
    code(() => verifyAgentUserToken(secret, `${p}.${forged}.${mac}`, { now })),
    'ERR_AGENT_TOKEN_INVALID',
    'user id cannot be changed',
  );
  const flipped = mac.slice(0, -2) + (mac.at(-2) === 'A' ? 'B' : 'A') + mac.at(-1);
  t.equal(
    code(() => verifyAgentUserToken(secret, `${p}.${payload}.${flipped}`, { now })),
    'ERR_AGENT_TOKEN_INVALID',
  );
  for (const bad of ['', 'x', 'aut1..', `aut2.${payload}.${mac}`, `${tok}.x`, undefined, null, 'a'.repeat(5000)]) {
    t.equal(
      code(() => verifyAgentUserToken(secret, bad as string, { now })),
      'ERR_AGENT_TOKEN_INVALID',
      `refuses ${String(bad).slice(0, 20)}`,
    );
  }
  const future = mintAgentUserToken(secret, { userId: 7, sessionId: 's', now: now + 3600_000 });
  t.equal(
    code(() => verifyAgentUserToken(secret, future, { now })),
    'ERR_AGENT_TOKEN_INVALID',
    'issued in the future',
  );
});

t.test('mint refuses bad input', async (t) => {
  t.throws(() => mintAgentUserToken(secret, { userId: 0, sessionId: 's' }));
  t.throws(() => mintAgentUserToken(secret, { userId: 1, sessionId: '' }));
  t.throws(() => mintAgentUserToken(secret, { userId: 1, sessionId: 's', ttlS: -1 }));
});
