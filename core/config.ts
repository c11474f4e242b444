import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { configError } from './errors.js';
import { Secret } from './secret.js';
import { deepFreeze, parseSetting, parseTrustProxy, type Setting } from './config-parse.js';

export { parseTrustProxy } from './config-parse.js';

/**
 * One validated loader for every setting. Sources, later wins: defaults, the
 * optional JSON config file named by AIRLOCK_CONFIG (keys are the env names),
 * then the environment. Every problem is collected and reported at once.
 */

/** Every setting the daemon reads. README's configuration table is generated from this list. */
export const SETTINGS: readonly Setting[] = [
  { env: 'AIRLOCK_DATA_DIR', kind: 'path', default: './.airlock', doc: 'Data folder: SQLite database, per-session folders, workspaces, generated keys.' },
  { env: 'AIRLOCK_DATABASE_URL', kind: 'secret', doc: 'PostgreSQL URL (postgres://user:password@host:5432/airlock) shared by every node of a fleet. Unset: embedded SQLite in the data folder.' },
  { env: 'AIRLOCK_NODE_ID', kind: 'string', doc: "This node's id in the fleet (letters, digits, dot, dash, underscore). Defaults to the host name." },
  { env: 'AIRLOCK_NODE_URL', kind: 'url', doc: "Where the other nodes reach this node's web app (internal network). Defaults to http://HOST:PORT." },
  { env: 'AIRLOCK_NODE_SECRET', kind: 'secret', doc: 'Shared by every node of a fleet: authenticates requests forwarded between nodes (at least 32 characters). Required with AIRLOCK_DATABASE_URL for serve.' },
  { env: 'AIRLOCK_NODE_CA_FILE', kind: 'path', doc: "PEM file of the CA (or CAs) that signed the nodes' https certificates: requests between nodes trust only it. Unset: the system's CAs." },
  { env: 'AIRLOCK_FLEET_ALLOW_HTTP', kind: 'bool', default: 'false', doc: 'Allow plain http between the nodes of a fleet (AIRLOCK_NODE_URL http://…). Off: a fleet needs https node URLs; only for a private network you trust, or tests.' },
  { env: 'AIRLOCK_TLS_CERT_FILE', kind: 'path', doc: 'PEM certificate chain: the web app serves https on AIRLOCK_PORT (with AIRLOCK_TLS_KEY_FILE), e.g. for AIRLOCK_NODE_URL=https://… between nodes.' },
  { env: 'AIRLOCK_TLS_KEY_FILE', kind: 'path', doc: 'PEM private key of AIRLOCK_TLS_CERT_FILE.' },
  { env: 'AIRLOCK_NODE_HEARTBEAT_S', kind: 'int', default: '5', min: 1, max: 3600, doc: 'How often a node writes its heartbeat.' },
  { env: 'AIRLOCK_NODE_LOST_S', kind: 'int', default: '30', min: 2, max: 86400, doc: 'A node whose heartbeat is older than this is lost: its sessions move to live nodes on their next prompt.' },
  { env: 'AIRLOCK_HOST', kind: 'string', default: '127.0.0.1', doc: 'Listen address of the web app.' },
  { env: 'AIRLOCK_PORT', kind: 'int', default: '8080', min: 0, max: 65535, doc: 'Listen port of the web app (0 picks a free port).' },
  { env: 'AIRLOCK_PUBLIC_ORIGIN', kind: 'url', doc: 'Browser-facing origin, e.g. http://127.0.0.1:8080. Defaults to http://HOST:PORT. https turns on Secure cookies.' },
  { env: 'AIRLOCK_LOG_LEVEL', kind: 'enum', default: 'info', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], doc: 'pino log level.' },
  { env: 'AIRLOCK_BODY_LIMIT_KB', kind: 'int', default: '256', min: 1, max: 10240, doc: 'Largest accepted JSON request body.' },
  { env: 'AIRLOCK_LOGIN_MAX_FAILURES', kind: 'int', default: '5', min: 1, max: 1000, doc: 'Failed logins of a username (then refused from addresses that failed recently) and, times 4, of a client address, before 429.' },
  { env: 'AIRLOCK_LOGIN_WINDOW_S', kind: 'int', default: '900', min: 1, max: 86400, doc: 'Window for counting failed logins.' },
  { env: 'AIRLOCK_ENCRYPTION_KEY', kind: 'secret', doc: '32-byte key (64 hex chars or base64) for data encrypted at rest. Generated into the data folder when unset.' },
  { env: 'AGENT_USER_TOKEN_SECRET', kind: 'secret', doc: 'Required by serve. HMAC key for the short-lived AGENT_USER_TOKEN handed to sandboxes.' },
  { env: 'MCP_INTERNAL_SECRET', kind: 'secret', doc: 'Required by serve. Bearer secret for /api/internal/*.' },
  { env: 'AIRLOCK_DOCKER_SOCKET', kind: 'path', default: '/var/run/docker.sock', doc: 'Docker engine socket.' },
  { env: 'AIRLOCK_IMAGE', kind: 'string', default: 'airlock/sandbox:latest', doc: 'Sandbox image.' },
  { env: 'AIRLOCK_POOL_SIZE', kind: 'int', default: '1', min: 0, max: 64, doc: 'Pre-started containers kept ready for new sessions (0 disables the pool).' },
  { env: 'AIRLOCK_MAX_SESSIONS', kind: 'int', default: '32', min: 1, max: 10000, doc: 'Live sandboxes allowed on this host; past it new sessions get 503.' },
  {
    env: 'AIRLOCK_MAX_SANDBOXES_PER_USER',
    kind: 'int',
    min: 1,
    max: 10000,
    doc: "Live sandboxes one user may hold on this host; at the cap the user's oldest idle one ends to make room, else 429. Default: a quarter of AIRLOCK_MAX_SESSIONS (at least 1).",
  },
  { env: 'AIRLOCK_MAX_STARTING', kind: 'int', default: '2', min: 1, max: 256, doc: 'Sandboxes started at the same time (cold starts and pool claims); further session starts wait their turn.' },
  { env: 'AIRLOCK_SESSION_IDLE_S', kind: 'int', default: '900', min: 1, max: 604800, doc: 'Idle time after which a sandbox is reaped.' },
  { env: 'AIRLOCK_SESSION_STALE_S', kind: 'int', default: '3600', min: 1, max: 604800, doc: 'Age after which a sandbox counts as stale (about the access-token lifetime).' },
  { env: 'AIRLOCK_SANDBOX_MEMORY_MB', kind: 'int', default: '512', min: 64, max: 65536, doc: 'Memory limit per sandbox.' },
  { env: 'AIRLOCK_SANDBOX_CPUS', kind: 'string', default: '1', doc: 'CPU limit per sandbox (cores, may be fractional).' },
  { env: 'AIRLOCK_SANDBOX_PIDS', kind: 'int', default: '128', min: 16, max: 65536, doc: 'Process limit per sandbox.' },
  { env: 'AIRLOCK_SANDBOX_RUNTIME', kind: 'enum', default: 'runc', values: ['runc', 'runsc'], doc: 'OCI runtime of the sandboxes: runc, or runsc (gVisor), which the engine must have registered with --network=none --host-uds=all.' },
  { env: 'AIRLOCK_WORKSPACE_QUOTA_MB', kind: 'int', default: '1024', min: 0, max: 1048576, doc: "Disk quota of each user's workspace (an ext4 image loop-mounted by the root daemon; writes past it fail with ENOSPC). 0 turns quotas off." },
  { env: 'AIRLOCK_MODEL_PROVIDER', kind: 'enum', default: 'demo', values: ['openai', 'anthropic', 'demo'], doc: 'Model provider: openai (any Chat Completions server), anthropic, or the offline demo model.' },
  { env: 'AIRLOCK_MODEL', kind: 'string', default: 'demo', doc: 'Model name sent to the provider.' },
  { env: 'AIRLOCK_MODEL_BASE_URL', kind: 'url', doc: 'Model API base URL (e.g. https://api.openai.com/v1).' },
  { env: 'AIRLOCK_MODEL_API_KEY', kind: 'secret', doc: 'Model API key; injected by the sandbox proxy, never given to the agent.' },
  { env: 'AIRLOCK_MAX_STEPS', kind: 'int', default: '12', min: 1, max: 200, doc: 'Model calls per turn before the turn stops with max_steps.' },
  {
    env: 'AIRLOCK_MODEL_CONTEXT_TOKENS',
    kind: 'int',
    default: '100000',
    min: 1000,
    max: 10000000,
    doc: 'Context budget of the model in tokens (counted as docs/chat.md says): past it the oldest whole turns of a chat are left out of the request, with a marker the model sees.',
  },
  { env: 'AIRLOCK_MODEL_CONNECT_TIMEOUT_S', kind: 'int', default: '10', min: 1, max: 300, doc: 'Longest wait for a connection to the model (then retried as a refused one).' },
  { env: 'AIRLOCK_MODEL_FIRST_BYTE_TIMEOUT_S', kind: 'int', default: '60', min: 1, max: 3600, doc: 'Longest wait from sending a model request to the first event of its answer (not retried).' },
  { env: 'AIRLOCK_MODEL_TIMEOUT_S', kind: 'int', default: '30', min: 1, max: 3600, doc: 'Longest wait between two events of a streaming answer (stall timeout; not retried).' },
  { env: 'AIRLOCK_MODEL_RETRIES', kind: 'int', default: '3', min: 0, max: 10, doc: 'Retries of a model call that failed before any of its text was shown (refused or reset connection, 408/409/429/5xx, overloaded).' },
  { env: 'AIRLOCK_MODEL_RETRY_AFTER_MAX_S', kind: 'int', default: '30', min: 0, max: 600, doc: 'Longest Retry-After the agent waits out; a model asking for more ends the turn at once.' },
  { env: 'AIRLOCK_TOOL_TIMEOUT_S', kind: 'int', default: '120', min: 10, max: 3600, doc: 'Longest wait for one tool call; then the tool fails with a timeout and the model carries on.' },
  { env: 'AIRLOCK_TURN_TIMEOUT_S', kind: 'int', default: '600', min: 10, max: 86400, doc: 'Longest a turn may run in all (model calls, tools, retries); then it ends with ERR_TURN_TIMEOUT.' },
  { env: 'AIRLOCK_GOOGLE_CLIENT_ID', kind: 'string', doc: "OAuth client id for connecting a user's workspace account (Gmail send, Sheets, Drive)." },
  { env: 'AIRLOCK_GOOGLE_CLIENT_SECRET', kind: 'secret', doc: 'OAuth client secret for connected accounts.' },
  { env: 'AIRLOCK_GOOGLE_AUTH_URL', kind: 'url', default: 'https://accounts.google.com/o/oauth2/v2/auth', doc: 'OAuth authorization endpoint for connected accounts.' },
  { env: 'AIRLOCK_GOOGLE_TOKEN_URL', kind: 'url', default: 'https://oauth2.googleapis.com/token', doc: 'OAuth token endpoint (connected accounts and service-account assertions).' },
  { env: 'AIRLOCK_GOOGLE_REVOKE_URL', kind: 'url', default: 'https://oauth2.googleapis.com/revoke', doc: 'OAuth revocation endpoint: disconnecting an account revokes its grant here.' },
  { env: 'AIRLOCK_GOOGLE_MAIL_BASE_URL', kind: 'url', default: 'https://gmail.googleapis.com', doc: 'Gmail API base URL.' },
  { env: 'AIRLOCK_GOOGLE_SHEETS_BASE_URL', kind: 'url', default: 'https://sheets.googleapis.com', doc: 'Sheets API base URL.' },
  { env: 'AIRLOCK_GOOGLE_DRIVE_BASE_URL', kind: 'url', default: 'https://www.googleapis.com', doc: 'Drive API base URL.' },
  { env: 'AIRLOCK_GOOGLE_DIRECTORY_BASE_URL', kind: 'url', default: 'https://admin.googleapis.com', doc: 'Admin SDK Directory API base URL.' },
  {
    env: 'AIRLOCK_TRUST_PROXY',
    kind: 'string',
    default: 'none',
    doc: 'Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto the web app believes: none (default: the headers are ignored), or a comma list of IP addresses, CIDR ranges and the names loopback, linklocal, uniquelocal.',
  },
  {
    env: 'AIRLOCK_MAIL_OTHER',
    kind: 'enum',
    default: 'ask',
    values: ['allow', 'ask', 'block'],
    doc: 'Send policy default for a recipient in neither domain list: ask (the user approves in the chat; the default), allow or block. The first value of the server-wide send policy kept in the database; agent policies may make it stricter.',
  },
  { env: 'AIRLOCK_MAIL_ALLOW_DOMAINS', kind: 'string', default: '', doc: "Recipient domains always allowed (comma list; a domain covers its subdomains), e.g. your organisation's own. Agent policies add to it." },
  { env: 'AIRLOCK_MAIL_BLOCK_DOMAINS', kind: 'string', default: '', doc: 'Recipient domains always refused (comma list; wins over allowed domains). Agent policies add to it.' },
  { env: 'AIRLOCK_MAIL_MAX_RECIPIENTS', kind: 'int', default: '50', min: 1, max: 500, doc: 'Most recipients (To + Cc + Bcc) of one sent message.' },
  { env: 'AIRLOCK_MAIL_MAX_PER_HOUR', kind: 'int', default: '60', min: 1, max: 100000, doc: "Most messages one user's agents may send per hour (all sessions, all nodes)." },
  {
    env: 'AIRLOCK_MAIL_APPROVAL_TIMEOUT_S',
    kind: 'int',
    default: '90',
    min: 5,
    max: 105,
    doc: "How long a send held for the user's approval waits; then it is refused (at most 105, and at most AIRLOCK_TOOL_TIMEOUT_S − 15: the send waits inside its tool call).",
  },
  { env: 'OTEL_EXPORTER_OTLP_ENDPOINT', kind: 'url', doc: 'OpenTelemetry collector (OTLP/HTTP, JSON), e.g. http://127.0.0.1:4318: traces of each turn and the metrics are exported there. Unset: no telemetry (docs/audit.md).' },
  { env: 'OTEL_SERVICE_NAME', kind: 'string', default: 'airlock', doc: 'The service name on exported traces and metrics.' },
  { env: 'OTEL_METRIC_EXPORT_INTERVAL', kind: 'int', default: '60000', min: 100, max: 3600000, doc: 'Milliseconds between metric exports over OTLP.' },
] as const;

