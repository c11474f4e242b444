/**
 * The session profile (/run/airlock/profile.json: routes and token references, never values) and
 * the paths inside the sandbox (core/sandbox-protocol.ts re-exports it).
 */
import { z } from 'zod';

// ---------------------------------------------------------------- session profile (/run/airlock/profile.json)

export interface ProfileRoute {
  /** 'mail' | 'sheets' | 'search' | 'model' | 'host' */
  name: string;
  /** Listen path prefix on the proxy, e.g. '/mail'. */
  prefix: string;
  /**
   * Allowed method + path templates (after the prefix is matched), e.g. { method: 'POST', path: '/mail/v1/users/me/messages/send' }.
   * A `{name}` matches one non-empty segment. `opaque` names the parameters whose segment is one
   * opaque value (a Sheets A1 range): only there may an encoded `/` or `\` (`%2F`, `%5C`) appear.
   */
  allow: { method: string; path: string; opaque?: string[] }[];
  /** Upstream base URL, e.g. https://gmail.googleapis.com */
  upstream: string;
  /** Optional path rewrite applied to the matched path, e.g. '/mail/v1/' → '/gmail/v1/'. */
  rewrite?: { from: string; to: string };
  /** Env name of the placeholder the child sends, e.g. 'MAIL_API_KEY'. */
  placeholder_env: string;
  /** Reference to the real token, written as '${MAIL_ACCESS_TOKEN}', never its value; null for no injection. */
  token_ref: string | null;
  /**
   * How the real token is sent: 'bearer' (Authorization) or 'x-api-key' (Anthropic); 'none'
   * sends no credential at all (a keyless local model server; the placeholder is still checked).
   */
  inject?: 'bearer' | 'x-api-key' | 'none';
  /** Child env name that receives the proxy base URL for this route, e.g. 'MAIL_BASE_URL'. */
  base_url_env: string;
}

export interface SessionProfile {
  version: 1;
  session_id: string;
  proxy: { host: '127.0.0.1'; port: number };
  routes: ProfileRoute[];
}

export const ProfileRouteSchema: z.ZodType<ProfileRoute> = z.object({
  name: z.string(),
  prefix: z.string(),
  allow: z.array(z.object({ method: z.string(), path: z.string(), opaque: z.array(z.string()).optional() })),
  upstream: z.string(),
  rewrite: z.object({ from: z.string(), to: z.string() }).optional(),
  placeholder_env: z.string(),
  token_ref: z.string().nullable(),
  inject: z.enum(['bearer', 'x-api-key', 'none']).optional(),
  base_url_env: z.string(),
});

export const SessionProfileSchema: z.ZodType<SessionProfile> = z.object({
  version: z.literal(1),
  session_id: z.string(),
  proxy: z.object({ host: z.literal('127.0.0.1'), port: z.number() }),
  routes: z.array(ProfileRouteSchema),
});

/** Paths inside the sandbox. */
export const SANDBOX_RUN_DIR = '/run/airlock';
export const SANDBOX_PROFILE = '/run/airlock/profile.json';
export const SANDBOX_CONTROL_SOCKET = '/run/airlock/control.sock';
export const SANDBOX_EGRESS_SOCKET = '/run/airlock/egress.sock';
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_ATTACHMENTS = '/workspace/.agent-attachments';
export const SANDBOX_PROXY_PORT = 8700;
export { AGENT_SETTING_ENVS, CHILD_UID, CHILD_GID } from './sandbox-ids.js';
