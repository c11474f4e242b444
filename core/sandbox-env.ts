/**
 * The one registry of what a session's sandbox gets by name: its proxy routes and their env
 * names, the agent's tools, the agent settings the supervisor passes to the child, and the env
 * the agent passes on to its MCP servers. The overlay (routes, placeholders, tokens), the token
 * service (which tokens rotate), the supervisor (the child's env allow-list) and the agent (the
 * MCP servers' env) all read these lists instead of keeping their own.
 *
 * Sandbox code imports this file directly (`core/sandbox-env.js`): it imports types only.
 */
import type { Config } from './config.js';

/** Where a route's real credential comes from. */
export type RouteCredential = 'account' | 'model-key' | 'agent-user-token';

export interface SandboxRouteEnv {
  /** Child env: the per-session placeholder the proxy checks (or the child's own AGENT_USER_TOKEN). */
  placeholder: string;
  /** Supervisor-only env holding the real credential; null when the proxy injects none. */
  token: string | null;
  /** Child env: `http://127.0.0.1:<proxy port><prefix>`, set by the supervisor. */
  baseUrl: string;
  credential: RouteCredential;
  /** The agent's MCP servers use this route (their env carries its placeholder and base URL). */
  tools: boolean;
}

/** The sandbox routes by name (docs/proxy.md). */
export const ROUTE_ENV = {
  mail: {
    placeholder: 'MAIL_API_KEY',
    token: 'MAIL_ACCESS_TOKEN',
    baseUrl: 'MAIL_BASE_URL',
    credential: 'account',
    tools: true,
  },
  sheets: {
    placeholder: 'SHEETS_API_KEY',
    token: 'SHEETS_ACCESS_TOKEN',
    baseUrl: 'SHEETS_BASE_URL',
    credential: 'account',
    tools: true,
  },
  search: {
    placeholder: 'SEARCH_SHEETS_API_KEY',
    token: 'SEARCH_ACCESS_TOKEN',
    baseUrl: 'SEARCH_SHEETS_BASE_URL',
    credential: 'account',
    tools: true,
  },
  model: {
    placeholder: 'AGENT_MODEL_API_KEY',
    token: 'MODEL_API_KEY_REAL',
    baseUrl: 'AGENT_MODEL_BASE_URL',
    credential: 'model-key',
    tools: false,
  },
  host: {
    placeholder: 'AGENT_USER_TOKEN',
    token: null,
    baseUrl: 'AGENT_API_BASE_URL',
    credential: 'agent-user-token',
    tools: true,
  },
} as const satisfies Record<string, SandboxRouteEnv>;

export type RouteName = keyof typeof ROUTE_ENV;

export function isRouteName(name: string): name is RouteName {
  return Object.hasOwn(ROUTE_ENV, name);
}

/**
 * Connectors (docs/connectors.md): one placeholder per session for every connector route (the
 * proxy and the egress gateway both check it), and one base URL per connector,
 * `AIRLOCK_CONNECTOR_<ID>_URL` (the id upper-cased).
 */
export const CONNECTORS_PLACEHOLDER_ENV = 'CONNECTORS_API_KEY';
export const CONNECTOR_ENV_RE = /^AIRLOCK_CONNECTOR_([A-Z][A-Z0-9_]{1,31})_URL$/;
export const connectorBaseUrlEnv = (id: string) => `AIRLOCK_CONNECTOR_${id.toUpperCase()}_URL`;
/** A connector's route name in the profile (and the gateway's log): `connector:<id>`. */
export const connectorRouteName = (id: string) => `connector:${id}`;

/** Routes that carry the user's connected workspace account (all hold the one access token). */
export const ACCOUNT_ROUTES: readonly RouteName[] = (Object.keys(ROUTE_ENV) as RouteName[]).filter(
  (r) => ROUTE_ENV[r].credential === 'account',
);

/** The account-token env names a session's supervisor may hold: the ones token rotation refreshes. */
export const ACCOUNT_TOKEN_ENVS: readonly string[] = ACCOUNT_ROUTES.map((r) => ROUTE_ENV[r].token!);

/** The agent's tools: which MCP server offers each and which route it needs (none: local). */
export const AGENT_TOOLS = [
  { name: 'fetch_sheet', server: 'workspace', route: 'sheets' },
  { name: 'search_spreadsheets', server: 'workspace', route: 'search' },
  { name: 'send_email', server: 'workspace', route: 'mail' },
  { name: 'fetch_memory', server: 'workspace', route: 'host' },
  { name: 'read_file_table', server: 'workspace', route: null },
  { name: 'run_python', server: 'workspace', route: null },
  { name: 'read_document', server: 'workspace', route: null },
  { name: 'rasterize_chart', server: 'extensions', route: null },
  { name: 'render_chart', server: 'extensions', route: null },
] as const satisfies readonly { name: string; server: 'workspace' | 'extensions'; route: RouteName | null }[];

export const AGENT_TOOL_NAMES: readonly string[] = AGENT_TOOLS.map((t) => t.name);

export { AGENT_SETTING_ENVS } from './sandbox-ids.js';

/**
 * The env the agent passes on to its MCP servers, and nothing else: the tool routes'
 * placeholders and base URLs, the From address for send_email, and where attachments live.
 */
