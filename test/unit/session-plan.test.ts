import t from 'tap';
import { agentEnvDigest, planSession } from '../../daemon/runtime/session-plan.js';
import { buildRoutes } from '../../daemon/host/overlay.js';

t.test('a session plan: values only in start, names elsewhere', async (t) => {
  const routes = buildRoutes({
    google: {
      mailBaseUrl: 'https://gmail.test',
      sheetsBaseUrl: 'https://sheets.test',
      driveBaseUrl: 'https://drive.test',
    },
    model: { provider: 'openai', baseUrl: 'https://model.test/v1' },
    hasAccountToken: true,
    hasModelKey: true,
  });
  const secret = 'ya29.real-access-token-value';
  const prepared = {
    routes,
    tokens: {
      MAIL_ACCESS_TOKEN: secret,
      SHEETS_ACCESS_TOKEN: secret,
      SEARCH_ACCESS_TOKEN: secret,
      MODEL_API_KEY_REAL: 'sk-real',
      'not an env': 'x',
    },
    placeholders: { MAIL_API_KEY: 'ph-1' },
    agentEnv: { AGENT_MODEL: 'gpt-x', AGENT_TOOLS: 'send_email' },
    egressAllow: ['gmail.test:443'],
  };
  const plan = planSession({ sessionId: 's-9', userId: 3, prepared, now: 1234 });
  t.equal(plan.profile.session_id, 's-9');
  t.same(plan.profile.routes, routes);
  t.same(
    plan.tokenEnvs.sort(),
    ['MAIL_ACCESS_TOKEN', 'MODEL_API_KEY_REAL', 'SEARCH_ACCESS_TOKEN', 'SHEETS_ACCESS_TOKEN'],
    'only env names',
  );
  t.same(plan.claim.token_envs, plan.tokenEnvs);
  t.equal(plan.claim.claimed_at, 1234);
  t.same(plan.claim.egress_allow, ['gmail.test:443']);
  for (const part of [plan.profile, plan.claim]) {
    const text = JSON.stringify(part);
    t.notOk(
      text.includes(secret) || text.includes('sk-real') || text.includes('ph-1'),
      'no token or placeholder value outside start',
    );
  }
  const start = JSON.stringify(plan.start);
  t.notOk(
    start.includes(secret) || start.includes('sk-real'),
    'no real token goes into the sandbox: start carries placeholders only',
  );
  t.notOk('tokens' in plan.start, 'start has no tokens field');
  t.equal(plan.egress.tokens.MAIL_ACCESS_TOKEN, secret, 'the egress gateway (host) gets the value');
  t.same(plan.egress.routes, routes, 'and the route table it admits against');
  t.same(plan.claim.routes, routes, 'claim.json (host only) keeps the route table for adoption');
  t.same(plan.start.agent_env, prepared.agentEnv);
  t.equal(plan.claim.agent_env_digest, plan.agentEnvDigest);
});

t.test('the agent env digest follows the settings, not their order', async (t) => {
  t.equal(agentEnvDigest({ A: '1', B: '2' }), agentEnvDigest({ B: '2', A: '1' }));
  t.not(agentEnvDigest({ AGENT_TOOLS: 'send_email' }), agentEnvDigest({ AGENT_TOOLS: 'send_email,fetch_sheet' }));
  t.not(agentEnvDigest({}), agentEnvDigest({ AGENT_TOOLS: '' }));
});