export interface Config {
  dataDir: string;
  /** PostgreSQL URL (a secret: it may hold a password); unset = SQLite in dataDir. */
  databaseUrl?: Secret;
  node: {
    id: string;
    url: string;
    secret?: Secret;
    heartbeatS: number;
    lostS: number;
    /** PEM file of the CA requests between nodes trust (unset: the system's). */
    caFile?: string;
    /** Plain http between nodes allowed (AIRLOCK_FLEET_ALLOW_HTTP). */
    allowHttp: boolean;
  };
  /** The web app serves https with these (both or neither). */
  tls?: { certFile: string; keyFile: string };
  host: string;
  port: number;
  publicOrigin: string;
  secureCookies: boolean;
  logLevel: string;
  bodyLimitKb: number;
  login: { maxFailures: number; windowS: number };
  encryptionKey?: Secret;
  agentUserTokenSecret?: Secret;
  mcpInternalSecret?: Secret;
  docker: { socketPath: string; image: string };
  sandbox: {
    poolSize: number;
    maxSessions: number;
    /** Live sandboxes one user may hold on this host (AIRLOCK_MAX_SANDBOXES_PER_USER). */
    maxPerUser: number;
    maxStarting: number;
    idleS: number;
    staleS: number;
    memoryMb: number;
    cpus: number;
    pids: number;
    /** Per-user workspace quota in MiB (0: none). */
    workspaceQuotaMb: number;
    /** OCI runtime of the sandbox containers. */
    runtime: 'runc' | 'runsc';
  };
  model: {
    provider: 'openai' | 'anthropic' | 'demo';
    model: string;
    baseUrl?: string;
    apiKey?: Secret;
    maxSteps: number;
    /** Between two events of a streaming answer (stall). */
    timeoutS: number;
    contextTokens: number;
    connectTimeoutS: number;
    firstByteTimeoutS: number;
    retries: number;
    retryAfterMaxS: number;
    toolTimeoutS: number;
    turnTimeoutS: number;
  };
  google: {
    clientId?: string;
    clientSecret?: Secret;
    authUrl: string;
    tokenUrl: string;
    revokeUrl: string;
    mailBaseUrl: string;
    sheetsBaseUrl: string;
    driveBaseUrl: string;
    directoryBaseUrl: string;
  };
  /** Trusted reverse proxies (express `trust proxy` list); empty: none, X-Forwarded-* ignored. */
  trustProxy: string[];
  /** OpenTelemetry export (docs/audit.md#opentelemetry); endpoint unset: off. */
  telemetry: { endpoint?: string; serviceName: string; metricIntervalMs: number };
  /** The server's send policy (agent policies make it stricter per user): docs/proxy.md#send-policy. */
  mail: { other: 'allow' | 'ask' | 'block'; allowDomains: string[]; blockDomains: string[]; maxRecipients: number; maxPerHour: number; approvalTimeoutS: number };
}

