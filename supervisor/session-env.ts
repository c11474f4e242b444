/**
 * What the supervisor reads of a session at `start`: profile.json (checked against its schema)
 * and the child's part of the environment built from the start spec (an allow-list, never the
 * supervisor's own env). Pure but for reading the profile; supervisor.ts uses them.
 */
import { readFileSync } from 'node:fs';
import {
  AGENT_SETTING_ENVS,
  SessionProfileSchema,
  type SessionProfile,
  type StartSpec,
} from '../core/sandbox-protocol.js';
import { checkMessage, protocolLogFields } from '../core/ndjson.js';
import { childBaseEnv } from './idle-child.js';

const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
/** Env names the child may never receive, whatever the daemon sends. */
const FORBIDDEN_CHILD_ENV = new Set([
  'MCP_INTERNAL_SECRET',
  'AGENT_USER_TOKEN_SECRET',
  'NODE_OPTIONS',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
]);

type Warn = (msg: string, data?: Record<string, unknown>) => void;

export function coded(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

/** The `code` of a thrown value (AppError, coded Error, errno error), if it has a string one. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}

/** profile.json, checked against its schema (the daemon writes it; the child may read it). */
export function readProfile(path: string, warn: Warn): SessionProfile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw coded('ERR_SANDBOX_PROFILE', `profile.json cannot be read (${errorCode(err) ?? 'not JSON'})`);
  }
  const r = checkMessage(SessionProfileSchema, raw);
  if (!r.ok) {
    warn('bad profile.json', protocolLogFields(r.err, 'profile'));
    throw coded('ERR_SANDBOX_PROFILE', 'profile.json does not match the profile schema');
  }
  return r.msg;
}

/**
 * The session's part of the child's environment (sent in `configure`): the agent settings and
 * the placeholders its profile names, the proxy's base URLs, the agent user token, the session
 * id; anything else the daemon sent is refused and logged by name only.
 */
export function sessionEnv(
  spec: StartSpec,
  profile: SessionProfile | undefined,
  proxyPort: number,
  warn: Warn,
): Record<string, string> {
  const env: Record<string, string> = {};
  const put = (k: string, v: unknown) => {
    if (!ENV_NAME.test(k) || typeof v !== 'string') return;
    if (FORBIDDEN_CHILD_ENV.has(k)) {
      warn('refused child env entry', { name: k });
      return;
    }
    env[k] = v;
  };
  const settings = new Set(AGENT_SETTING_ENVS);
  const placeholderNames = new Set((profile?.routes ?? []).map((r) => r.placeholder_env));
  const refuse = (k: string) => warn('refused child env entry', { name: ENV_NAME.test(k) ? k : '(malformed)' });
  for (const [k, v] of Object.entries(spec.agent_env)) {
    if (settings.has(k)) put(k, v);
    else refuse(k);
  }
  for (const [k, v] of Object.entries(spec.placeholders)) {
    if (placeholderNames.has(k)) put(k, v);
    else refuse(k);
  }
  for (const r of profile?.routes ?? [])
    if (r.base_url_env) put(r.base_url_env, `http://127.0.0.1:${proxyPort}${r.prefix}`);
  if (spec.agent_user_token) put('AGENT_USER_TOKEN', spec.agent_user_token);
  put('AIRLOCK_SESSION_ID', spec.session_id);
  for (const k of Object.keys(childBaseEnv())) delete env[k];
  return env;
}
