import { AppError } from '../core/errors.js';
// Env names passed on to MCP servers: the tool routes' base URLs and placeholders, and the agent API.
import { TOOL_ENV_NAMES } from '../core/sandbox-env.js';

/**
 * One MCP server of the agent: a stdio server it spawns (AGENT_MCP_SERVERS: tests, development),
 * or one of the sandbox's own two, hosted in the agent's process (agent/in-process.ts).
 */
export type McpServerSpec =
  | { name: string; command: string; args: string[]; env?: Record<string, string> }
  | { name: string; inProcess: 'workspace' | 'extensions' };

/**
 * The agent child's own small settings, read from its environment (the supervisor builds it;
 * docs/chat.md lists them). The child never holds a real key: AGENT_MODEL_API_KEY is the
 * proxy's placeholder.
 */
export interface AgentSettings {
  provider: 'openai' | 'anthropic' | 'demo';
  model: string;
  baseUrl?: string;
  apiKey?: string;
  maxSteps: number;
  /** Between two events of a streaming answer (AGENT_MODEL_TIMEOUT_S). */
  modelTimeoutMs: number;
  modelConnectTimeoutMs: number;
  modelFirstByteTimeoutMs: number;
  modelRetries: number;
  modelRetryAfterMaxMs: number;
  toolTimeoutMs: number;
  /** The context budget in tokens (AGENT_CONTEXT_TOKENS; core/transcript.ts counts them). */
  contextTokens: number;
  /** The model takes image input (AGENT_MODEL_IMAGES=1): a message's PNG/JPEG uploads go with it (agent/images.ts). */
  modelImages: boolean;
  /** The whole turn (AGENT_TURN_TIMEOUT_S): then it ends with ERR_TURN_TIMEOUT. */
  turnTimeoutMs: number;
  /** null: every tool the servers offer; otherwise only these names are loaded. */
  allowedTools: Set<string> | null;
  mcpServers: McpServerSpec[];
  systemPrompt: string;
  /** Tool-related env passed on to the MCP servers (and nothing else). */
  toolEnv: Record<string, string>;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are the Airlock assistant. You can call tools to read spreadsheets, draw charts and send e-mail for the user. ' +
  'To e-mail a chart, call rasterize_chart and pass the returned file name unchanged to send_email. Be brief.';

/**
 * The sandbox's two MCP servers (workspace suite, extensions), hosted in the agent's own process:
 * as separate processes they bought no isolation (same uid, our own code) and cost an idle
 * session two Node processes (docs/runtime.md#density).
 */
export function defaultMcpServers(): McpServerSpec[] {
  return [
    { name: 'workspace', inProcess: 'workspace' },
    { name: 'extensions', inProcess: 'extensions' },
  ];
}

/**
 * The MCP servers the agent starts at boot (before any session): AGENT_MCP_SERVERS (a JSON list,
 * tests and development) or the image's two. Problems are pushed onto `problems`.
 */
/** One AGENT_MCP_SERVERS item as it came in: every field still to be checked. */
type McpServerItem = { name?: unknown; command?: unknown; args?: unknown; env?: Record<string, unknown> };

export function parseMcpServers(env: NodeJS.ProcessEnv, problems: string[]): McpServerSpec[] {
  let mcpServers = defaultMcpServers();
  if (env.AGENT_MCP_SERVERS) {
    try {
      const parsed = JSON.parse(env.AGENT_MCP_SERVERS) as unknown;
      if (!Array.isArray(parsed)) throw new Error('not a list');
      mcpServers = parsed.map((s: McpServerItem | null, i) => {
        if (!s || typeof s.name !== 'string' || typeof s.command !== 'string')
          throw new Error(`item ${i} needs name and command`);
        const args = s.args ?? [];
        if (!Array.isArray(args) || !args.every((a: unknown) => typeof a === 'string'))
          throw new Error(`item ${i}: args must be strings`);
        if (
          s.env !== undefined &&
          (typeof s.env !== 'object' || Object.values(s.env).some((v) => typeof v !== 'string'))
        )
          throw new Error(`item ${i}: env must map names to strings`);
        return { name: s.name, command: s.command, args, ...(s.env ? { env: s.env as Record<string, string> } : {}) };
      });
    } catch (err) {
      problems.push(`AGENT_MCP_SERVERS: ${(err as Error).message}`);
    }
  }
  return mcpServers;
}

/** The part of an env the MCP servers get (TOOL_ENV_NAMES), and nothing else. */
export function toolEnvOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const toolEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && TOOL_ENV_NAMES.has(k)) toolEnv[k] = v;
  }
  return toolEnv;
}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}: must be an integer between ${min} and ${max}`);
    return def;
  }
  return n;
}

/** Read and check the settings; throws ERR_AGENT_CONFIG listing every problem. */
export function readAgentSettings(env: NodeJS.ProcessEnv): AgentSettings {
  const problems: string[] = [];
  const provider = (env.AGENT_MODEL_PROVIDER ?? 'demo') as AgentSettings['provider'];
  if (!['openai', 'anthropic', 'demo'].includes(provider))
    problems.push('AGENT_MODEL_PROVIDER: must be openai, anthropic or demo');
  const baseUrl = env.AGENT_MODEL_BASE_URL || undefined;
  if (provider !== 'demo' && !baseUrl) problems.push('AGENT_MODEL_BASE_URL: required for provider ' + provider);
  if (baseUrl) {
    try {
      new URL(baseUrl);
    } catch {
      problems.push('AGENT_MODEL_BASE_URL: not a URL');
    }
  }
  const mcpServers = parseMcpServers(env, problems);
  const toolsRaw = env.AGENT_TOOLS;
  const allowedTools =
    toolsRaw === undefined || toolsRaw.trim() === '*'
      ? null
      : new Set(
          toolsRaw
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        );
  const toolEnv = toolEnvOf(env);
  const settings: AgentSettings = {
    provider,
    model: env.AGENT_MODEL || (provider === 'demo' ? 'demo' : ''),
    baseUrl,
    apiKey: env.AGENT_MODEL_API_KEY || undefined,
    maxSteps: int(env, 'AGENT_MAX_STEPS', 12, 1, 200, problems),
    modelTimeoutMs: int(env, 'AGENT_MODEL_TIMEOUT_S', 30, 1, 3600, problems) * 1000,
    modelConnectTimeoutMs: int(env, 'AGENT_MODEL_CONNECT_TIMEOUT_S', 10, 1, 300, problems) * 1000,
    modelFirstByteTimeoutMs: int(env, 'AGENT_MODEL_FIRST_BYTE_TIMEOUT_S', 60, 1, 3600, problems) * 1000,
    modelRetries: int(env, 'AGENT_MODEL_RETRIES', 3, 0, 10, problems),
    modelRetryAfterMaxMs: int(env, 'AGENT_MODEL_RETRY_AFTER_MAX_S', 30, 0, 600, problems) * 1000,
    toolTimeoutMs: int(env, 'AGENT_TOOL_TIMEOUT_S', 120, 1, 3600, problems) * 1000,
    contextTokens: int(env, 'AGENT_CONTEXT_TOKENS', 100_000, 1000, 10_000_000, problems),
    modelImages: env.AGENT_MODEL_IMAGES === '1',
    turnTimeoutMs: int(env, 'AGENT_TURN_TIMEOUT_S', 600, 1, 86400, problems) * 1000,
    allowedTools,
    mcpServers,
    systemPrompt: env.AGENT_SYSTEM_PROMPT || DEFAULT_SYSTEM_PROMPT,
    toolEnv,
  };
  if (provider !== 'demo' && !settings.model) problems.push('AGENT_MODEL: required for provider ' + provider);
  if (problems.length) throw new AppError('ERR_AGENT_CONFIG', `invalid agent settings: ${problems.join('; ')}`);
  return settings;
}
