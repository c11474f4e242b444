import {
  AppError,
  randomToken,
  type Config,
  type Encryptor,
  type Logger,
  type PreparedSession,
  type ProfileRoute,
  type SessionPreparer,
} from '../../core/index.js';
import {
  ACCOUNT_TOKEN_ENVS,
  agentSettings,
  isRouteName,
  ROUTE_ENV,
  type SandboxRouteEnv,
} from '../../core/sandbox-env.js';
import { buildProfile } from '../runtime/session-plan.js';
import { CONNECTORS_PLACEHOLDER_ENV, connectorBaseUrlEnv, connectorRouteName } from '../../core/sandbox-env.js';
import { sessionConnectors } from '../../domain/connectors/index.js';
import { writeProfile } from '../runtime/slots.js';
import { egressTarget } from './egress.js';
import { effectiveAgentPolicy, policyAllows } from '../../domain/identity/agent-policy.js';
import { mailPolicyFor } from '../../domain/mail/index.js';
import type { MailPolicy } from '../../core/sandbox-protocol.js';
import type { Sql } from '../../domain/db/index.js';
import { modelAtRevision, sessionModel, type ResolvedModel } from '../../domain/chat/models.js';
import type { TokenService } from './tokens.js';

/** Env names of the sandbox routes (the registry in core/sandbox-env.ts). */
export { ROUTE_ENV };
export { agentSettings };
export { buildProfile };
/** Write profile.json atomically (0644): what the runtime writes into a slot's run/ folder. */
export { writeProfile };

/** The server's own send policy (AIRLOCK_MAIL_*), for a daemon without agent policies. */
export function serverMailPolicy(config: Readonly<Config>): MailPolicy {
  const m = config.mail;
  return {
    allow_domains: [...m.allowDomains],
    block_domains: [...m.blockDomains],
    other: m.other,
    max_recipients: m.maxRecipients,
    max_per_hour: m.maxPerHour,
    approval_timeout_s: m.approvalTimeoutS,
  };
}

/** Random bytes per placeholder (192 bits ≥ the 128 the issue asks). */
export const PLACEHOLDER_BYTES = 24;

export interface RouteInputs {
  google: { mailBaseUrl: string; sheetsBaseUrl: string; driveBaseUrl: string };
  model: { provider: 'openai' | 'anthropic' | 'demo'; baseUrl?: string };
  /** Workspace access token present → mail, sheets and search routes. */
  hasAccountToken: boolean;
  /** Model key present (and provider needs one) → model route. */
  hasModelKey: boolean;
  /** The daemon's own web origin for the host route; omitted → no host route. */
  hostOrigin?: string;
}

const ref = (env: string) => `\${${env}}`;

/** A workspace (Google) route: one allowed request, the user's token as a bearer; its prefix is the allowed path's first segment. */
function googleRoute(
  name: 'mail' | 'sheets' | 'search',
  allow: ProfileRoute['allow'][number],
  upstream: string,
  rewrite: ProfileRoute['rewrite'],
): ProfileRoute {
  const env = ROUTE_ENV[name];
  return {
    name,
    prefix: `/${allow.path.split('/')[1]}`,
    allow: [allow],
    upstream,
    rewrite,
    placeholder_env: env.placeholder,
    token_ref: ref(env.token),
    inject: 'bearer',
    base_url_env: env.baseUrl,
  };
}

/**
 * The route table of a session. The child calls `<BASE_URL><path>` where the supervisor sets
 * BASE_URL = `http://127.0.0.1:<port><prefix>`; `allow` lists full proxy paths; `rewrite`
 * turns a proxy path into the upstream path (appended to the upstream URL's own path).
 */