export interface LoadConfigOptions {
  /** Settings that must be present (e.g. serve requires the two secrets). */
  require?: string[];
  /** Base for relative paths; defaults to process.cwd(). */
  cwd?: string;
}

/** Settings `airlock serve` cannot start without. */
export const SERVE_REQUIRED = ['AGENT_USER_TOKEN_SECRET', 'MCP_INTERNAL_SECRET'];

type Raw = Record<string, string | undefined>;

/** A domain name as a send policy lists it (lower case, no trailing dot). */
export const MAIL_DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Validate and freeze the configuration. Throws ERR_CONFIG_INVALID (configError) listing every problem.
 * `env` is the only place the process environment enters the program.
 */
export function loadConfig(env: Raw, opts: LoadConfigOptions = {}): Readonly<Config> {
  const problems: string[] = [];
  const cwd = opts.cwd ?? process.cwd();
  const merged = mergedSettings(env, cwd, problems);
  const values = parseSettings(merged, opts, cwd, problems);
  checkSettings(values, problems);
  const derived = derivedSettings(values, problems);
  if (problems.length > 0) throw configError(problems);
  return deepFreeze(buildConfig(values, derived));
}

type Values = Record<string, string | number | Secret | undefined>;

/** AIRLOCK_CONFIG's JSON file, then the environment over it (a problem per bad entry). */
function mergedSettings(env: Raw, cwd: string, problems: string[]): Raw {
  const merged: Raw = {};
  const known = new Set(SETTINGS.map((s) => s.env));

  if (env.AIRLOCK_CONFIG) {
    try {
      const file = JSON.parse(readFileSync(resolve(cwd, env.AIRLOCK_CONFIG), 'utf8')) as unknown;
      if (!file || typeof file !== 'object' || Array.isArray(file)) throw new Error('not a JSON object');
      for (const [k, v] of Object.entries(file as Record<string, unknown>)) {
        if (!known.has(k)) problems.push(`AIRLOCK_CONFIG: unknown setting ${k}`);
        else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') merged[k] = String(v);
        else problems.push(`AIRLOCK_CONFIG: ${k} must be a string or number`);
      }
    } catch (err) {
      problems.push(`AIRLOCK_CONFIG: cannot read ${env.AIRLOCK_CONFIG}: ${(err as Error).message}`);
    }
  }
  for (const s of SETTINGS) {
    if (env[s.env] !== undefined && env[s.env] !== '') merged[s.env] = env[s.env];
  }

  return merged;
}

