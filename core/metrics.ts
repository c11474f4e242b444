import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The daemon's Prometheus metrics, one registry per daemon instance (tests run several).
 * Served at GET /metrics by the web app.
 */
export function createMetrics(opts: { defaultMetrics?: boolean; node?: string } = {}) {
  const registry = new Registry();
  // Which node of the fleet this is: an info series (the scraper adds its own target labels to
  // every series; a node label on each of ours would only duplicate that and break selectors).
  if (opts.node) {
    new Gauge({
      name: 'airlock_node_info',
      help: 'This node of the fleet (value 1): its AIRLOCK_NODE_ID.',
      labelNames: ['node'] as const,
      registers: [registry],
    }).set({ node: opts.node }, 1);
  }
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'airlock_process_' });
  const m = {
    registry,
    sessionsLive: new Gauge({
      name: 'airlock_sessions_live',
      help: 'Live sandboxes (claimed containers).',
      registers: [registry],
    }),
    poolReady: new Gauge({
      name: 'airlock_pool_ready',
      help: 'Pre-started containers waiting to be claimed.',
      registers: [registry],
    }),
    sessionStartsWaiting: new Gauge({
      name: 'airlock_session_starts_waiting',
      help: 'Sandbox starts queued at the start gate (AIRLOCK_MAX_STARTING).',
      registers: [registry],
    }),
    sessionsStarted: new Counter({
      name: 'airlock_sessions_started_total',
      help: 'Sandboxes started, by how.',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    sessionsReaped: new Counter({
      name: 'airlock_sessions_reaped_total',
      help: 'Sandboxes removed, by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    sessionStartSeconds: new Histogram({
      name: 'airlock_session_start_seconds',
      help: 'Time from first prompt to a ready sandbox, by kind (cold or pool).',
      labelNames: ['kind'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    proxyDecisions: new Counter({
      name: 'airlock_proxy_decisions_total',
      help: 'Credential-proxy and egress decisions, by route and outcome.',
      labelNames: ['route', 'outcome'] as const,
      registers: [registry],
    }),
    turns: new Counter({
      name: 'airlock_turns_total',
      help: 'Chat turns, by stop reason.',
      labelNames: ['stop_reason'] as const,
      registers: [registry],
    }),
    modelTokens: new Counter({
      name: 'airlock_model_tokens_total',
      help: 'Model tokens of chat turns as the providers reported them, by kind (input, output).',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    chatFeedback: new Counter({
      name: 'airlock_chat_feedback_total',
      help: 'Ratings given to chat answers (new or changed), by rating (up, down).',
      labelNames: ['rating'] as const,
      registers: [registry],
    }),
    ...accountMetrics(registry),
    ...usageMetrics(registry),
  };
  return {
    ...m,
    /** Count one turn's usage on its model. */
    usage(model: string, usage: { input_tokens: number; output_tokens: number } | undefined, cost: number): void {
      m.usageTurns.inc({ model });
      if (usage) m.usageTokens.inc({ model, kind: 'input' }, usage.input_tokens);
      if (usage) m.usageTokens.inc({ model, kind: 'output' }, usage.output_tokens);
      if (cost > 0) m.usageCost.inc({ model }, cost);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * Usage by chat model (docs/usage.md): no user or team label — their number is unbounded (one
 * series each); per-user usage is in /api/admin/usage.
 */
function usageMetrics(registry: Registry) {
  return {
    usageTurns: new Counter({
      name: 'airlock_usage_turns_total',
      help: 'Chat turns that ran, by chat model id.',
      labelNames: ['model'] as const,
      registers: [registry],
    }),
    usageTokens: new Counter({
      name: 'airlock_usage_tokens_total',
      help: 'Provider-reported tokens of chat turns, by chat model id and kind (input, output).',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
    }),
    usageSandboxSeconds: new Counter({
      name: 'airlock_usage_sandbox_seconds_total',
      help: 'Seconds chats held a sandbox (claim to release), by chat model id.',
      labelNames: ['model'] as const,
      registers: [registry],
    }),
    usageCost: new Counter({
      name: 'airlock_usage_cost_total',
      help: "Cost of chat turns at each model's price, in the priced models' currency, by chat model id.",
      labelNames: ['model'] as const,
      registers: [registry],
    }),
  };
}

/** Logins, token refreshes and directory-sync jobs, by outcome. */
function accountMetrics(registry: Registry) {
  return {
    syncJobs: new Counter({
      name: 'airlock_sync_jobs_total',
      help: 'Directory-sync jobs finished, by status.',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    logins: new Counter({
      name: 'airlock_logins_total',
      help: 'Password logins, by outcome (ok, failed, rate_limited).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    tokenRefreshes: new Counter({
      name: 'airlock_token_refreshes_total',
      help: 'Access-token refreshes, by outcome.',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}
