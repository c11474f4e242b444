/**
 * Sandbox names that the control protocol, the name registry (core/sandbox-env.ts) and the
 * supervisor's entry all need, in a file that imports nothing: the browser bundle reaches it
 * through core/sandbox-protocol.ts, and the supervisor's entry must load no more than it needs
 * before it launches the agent (docs/runtime.md, "Cold start, step by step").
 */

/**
 * The only `agent_env` names the supervisor hands the agent child (the agent's settings and the
 * account's From address). Placeholders pass only under their profile route's name; base URLs,
 * AGENT_USER_TOKEN, AIRLOCK_SESSION_ID, HOME, PATH and LANG are set by the supervisor itself.
 */
export const AGENT_SETTING_ENVS: readonly string[] = [
  'AGENT_MODEL_PROVIDER',
  'AGENT_MODEL',
  'AGENT_MAX_STEPS',
  'AGENT_MODEL_TIMEOUT_S',
  'AGENT_CONTEXT_TOKENS',
  'AGENT_MODEL_IMAGES',
  'AGENT_MODEL_CONNECT_TIMEOUT_S',
  'AGENT_MODEL_FIRST_BYTE_TIMEOUT_S',
  'AGENT_MODEL_RETRIES',
  'AGENT_MODEL_RETRY_AFTER_MAX_S',
  'AGENT_TOOL_TIMEOUT_S',
  'AGENT_TURN_TIMEOUT_S',
  'AGENT_PYTHON_LIMITS',
  'AGENT_TOOLS',
  'AGENT_SYSTEM_PROMPT',
  'AGENT_LOG_LEVEL',
  'MAIL_FROM',
];

/** The agent child's uid and gid in the sandbox (user `agent` of the image). */
export const CHILD_UID = 1001;
export const CHILD_GID = 1001;