/** Each setting parsed (or its default); a problem per bad or missing required value. */
function parseSettings(merged: Raw, opts: LoadConfigOptions, cwd: string, problems: string[]): Values {
  const values: Values = {};
  for (const s of SETTINGS) {
    const raw = merged[s.env] ?? s.default;
    if (raw === undefined) {
      if (opts.require?.includes(s.env)) problems.push(`${s.env}: required`);
      continue;
    }
    const v = parseSetting(s, raw, cwd);
    if (typeof v === 'object' && v !== null && 'problem' in v) problems.push(`${s.env}: ${v.problem}`);
    else values[s.env] = v;
  }
  return values;
}

/** The checks across settings (lengths, formats, one setting against another). */
function checkSettings(values: Values, problems: string[]): void {
  const num = (k: string) => values[k] as number;
  for (const name of ['AGENT_USER_TOKEN_SECRET', 'MCP_INTERNAL_SECRET']) {
    const v = values[name];
    if (v instanceof Secret && v.reveal().length < 16) problems.push(`${name}: must be at least 16 characters`);
  }
  const key = values.AIRLOCK_ENCRYPTION_KEY;
  if (key instanceof Secret) {
    const k = key.reveal();
    const ok = /^[0-9a-fA-F]{64}$/.test(k) || (/^[A-Za-z0-9+/_-]{43}=?$/.test(k) && Buffer.from(k, 'base64').length === 32);
    if (!ok) problems.push('AIRLOCK_ENCRYPTION_KEY: must be 32 bytes as 64 hex characters or base64 (openssl rand -hex 32)');
  }
  const cpus = Number(values.AIRLOCK_SANDBOX_CPUS);
  if (!(cpus > 0 && cpus <= 256)) problems.push('AIRLOCK_SANDBOX_CPUS: must be a number between 0 and 256');
  // A send held for approval waits inside send_email's tool call: the call must outlast the wait.
  if (Number(values.AIRLOCK_MAIL_APPROVAL_TIMEOUT_S) + 15 > Number(values.AIRLOCK_TOOL_TIMEOUT_S))
    problems.push('AIRLOCK_TOOL_TIMEOUT_S: must be at least AIRLOCK_MAIL_APPROVAL_TIMEOUT_S + 15 (a send held for approval waits inside its tool call)');
  const provider = values.AIRLOCK_MODEL_PROVIDER as Config['model']['provider'];
  if ((provider === 'openai' || provider === 'anthropic') && !values.AIRLOCK_MODEL_BASE_URL) {
    problems.push(`AIRLOCK_MODEL_BASE_URL: required when AIRLOCK_MODEL_PROVIDER is ${provider}`);
  }
  const nodeId = (values.AIRLOCK_NODE_ID as string | undefined) ?? hostname().slice(0, 63);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(nodeId)) problems.push('AIRLOCK_NODE_ID: 1-63 letters, digits, dots, dashes or underscores');
  const nodeSecret = values.AIRLOCK_NODE_SECRET;
  if (nodeSecret instanceof Secret && nodeSecret.reveal().length < 32) problems.push('AIRLOCK_NODE_SECRET: must be at least 32 characters');
  const dbUrl = values.AIRLOCK_DATABASE_URL;
  if (dbUrl instanceof Secret && !/^postgres(ql)?:\/\/[^\s]+$/.test(dbUrl.reveal())) problems.push('AIRLOCK_DATABASE_URL: must be a postgres:// or postgresql:// URL');
  if ((num('AIRLOCK_NODE_LOST_S') ?? 30) <= (num('AIRLOCK_NODE_HEARTBEAT_S') ?? 5)) problems.push('AIRLOCK_NODE_LOST_S: must be longer than AIRLOCK_NODE_HEARTBEAT_S');
  if (!values.AIRLOCK_TLS_CERT_FILE !== !values.AIRLOCK_TLS_KEY_FILE) problems.push('AIRLOCK_TLS_CERT_FILE and AIRLOCK_TLS_KEY_FILE: set both or neither');
}