export function buildRoutes(i: RouteInputs): ProfileRoute[] {
  const routes: ProfileRoute[] = [];
  if (i.hasAccountToken) {
    routes.push(
      // The child calls {MAIL_BASE_URL}/mail/v1/users/me/messages/send: one method and one path only (docs/rules.md#token-injection).
      googleRoute('mail', { method: 'POST', path: '/gmail/mail/v1/users/me/messages/send' }, i.google.mailBaseUrl, {
        from: '/gmail/mail/v1/',
        to: '/gmail/v1/',
      }),
      // fetch_sheet: Sheets v4 spreadsheets.values.get. The A1 range is one opaque value
      // (encodeURIComponent): a sheet title may hold '/', sent as %2F inside that segment.
      googleRoute(
        'sheets',
        { method: 'GET', path: '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}', opaque: ['range'] },
        i.google.sheetsBaseUrl,
        { from: '/sheets/', to: '/' },
      ),
      // search_spreadsheets: Drive v3 files.list.
      googleRoute('search', { method: 'GET', path: '/search/drive/v3/files' }, i.google.driveBaseUrl, {
        from: '/search/',
        to: '/',
      }),
    );
  }
  if (i.model.baseUrl && (i.model.provider === 'openai' || i.model.provider === 'anthropic')) {
    const openai = i.model.provider === 'openai';
    // Without AIRLOCK_MODEL_API_KEY (a local vLLM, Ollama or llama.cpp server) the route still
    // checks the child's placeholder but sends no credential upstream.
    routes.push({
      name: 'model',
      prefix: '/model',
      // OpenAI-style base URLs carry their /v1; Anthropic's do not.
      allow: [{ method: 'POST', path: openai ? '/model/chat/completions' : '/model/v1/messages' }],
      upstream: i.model.baseUrl,
      rewrite: { from: '/model/', to: '/' },
      placeholder_env: ROUTE_ENV.model.placeholder,
      token_ref: i.hasModelKey ? ref(ROUTE_ENV.model.token) : null,
      inject: !i.hasModelKey ? 'none' : openai ? 'bearer' : 'x-api-key',
      base_url_env: ROUTE_ENV.model.baseUrl,
    });
  }
  if (i.hostOrigin) {
    routes.push({
      name: 'host',
      prefix: '/host',
      // The daemon's agent API (fetch_memory); the child's own AGENT_USER_TOKEN goes through.
      allow: [
        { method: 'GET', path: '/host/api/agent/memories' },
        { method: 'GET', path: '/host/api/agent/memories/{id}' },
      ],
      upstream: i.hostOrigin,
      rewrite: { from: '/host/', to: '/' },
      placeholder_env: ROUTE_ENV.host.placeholder,
      token_ref: null,
      base_url_env: ROUTE_ENV.host.baseUrl,
    });
  }
  return routes;
}

/**
 * A connector's route: the agent's MCP client posts to `/connectors/<id>` with the session's
 * connector placeholder as its bearer; the gateway answers (GET and DELETE get 405 there: the
 * SDK client tries them). No token is named: the gateway holds the credential by connector.
 */
export function connectorRoute(id: string, url: string): ProfileRoute {
  const path = `/connectors/${id}`;
  return {
    name: connectorRouteName(id),
    prefix: path,
    allow: ['POST', 'GET', 'DELETE'].map((method) => ({ method, path })),
    upstream: url,
    placeholder_env: CONNECTORS_PLACEHOLDER_ENV,
    token_ref: null,
    base_url_env: connectorBaseUrlEnv(id),
  };
}

export interface OverlayOptions {
  config: Readonly<Config>;
  /** When set, the user's agent policy (identity area) limits the tools and model at session start. */
  db?: Sql;
  /** With `db`: the chat's own model (chat_models, its key decrypted here) instead of AIRLOCK_MODEL_*. */
  encryptor?: Encryptor;
  tokens: TokenService;
  log: Logger;
  /** The daemon's own web origin as the sandbox reaches it (host route); omitted → no host route. */
  hostOrigin?: string;
  /** Mint AGENT_USER_TOKEN for a session (HMAC, bound to user and session); omitted → no host route. */
  mintAgentUserToken?: (userId: number, sessionId: string) => string;
  /** The connected account's address (From of sent mail, MAIL_FROM); omitted → Gmail fills it in. */
  accountEmail?: (userId: number) => string | null | undefined;
}

/** A plain addr-spec only: nothing that could start a display name, a comment or a new header. */
const MAIL_FROM_RE = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9.-]{1,253}$/;

/**
 * SessionPreparer: at session start, obtain the user's access token (refreshed when ≤ 60 s
 * remain), build the routes whose tokens exist, mint per-session placeholders, and list the
 * egress targets. Not pure: it reads the account store and a refresh stores the user's new
 * token. It does nothing for the session itself: no container, no file, no registration; the
 * session runtime writes the profile and, once the sandbox took `start`, reports the session
 * live, which is where token rotation registers it (serve's onSessionLive hook).
 */
export class OverlayPreparer implements SessionPreparer {
  readonly #o: OverlayOptions;
  constructor(o: OverlayOptions) {
    this.#o = o;
  }

