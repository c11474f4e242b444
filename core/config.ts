import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { configError } from './errors.js';
import { Secret } from './secret.js';
import { deepFreeze, parseSetting, parseTrustProxy } from './config-parse.js';

export { parseTrustProxy } from './config-parse.js';

/**
 * One validated loader for every setting. Sources, later wins: defaults, the
 * optional JSON config file named by AIRLOCK_CONFIG (keys are the env names),
 * then the environment. Every problem is collected and reported at once.
 */

import { SETTINGS } from './config-settings.js';

export { SETTINGS };

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
  /** AIRLOCK_CONTRACT_LOG: where answers that disagree with their route definition are written (web/contract.ts). */
  contractLog?: string;
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
  /** Connection bounds of the egress sockets (daemon/host/egress-conns.ts). */
  egress: { maxConnectionsPerSession: number; maxConnections: number; headersTimeoutS: number };
  model: {
    provider: 'openai' | 'anthropic' | 'demo';
    model: string;
    baseUrl?: string;
    apiKey?: Secret;
    maxSteps: number;
    /** Between two events of a streaming answer (stall). */
    timeoutS: number;
    contextTokens: number;
    /** Whether the model takes image input (AIRLOCK_MODEL_IMAGES). */
    images?: boolean;
    connectTimeoutS: number;
    firstByteTimeoutS: number;
    retries: number;
    retryAfterMaxS: number;
    toolTimeoutS: number;
    turnTimeoutS: number;
  };
  /** run_python's bounds per call (docs/tools.md#run_python). */
  python: { wallS: number; cpuS: number; memoryMb: number; outputKb: number; procs: number; fileMb: number };
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
  mail: {
    other: 'allow' | 'ask' | 'block';
    allowDomains: string[];
    blockDomains: string[];
    maxRecipients: number;
    maxPerHour: number;
    approvalTimeoutS: number;
  };
  /** Connectors (docs/connectors.md); absent in a hand-made config: the defaults (https only). */
  connectors?: { allowHttpLoopback: boolean };
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
export const MAIL_DOMAIN =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

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
    const ok =
      /^[0-9a-fA-F]{64}$/.test(k) || (/^[A-Za-z0-9+/_-]{43}=?$/.test(k) && Buffer.from(k, 'base64').length === 32);
    if (!ok)
      problems.push('AIRLOCK_ENCRYPTION_KEY: must be 32 bytes as 64 hex characters or base64 (openssl rand -hex 32)');
  }
  const cpus = Number(values.AIRLOCK_SANDBOX_CPUS);
  if (!(cpus > 0 && cpus <= 256)) problems.push('AIRLOCK_SANDBOX_CPUS: must be a number between 0 and 256');
  // A send held for approval waits inside send_email's tool call: the call must outlast the wait.
  if (Number(values.AIRLOCK_MAIL_APPROVAL_TIMEOUT_S) + 15 > Number(values.AIRLOCK_TOOL_TIMEOUT_S))
    problems.push(
      'AIRLOCK_TOOL_TIMEOUT_S: must be at least AIRLOCK_MAIL_APPROVAL_TIMEOUT_S + 15 (a send held for approval waits inside its tool call)',
    );
  const provider = values.AIRLOCK_MODEL_PROVIDER as Config['model']['provider'];
  if ((provider === 'openai' || provider === 'anthropic') && !values.AIRLOCK_MODEL_BASE_URL) {
    problems.push(`AIRLOCK_MODEL_BASE_URL: required when AIRLOCK_MODEL_PROVIDER is ${provider}`);
  }
  const nodeId = (values.AIRLOCK_NODE_ID as string | undefined) ?? hostname().slice(0, 63);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(nodeId))
    problems.push('AIRLOCK_NODE_ID: 1-63 letters, digits, dots, dashes or underscores');
  const nodeSecret = values.AIRLOCK_NODE_SECRET;
  if (nodeSecret instanceof Secret && nodeSecret.reveal().length < 32)
    problems.push('AIRLOCK_NODE_SECRET: must be at least 32 characters');
  const dbUrl = values.AIRLOCK_DATABASE_URL;
  if (dbUrl instanceof Secret && !/^postgres(ql)?:\/\/[^\s]+$/.test(dbUrl.reveal()))
    problems.push('AIRLOCK_DATABASE_URL: must be a postgres:// or postgresql:// URL');
  if ((num('AIRLOCK_NODE_LOST_S') ?? 30) <= (num('AIRLOCK_NODE_HEARTBEAT_S') ?? 5))
    problems.push('AIRLOCK_NODE_LOST_S: must be longer than AIRLOCK_NODE_HEARTBEAT_S');
  if (!values.AIRLOCK_TLS_CERT_FILE !== !values.AIRLOCK_TLS_KEY_FILE)
    problems.push('AIRLOCK_TLS_CERT_FILE and AIRLOCK_TLS_KEY_FILE: set both or neither');
}