/** The settings computed from others: node id and URL, proxy trust, the mail domain lists. */
function derivedSettings(values: Values, problems: string[]) {
  const host = values.AIRLOCK_HOST as string;
  const port = values.AIRLOCK_PORT as number;
  const nodeId = (values.AIRLOCK_NODE_ID as string | undefined) ?? hostname().slice(0, 63);
  const nodeUrl = (
    (values.AIRLOCK_NODE_URL as string | undefined) ?? `${values.AIRLOCK_TLS_CERT_FILE ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '');
  if (values.AIRLOCK_DATABASE_URL instanceof Secret && values.AIRLOCK_NODE_SECRET instanceof Secret && values.AIRLOCK_FLEET_ALLOW_HTTP !== 'true' && !nodeUrl.startsWith('https:')) {
    problems.push("AIRLOCK_NODE_URL: a fleet's nodes talk over https (an https:// URL, AIRLOCK_NODE_CA_FILE for your CA); set AIRLOCK_FLEET_ALLOW_HTTP=true to allow plain http between nodes");
  }
  const trustProxy = parseTrustProxy(String(values.AIRLOCK_TRUST_PROXY ?? 'none'));
  if (!Array.isArray(trustProxy)) problems.push(`AIRLOCK_TRUST_PROXY: ${trustProxy.problem}`);
  const domains = (k: string): string[] => {
    const list = String(values[k] ?? '')
      .split(',')
      .map((d) => d.trim().toLowerCase().replace(/^@/, '').replace(/\.$/, ''))
      .filter(Boolean);
    for (const d of list) if (!MAIL_DOMAIN.test(d)) problems.push(`${k}: "${d.slice(0, 80)}" is not a domain name`);
    return [...new Set(list)];
  };
  const allowDomains = domains('AIRLOCK_MAIL_ALLOW_DOMAINS');
  const blockDomains = domains('AIRLOCK_MAIL_BLOCK_DOMAINS');
  return { host, port, nodeId, nodeUrl, trustProxy, allowDomains, blockDomains };
}

/** The frozen Config's shape from parsed and derived settings (all problems already reported). */
function buildConfig(values: Values, d: ReturnType<typeof derivedSettings>): Config {
  const str = (k: string) => values[k] as string;
  const num = (k: string) => values[k] as number;
  const sec = (k: string) => values[k] as Secret | undefined;
  const { host, port, nodeId, nodeUrl, trustProxy, allowDomains, blockDomains } = d;
  const provider = values.AIRLOCK_MODEL_PROVIDER as Config['model']['provider'];
  const cpus = Number(values.AIRLOCK_SANDBOX_CPUS);
  const publicOrigin = ((values.AIRLOCK_PUBLIC_ORIGIN as string | undefined) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const config: Config = {
    dataDir: str('AIRLOCK_DATA_DIR'),
    databaseUrl: sec('AIRLOCK_DATABASE_URL'),
    node: {
      id: nodeId,
      url: nodeUrl,
      secret: sec('AIRLOCK_NODE_SECRET'),
      heartbeatS: num('AIRLOCK_NODE_HEARTBEAT_S'),
      lostS: num('AIRLOCK_NODE_LOST_S'),
      caFile: values.AIRLOCK_NODE_CA_FILE as string | undefined,
      allowHttp: values.AIRLOCK_FLEET_ALLOW_HTTP === 'true',
    },
    ...(values.AIRLOCK_TLS_CERT_FILE ? { tls: { certFile: str('AIRLOCK_TLS_CERT_FILE'), keyFile: str('AIRLOCK_TLS_KEY_FILE') } } : {}),
    host,
    port,
    publicOrigin,
    secureCookies: publicOrigin.startsWith('https:'),
    logLevel: str('AIRLOCK_LOG_LEVEL'),
    bodyLimitKb: num('AIRLOCK_BODY_LIMIT_KB'),
    login: { maxFailures: num('AIRLOCK_LOGIN_MAX_FAILURES'), windowS: num('AIRLOCK_LOGIN_WINDOW_S') },
    encryptionKey: sec('AIRLOCK_ENCRYPTION_KEY'),
    agentUserTokenSecret: sec('AGENT_USER_TOKEN_SECRET'),
    mcpInternalSecret: sec('MCP_INTERNAL_SECRET'),
    docker: { socketPath: str('AIRLOCK_DOCKER_SOCKET'), image: str('AIRLOCK_IMAGE') },
    sandbox: {
      poolSize: num('AIRLOCK_POOL_SIZE'),
      maxSessions: num('AIRLOCK_MAX_SESSIONS'),
      maxPerUser: num('AIRLOCK_MAX_SANDBOXES_PER_USER') ?? Math.max(1, Math.ceil(num('AIRLOCK_MAX_SESSIONS') / 4)),
      maxStarting: num('AIRLOCK_MAX_STARTING'),
      idleS: num('AIRLOCK_SESSION_IDLE_S'),
      staleS: num('AIRLOCK_SESSION_STALE_S'),
      memoryMb: num('AIRLOCK_SANDBOX_MEMORY_MB'),
      cpus,
      pids: num('AIRLOCK_SANDBOX_PIDS'),
      workspaceQuotaMb: num('AIRLOCK_WORKSPACE_QUOTA_MB'),
      runtime: str('AIRLOCK_SANDBOX_RUNTIME') as 'runc' | 'runsc',
    },
    model: {
      provider,
      model: str('AIRLOCK_MODEL'),
      baseUrl: values.AIRLOCK_MODEL_BASE_URL as string | undefined,
      apiKey: sec('AIRLOCK_MODEL_API_KEY'),
      maxSteps: num('AIRLOCK_MAX_STEPS'),
      timeoutS: num('AIRLOCK_MODEL_TIMEOUT_S'),
      contextTokens: num('AIRLOCK_MODEL_CONTEXT_TOKENS'),
      connectTimeoutS: num('AIRLOCK_MODEL_CONNECT_TIMEOUT_S'),
      firstByteTimeoutS: num('AIRLOCK_MODEL_FIRST_BYTE_TIMEOUT_S'),
      retries: num('AIRLOCK_MODEL_RETRIES'),
      retryAfterMaxS: num('AIRLOCK_MODEL_RETRY_AFTER_MAX_S'),
      toolTimeoutS: num('AIRLOCK_TOOL_TIMEOUT_S'),
      turnTimeoutS: num('AIRLOCK_TURN_TIMEOUT_S'),
    },
    google: googleConfig(values),
    trustProxy: trustProxy as string[],
    telemetry: { endpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT as string | undefined, serviceName: str('OTEL_SERVICE_NAME'), metricIntervalMs: num('OTEL_METRIC_EXPORT_INTERVAL') },
    mail: {
      other: str('AIRLOCK_MAIL_OTHER') as Config['mail']['other'],
      allowDomains,
      blockDomains,
      maxRecipients: num('AIRLOCK_MAIL_MAX_RECIPIENTS'),
      maxPerHour: num('AIRLOCK_MAIL_MAX_PER_HOUR'),
      approvalTimeoutS: num('AIRLOCK_MAIL_APPROVAL_TIMEOUT_S'),
    },
  };
  return config;
}

/** The Google endpoints and OAuth client (the emulator's in tests and the demo). */
function googleConfig(values: Values): Config['google'] {
  const str = (k: string) => values[k] as string;
  const sec = (k: string) => values[k] as Secret | undefined;
  return {
    clientId: values.AIRLOCK_GOOGLE_CLIENT_ID as string | undefined,
    clientSecret: sec('AIRLOCK_GOOGLE_CLIENT_SECRET'),
    authUrl: str('AIRLOCK_GOOGLE_AUTH_URL'),
    tokenUrl: str('AIRLOCK_GOOGLE_TOKEN_URL'),
    revokeUrl: str('AIRLOCK_GOOGLE_REVOKE_URL'),
    mailBaseUrl: str('AIRLOCK_GOOGLE_MAIL_BASE_URL'),
    sheetsBaseUrl: str('AIRLOCK_GOOGLE_SHEETS_BASE_URL'),
    driveBaseUrl: str('AIRLOCK_GOOGLE_DRIVE_BASE_URL'),
    directoryBaseUrl: str('AIRLOCK_GOOGLE_DIRECTORY_BASE_URL'),
  };
}
