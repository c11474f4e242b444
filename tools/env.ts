import { parsePythonLimits } from './python-limits.js';
import type { PythonLimits } from './python-limits.js';
/**
 * The small environment the workspace-suite core agent reads (names fixed in docs/rules.md#sandbox-environment).
 * The agent child hands its own env to this MCP server; no real token is ever in it.
 */
export interface ToolsEnv {
  mail?: { baseUrl: string; apiKey: string; from?: string };
  sheets?: { baseUrl: string; apiKey: string };
  search?: { baseUrl: string; apiKey: string };
  /** The proxy's `host` route to the daemon's agent API, and the short-lived user token. */
  agentApi?: { baseUrl: string; token: string };
  /** Where chart PNGs live; AGENT_ATTACHMENTS_DIR (tests), default /workspace/.agent-attachments. */
  attachmentsDir: string;
  /** Upstream call timeout. */
  timeoutMs: number;
  /** run_python's bounds (AGENT_PYTHON_LIMITS). */
  python: PythonLimits;
}

export const DEFAULT_ATTACHMENTS_DIR = '/workspace/.agent-attachments';
const DEFAULT_TIMEOUT_MS = 30_000;

function pair(base: string | undefined, key: string | undefined): { baseUrl: string; apiKey: string } | undefined {
  if (!base || !key) return undefined;
  try {
    const u = new URL(base);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  } catch {
    return undefined; // a malformed base URL counts as "route not attached"
  }
  return { baseUrl: base.replace(/\/+$/, ''), apiKey: key };
}

/** Read ToolsEnv from an env object (process.env in main.ts, a literal in tests). */
export function readToolsEnv(env: Record<string, string | undefined>): ToolsEnv {
  const mail = pair(env.MAIL_BASE_URL, env.MAIL_API_KEY);
  const agent = pair(env.AGENT_API_BASE_URL, env.AGENT_USER_TOKEN);
  const timeout = Number(env.AGENT_TOOL_TIMEOUT_MS);
  return {
    mail: mail && { ...mail, ...(env.MAIL_FROM ? { from: env.MAIL_FROM } : {}) },
    sheets: pair(env.SHEETS_BASE_URL, env.SHEETS_API_KEY),
    search: pair(env.SEARCH_SHEETS_BASE_URL, env.SEARCH_SHEETS_API_KEY),
    agentApi: agent && { baseUrl: agent.baseUrl, token: agent.apiKey },
    attachmentsDir: env.AGENT_ATTACHMENTS_DIR || DEFAULT_ATTACHMENTS_DIR,
    timeoutMs: Number.isInteger(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
    python: parsePythonLimits(env.AGENT_PYTHON_LIMITS),
  };
}
