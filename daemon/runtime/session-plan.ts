/**
 * Session start, planned: a pure function from what the preparer returned to everything the
 * runtime writes and sends (profile.json, claim.json, the supervisor's `start`, the token env
 * names the lifecycle registers for rotation). No I/O here: the session manager performs the plan.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../core/index.js';
import {
  SANDBOX_PROXY_PORT,
  type MailPolicy,
  type PreparedSession,
  type ProfileRoute,
  type SessionPreparer,
  type SessionProfile,
  type StartSpec,
} from '../../core/sandbox-protocol.js';
import { agentSettings } from '../../core/sandbox-env.js';
import type { Claim } from './slots.js';

const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

export interface SessionPlan {
  /** profile.json (world-readable: routes and token references, never values). */
  profile: SessionProfile;
  /** claim.json (host only, never mounted): session, user, route table, token env names. */
  claim: Claim;
  /** The supervisor's `start`: placeholders and settings, never a real token. */
  start: StartSpec;
  /** What the session's egress gateway holds on the host: its route table, the real tokens, the send policy. */
  egress: { routes: ProfileRoute[]; tokens: Record<string, string>; mailPolicy?: MailPolicy };
  /** Env names of the real tokens the gateway holds (names only). */
  tokenEnvs: string[];
  egressAllow: string[];
  agentEnvDigest: string;
  modelRevision?: string;
}

export function buildProfile(sessionId: string, proxyPort: number, routes: ProfileRoute[]): SessionProfile {
  return { version: 1, session_id: sessionId, proxy: { host: '127.0.0.1', port: proxyPort }, routes };
}

/**
 * A stable digest of an agent env (the session's settings and agent policy: model, tools): two
 * sessions started under the same policy have the same digest. Not secret (the env holds none).
 */
export function agentEnvDigest(env: Record<string, string>): string {
  const sorted = Object.keys(env)
    .sort()
    .map((k) => [k, env[k]]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 32);
}

export function planSession(s: {
  sessionId: string;
  userId: number;
  prepared: PreparedSession;
  now: number;
}): SessionPlan {
  const p = s.prepared;
  // Names only: the values stay on the host, in the session's egress gateway.
  const tokenEnvs = Object.keys(p.tokens).filter((k) => ENV_NAME.test(k));
  const digest = agentEnvDigest(p.agentEnv);
  return {
    profile: buildProfile(s.sessionId, SANDBOX_PROXY_PORT, p.routes),
    claim: {
      session_id: s.sessionId,
      user_id: s.userId,
      claimed_at: s.now,
      egress_allow: p.egressAllow,
      token_envs: tokenEnvs,
      agent_env_digest: digest,
      routes: p.routes,
      ...(p.modelRevision ? { model_revision: p.modelRevision } : {}),
    },
    start: {
      session_id: s.sessionId,
      user_id: s.userId,
      placeholders: p.placeholders,
      ...(p.agentUserToken ? { agent_user_token: p.agentUserToken } : {}),
      agent_env: p.agentEnv,
      ...(p.mailPolicy ? { mail_policy: p.mailPolicy } : {}),
    },
    egress: { routes: p.routes, tokens: p.tokens, ...(p.mailPolicy ? { mailPolicy: p.mailPolicy } : {}) },
    tokenEnvs,
    egressAllow: p.egressAllow,
    agentEnvDigest: digest,
    ...(p.modelRevision ? { modelRevision: p.modelRevision } : {}),
  };
}

/** The default preparer: no routes and no tokens, only the agent settings from config. */
export function defaultPreparer(config: Readonly<Config>): SessionPreparer {
  return {
    async prepare(): Promise<PreparedSession> {
      return { routes: [], tokens: {}, placeholders: {}, agentEnv: agentSettings(config), egressAllow: [] };
    },
  };
}