/** The settings computed from others: node id and URL, proxy trust, the mail domain lists. */
function derivedSettings(values: Values, problems: string[]) {
  const host = values.AIRLOCK_HOST as string;
  const port = values.AIRLOCK_PORT as number;
  const nodeId = (values.AIRLOCK_NODE_ID as string | undefined) ?? hostname().slice(0, 63);
  const nodeUrl = (
    (values.AIRLOCK_NODE_URL as string | undefined) ??
    `${values.AIRLOCK_TLS_CERT_FILE ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '');
  if (
    values.AIRLOCK_DATABASE_URL instanceof Secret &&
    values.AIRLOCK_NODE_SECRET instanceof Secret &&
    values.AIRLOCK_FLEET_ALLOW_HTTP !== 'true' &&
    !nodeUrl.startsWith('https:')
  ) {
    problems.push(
      "AIRLOCK_NODE_URL: a fleet's nodes talk over https (an https:// URL, AIRLOCK_NODE_CA_FILE for your CA); set AIRLOCK_FLEET_ALLOW_HTTP=true to allow plain http between nodes",
    );
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
  const publicOrigin = (
    (values.AIRLOCK_PUBLIC_ORIGIN as string | undefined) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '');
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
    ...(values.AIRLOCK_TLS_CERT_FILE
      ? { tls: { certFile: str('AIRLOCK_TLS_CERT_FILE'), keyFile: str('AIRLOCK_TLS_KEY_FILE') } }
      : {}),
    host,
    port,
    publicOrigin,
    secureCookies: publicOrigin.startsWith('https:'),
    logLevel: str('AIRLOCK_LOG_LEVEL'),
    bodyLimitKb: num('AIRLOCK_BODY_LIMIT_KB'),
    ...(values.AIRLOCK_CONTRACT_LOG ? { contractLog: values.AIRLOCK_CONTRACT_LOG as string } : {}),
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
    egress: egressConfig(values),
    model: {
      provider,
      model: str('AIRLOCK_MODEL'),
      baseUrl: values.AIRLOCK_MODEL_BASE_URL as string | undefined,
      apiKey: sec('AIRLOCK_MODEL_API_KEY'),
      maxSteps: num('AIRLOCK_MAX_STEPS'),
      timeoutS: num('AIRLOCK_MODEL_TIMEOUT_S'),
      contextTokens: num('AIRLOCK_MODEL_CONTEXT_TOKENS'),
      images: values.AIRLOCK_MODEL_IMAGES === 'true',
      connectTimeoutS: num('AIRLOCK_MODEL_CONNECT_TIMEOUT_S'),
      firstByteTimeoutS: num('AIRLOCK_MODEL_FIRST_BYTE_TIMEOUT_S'),
      retries: num('AIRLOCK_MODEL_RETRIES'),
      retryAfterMaxS: num('AIRLOCK_MODEL_RETRY_AFTER_MAX_S'),
      toolTimeoutS: num('AIRLOCK_TOOL_TIMEOUT_S'),
      turnTimeoutS: num('AIRLOCK_TURN_TIMEOUT_S'),
    },
    python: pythonConfig(values),
    google: googleConfig(values),
    trustProxy: trustProxy as string[],
    telemetry: {
      endpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT as string | undefined,
      serviceName: str('OTEL_SERVICE_NAME'),
      metricIntervalMs: num('OTEL_METRIC_EXPORT_INTERVAL'),
    },
    mail: {
      other: str('AIRLOCK_MAIL_OTHER') as Config['mail']['other'],
      allowDomains,
      blockDomains,
      maxRecipients: num('AIRLOCK_MAIL_MAX_RECIPIENTS'),
      maxPerHour: num('AIRLOCK_MAIL_MAX_PER_HOUR'),
      approvalTimeoutS: num('AIRLOCK_MAIL_APPROVAL_TIMEOUT_S'),
    },
    connectors: { allowHttpLoopback: values.AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK === 'true' },
  };
  return config;
}

/** run_python's bounds (docs/tools.md#run_python). */
function pythonConfig(values: Values): Config['python'] {
  const num = (k: string) => values[`AIRLOCK_PYTHON_${k}`] as number;
  return {
    wallS: num('WALL_S'),
    cpuS: num('CPU_S'),
    memoryMb: num('MEMORY_MB'),
    outputKb: num('OUTPUT_KB'),
    procs: num('PROCS'),
    fileMb: num('FILE_MB'),
  };
}

/** The egress sockets' connection bounds (docs/proxy.md). */
function egressConfig(values: Values): Config['egress'] {
  const num = (k: string) => values[`AIRLOCK_EGRESS_${k}`] as number;
  return {
    maxConnectionsPerSession: num('MAX_CONNECTIONS_PER_SESSION'),
    maxConnections: num('MAX_CONNECTIONS'),
    headersTimeoutS: num('HEADERS_TIMEOUT_S'),
  };
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
