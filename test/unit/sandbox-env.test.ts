import t from 'tap';
import * as registry from '../../core/sandbox-env.js';
import * as protocol from '../../core/sandbox-protocol.js';
import { buildRoutes } from '../../daemon/host/overlay.js';

t.test('the registry is the one list', async (t) => {
  t.same(registry.ACCOUNT_TOKEN_ENVS, ['MAIL_ACCESS_TOKEN', 'SHEETS_ACCESS_TOKEN', 'SEARCH_ACCESS_TOKEN']);
  // The supervisor still imports AGENT_SETTING_ENVS from the protocol module: both must agree.
  t.same(
    [...protocol.AGENT_SETTING_ENVS],
    [...registry.AGENT_SETTING_ENVS],
    'the protocol module exports the same settings list',
  );
  t.same([...registry.TOOL_ENV_NAMES].sort(), [
    'AGENT_API_BASE_URL',
    'AGENT_ATTACHMENTS_DIR',
    'AGENT_PYTHON_LIMITS',
    'AGENT_USER_TOKEN',
    'MAIL_API_KEY',
    'MAIL_BASE_URL',
    'MAIL_FROM',
    'SEARCH_SHEETS_API_KEY',
    'SEARCH_SHEETS_BASE_URL',
    'SHEETS_API_KEY',
    'SHEETS_BASE_URL',
  ]);
  for (const env of registry.ACCOUNT_TOKEN_ENVS)
    t.notOk(registry.TOOL_ENV_NAMES.has(env), `${env} never reaches an MCP server`);
  t.notOk(registry.TOOL_ENV_NAMES.has('AGENT_MODEL_API_KEY'), 'the model placeholder stays with the agent');
  // Every route the overlay can build is in the registry, under the env names it names.
  const routes = buildRoutes({
    google: { mailBaseUrl: 'https://m.test', sheetsBaseUrl: 'https://s.test', driveBaseUrl: 'https://d.test' },
    model: { provider: 'openai', baseUrl: 'https://model.test/v1' },
    hasAccountToken: true,
    hasModelKey: true,
    hostOrigin: 'http://127.0.0.1:1',
  });
  t.equal(routes.length, Object.keys(registry.ROUTE_ENV).length, 'one route per registry entry');
  for (const r of routes) {
    t.ok(registry.isRouteName(r.name), r.name);
    const env = registry.ROUTE_ENV[r.name as registry.RouteName];
    t.equal(r.placeholder_env, env.placeholder);
    t.equal(r.base_url_env, env.baseUrl);
    t.equal(r.token_ref, env.token ? `\${${env.token}}` : null);
  }
  for (const tool of registry.AGENT_TOOLS)
    if (tool.route) t.ok(registry.isRouteName(tool.route), `${tool.name} names a route`);
});

t.test('agent settings: the policy picks tools from the registry', async (t) => {
  const config = { model: { provider: 'demo', model: 'demo', maxSteps: 3, timeoutS: 9 } } as unknown as Parameters<
    typeof registry.agentSettings
  >[0];
  t.notOk('AGENT_TOOLS' in registry.agentSettings(config), 'no policy: every tool');
  const env = registry.agentSettings(config, {
    tools: null,
    models: null,
    denied_tools: ['send_email'],
    denied_models: [],
  });
  t.same(
    env.AGENT_TOOLS.split(','),
    registry.AGENT_TOOL_NAMES.filter((n) => n !== 'send_email'),
  );
  for (const k of Object.keys(env))
    t.ok(registry.AGENT_SETTING_ENVS.includes(k), `${k} passes the supervisor's allow-list`);
});