export const TOOL_ENV_NAMES: ReadonlySet<string> = new Set([
  ...(Object.values(ROUTE_ENV) as SandboxRouteEnv[]).filter((r) => r.tools).flatMap((r) => [r.placeholder, r.baseUrl]),
  'MAIL_FROM',
  'AGENT_ATTACHMENTS_DIR',
  'AGENT_PYTHON_LIMITS',
]);

/** The parts of a user's agent policy that decide the agent's settings. */
export interface AgentPolicyLimits {
  tools: string[] | null;
  models: string[] | null;
  denied_tools: string[];
  denied_models: string[];
}

/** The model a session's agent runs with: the chat's model (docs/chat.md "A model per chat"), else AIRLOCK_MODEL_*. */
export interface AgentModelChoice {
  provider: 'openai' | 'anthropic' | 'demo';
  model: string;
  contextTokens: number;
  /** Whether it takes image input: the agent sends a message's PNG/JPEG uploads as image parts. */
  images?: boolean;
}

/**
 * The agent child's settings (env names the agent reads). `model` is the chat's model (default:
 * the config's). The user's agent policy decides which tools are loaded (AGENT_TOOLS, comma list;
 * absent = all); a forbidden model is refused earlier, when the session is prepared.
 */
export function agentSettings(
  config: Readonly<Pick<Config, 'model'> & Partial<Pick<Config, 'python'>>>,
  policy?: AgentPolicyLimits,
  model: AgentModelChoice = config.model,
): Record<string, string> {
  const env: Record<string, string> = {
    AGENT_MODEL_PROVIDER: model.provider,
    AGENT_MODEL: model.model,
    AGENT_MAX_STEPS: String(config.model.maxSteps),
    AGENT_MODEL_TIMEOUT_S: String(config.model.timeoutS),
    AGENT_CONTEXT_TOKENS: String(model.contextTokens),
  };
  if (model.images) env.AGENT_MODEL_IMAGES = '1';
  // The bounds of model and tool calls (docs/chat.md, "Bounds"); absent in an older config: the agent's defaults.
  const m = config.model as Partial<Config['model']>;
  const put = (name: string, v: number | undefined) => v !== undefined && (env[name] = String(v));
  put('AGENT_MODEL_CONNECT_TIMEOUT_S', m.connectTimeoutS);
  put('AGENT_MODEL_FIRST_BYTE_TIMEOUT_S', m.firstByteTimeoutS);
  put('AGENT_MODEL_RETRIES', m.retries);
  put('AGENT_MODEL_RETRY_AFTER_MAX_S', m.retryAfterMaxS);
  put('AGENT_TOOL_TIMEOUT_S', m.toolTimeoutS);
  put('AGENT_TURN_TIMEOUT_S', m.turnTimeoutS);
  // run_python's bounds (docs/tools.md#run_python); absent: the tool's defaults.
  const py = (config as Partial<Pick<Config, 'python'>>).python;
  if (py)
    env.AGENT_PYTHON_LIMITS = `wall_s=${py.wallS},cpu_s=${py.cpuS},memory_mb=${py.memoryMb},output_kb=${py.outputKb},procs=${py.procs},file_mb=${py.fileMb}`;
  if (policy) {
    const allowed = (policy.tools ?? AGENT_TOOL_NAMES).filter((t) => !policy.denied_tools.includes(t));
    if (policy.tools !== null || policy.denied_tools.length) env.AGENT_TOOLS = allowed.join(',');
  }
  return env;
}

/**
 * Node/V8 flags every sandbox process runs with, on its command line (whoever spawns it passes
 * them: the image's ENTRYPOINT for the supervisor, the supervisor for the agent child, the agent
 * for its MCP servers). A 1 MiB semi-space keeps an idle process's young generation small
 * (docs/runtime.md#density); the image's compile cache and startup snapshots are made under the
 * same flags.
 */
export const SANDBOX_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/**
 * glibc malloc settings of every sandbox process (docs/runtime.md#density): the image's ENV (the
 * supervisor) and the agent child's base env. Fixed trim and mmap thresholds (128 KiB, glibc's
 * defaults, which glibc otherwise raises for good after the first large block is freed: the
 * startup snapshot's ~10 MiB file buffer raised them to its size, so later blocks up to that size
 * stayed in the heap and freed memory was never given back), and two arenas instead of one per
 * thread.
 */
export const SANDBOX_MALLOC_ENV: Readonly<Record<string, string>> = {
  GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=131072',
};

/**
 * The V8 startup snapshots in the image, beside their entry points (dist/agent/, dist/supervisor/):
 * the image build makes each blob from SNAPSHOT_SCRIPT (a CommonJS bundle of that process) with
 * the image's node and SANDBOX_NODE_FLAGS. When the agent's is there, the supervisor starts the
 * agent from it; the supervisor's own is the image's ENTRYPOINT. Without them (an image built
 * without esbuild, a test running dist/ directly) each process starts from its main.js.
 */
export const SNAPSHOT_SCRIPT = 'snapshot.cjs';
export const SNAPSHOT_BLOB = 'snapshot.blob';

export { CHILD_UID, CHILD_GID } from './sandbox-ids.js';

/**
 * V8's compile cache of the sandbox processes in the image (NODE_COMPILE_CACHE, set by the image;
 * made at image build, read-only at run time). Not a secret: passed on to the child processes.
 */
export const COMPILE_CACHE_ENV = 'NODE_COMPILE_CACHE';