  async prepare(req: { userId: number; sessionId: string; proxyPort: number }): Promise<PreparedSession> {
    const { config, log } = this.#o;
    let access: string | undefined;
    try {
      access = (await this.#o.tokens.getAccessToken(req.userId))?.accessToken;
    } catch (err) {
      // A failed refresh leaves the tools unattached: they answer "connect your workspace account".
      log.warn(
        { userId: req.userId, sessionId: req.sessionId, code: (err as { code?: string }).code },
        'no workspace token for session',
      );
    }
    // The user's agent policy (identity area): a forbidden model refuses the session start;
    // forbidden tools are not loaded (AGENT_TOOLS).
    const policy = this.#o.db ? await effectiveAgentPolicy(this.#o.db, req.userId) : undefined;
    // The chat's model (docs/chat.md "A model per chat"): its provider, upstream and key.
    const model = await this.#model(req.sessionId);
    if (policy && !policyAllows(policy, 'model', model.model)) {
      throw new AppError(
        'ERR_POLICY_MODEL_DENIED',
        `your organisation's agent policy does not allow the model ${model.model}; ask an administrator`,
      );
    }
    const modelKey = model.apiKey;
    const agentUserToken = this.#o.mintAgentUserToken?.(req.userId, req.sessionId);
    const routes = buildRoutes({
      google: config.google,
      model,
      hasAccountToken: !!access,
      hasModelKey: !!modelKey,
      hostOrigin: agentUserToken ? this.#o.hostOrigin : undefined,
    });
    const tokens: Record<string, string> = {};
    const placeholders: Record<string, string> = {};
    const agentEnv: Record<string, string> = {};
    for (const r of routes) {
      if (!isRouteName(r.name)) continue;
      const env: SandboxRouteEnv = ROUTE_ENV[r.name];
      placeholders[env.placeholder] =
        env.credential === 'agent-user-token' ? agentUserToken! : randomToken(PLACEHOLDER_BYTES);
      if (env.token && r.token_ref) tokens[env.token] = env.credential === 'model-key' ? modelKey! : access!;
    }
    // Connectors the user may use now (docs/connectors.md): one route each, one placeholder for all.
    if (this.#o.db && this.#o.encryptor) {
      const conns = await sessionConnectors(this.#o.db, this.#o.encryptor, req.userId);
      if (conns.length) {
        const ph = randomToken(PLACEHOLDER_BYTES);
        placeholders[CONNECTORS_PLACEHOLDER_ENV] = ph;
        // Held by the gateway on the host, which checks it again: a placeholder, not a credential.
        tokens[CONNECTORS_PLACEHOLDER_ENV] = ph;
        routes.push(...conns.map((c) => connectorRoute(c.id, c.url)));
      }
    }
    Object.assign(agentEnv, agentSettings(config, policy, model));
    const from = access ? this.#o.accountEmail?.(req.userId) : undefined;
    if (from && MAIL_FROM_RE.test(from)) agentEnv.MAIL_FROM = from;
    const egressAllow = [...new Set(routes.map((r) => egressTarget(r.upstream)))];
    // The send policy goes with the mail route (docs/proxy.md#send-policy).
    const mailPolicy = routes.some((r) => r.name === 'mail')
      ? this.#o.db
        ? await mailPolicyFor(this.#o.db, config.mail, req.userId)
        : serverMailPolicy(config)
      : undefined;
    log.info(
      { userId: req.userId, sessionId: req.sessionId, routes: routes.map((r) => r.name), model: model.revision },
      'session overlay prepared',
    );
    return {
      routes,
      tokens,
      placeholders,
      agentUserToken,
      agentEnv,
      egressAllow,
      ...(mailPolicy ? { mailPolicy } : {}),
      ...(model.revision ? { modelRevision: model.revision } : {}),
    };
  }

  /** The session's model: the chat's (chat_models) when the store is there, else AIRLOCK_MODEL_*. */
  async #model(sessionId: string): Promise<Omit<ResolvedModel, 'revision' | 'id' | 'label'> & { revision?: string }> {
    const { config, db, encryptor } = this.#o;
    if (db && encryptor) return sessionModel(db, encryptor, config.model, sessionId);
    return { ...config.model, images: config.model.images ?? false, apiKey: config.model.apiKey?.reveal() };
  }

  /**
   * The real tokens (and send policy) of a running session, by the env names its claim recorded:
   * for the egress gateway of a sandbox adopted after a daemon restart.
   */
  async credentials(req: {
    userId: number;
    sessionId: string;
    tokenEnvs: readonly string[];
    modelRevision?: string;
  }): Promise<{ tokens: Record<string, string>; mailPolicy?: MailPolicy }> {
    const { config } = this.#o;
    const tokens: Record<string, string> = {};
    const account = req.tokenEnvs.filter((e) => ACCOUNT_TOKEN_ENVS.includes(e));
    const access = account.length ? (await this.#o.tokens.getAccessToken(req.userId))?.accessToken : undefined;
    if (access) for (const e of account) tokens[e] = access;
    // The key of the model the sandbox was prepared for, and only while that entry is unchanged: a
    // key never goes to an upstream it was not configured with (a changed entry replaces the
    // sandbox at its next turn). A claim from before chat models: AIRLOCK_MODEL_API_KEY.
    const { db, encryptor } = this.#o;
    const modelKey =
      req.modelRevision && db && encryptor
        ? (await modelAtRevision(db, encryptor, req.modelRevision))?.apiKey
        : req.modelRevision
          ? undefined
          : config.model.apiKey?.reveal();
    if (modelKey && req.tokenEnvs.includes(ROUTE_ENV.model.token!)) tokens[ROUTE_ENV.model.token!] = modelKey;
    if (!req.tokenEnvs.includes(ROUTE_ENV.mail.token!)) return { tokens };
    const mailPolicy = this.#o.db ? await mailPolicyFor(this.#o.db, config.mail, req.userId) : serverMailPolicy(config);
    return { tokens, mailPolicy };
  }
}
