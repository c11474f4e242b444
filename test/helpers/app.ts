import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import {
  AppError,
  atRestEncryptor,
  createLogger,
  createMetrics,
  hashPassword,
  loadConfig,
  type Config,
  type Encryptor,
  type Logger,
} from '../../core/index.js';
import { DbSessionStore, noSandboxPorts, startWebServer, type WebServer, type WebServices } from '../../web/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { registryLookup } from '../../domain/connector-oauth/registry.js';
import { Client } from './client.js';
import { openDatabase, type Database } from '../../domain/db/index.js';
import { createUser, type User } from '../../domain/users.js';
import { testDatabaseUrl } from './db.js';

/** Secrets every test config uses; tests also scan logs and responses for them. */
export const TEST_SECRETS = {
  AGENT_USER_TOKEN_SECRET: 'test-agent-user-token-secret-0123456789',
  MCP_INTERNAL_SECRET: 'test-mcp-internal-secret-0123456789abcdef',
};

export interface LogSink {
  lines: string[];
  stream: Writable;
  text(): string;
}

export function logSink(): LogSink {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, stream, text: () => lines.join('\n') };
}

export function tempDir(t: { teardown(fn: () => void): void }, prefix = 'airlock-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The test servers' organisation mails within its own domain, example.test, as a company allows
 * its own domain (AIRLOCK_MAIL_ALLOW_DOMAINS, docs/proxy.md#send-policy); any other recipient is
 * asked about under the default (`ask`). Tests of the send policy set their own.
 */
export const TEST_ORG_MAIL: Readonly<Record<string, string>> = { AIRLOCK_MAIL_ALLOW_DOMAINS: 'example.test' };

export function testConfig(dataDir: string, env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_PORT: '0',
    AIRLOCK_LOG_LEVEL: 'debug',
    ...TEST_SECRETS,
    ...TEST_ORG_MAIL,
    // The route contract check (web/contract.ts), when the test runner asks for it.
    ...(process.env.AIRLOCK_CONTRACT_LOG ? { AIRLOCK_CONTRACT_LOG: process.env.AIRLOCK_CONTRACT_LOG } : {}),
    ...env,
  });
}

/**
 * The settings `airlock serve` needs on this run's engine: none on SQLite; on the PostgreSQL pass
 * a new database (dropped at teardown) with the node secret and encryption key serve requires there
 * (and plain http between nodes allowed).
 */
export async function serveEngineEnv(t: { teardown(fn: () => unknown): void }): Promise<Record<string, string>> {
  const url = await testDatabaseUrl(t);
  // A fleet of one on 127.0.0.1: plain http between nodes allowed (docs/deploy.md, https between nodes).
  return url
    ? {
        AIRLOCK_DATABASE_URL: url,
        AIRLOCK_NODE_SECRET: randomBytes(24).toString('hex'),
        AIRLOCK_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        AIRLOCK_FLEET_ALLOW_HTTP: 'true',
      }
    : {};
}

export interface TestApp {
  url: string;
  config: Readonly<Config>;
  database: Database;
  log: Logger;
  logs: LogSink;
  web: WebServer;
  sessions: DbSessionStore;
  client(): Client;
  close(): Promise<void>;
}

/** A test's ports built from the app's database, config and log (before the app starts). */
export type PortsOf = (app: { database: Database; config: Readonly<Config>; log: Logger }) => Partial<WebServices>;

export interface TestAppOptions {
  dataDir?: string;
  env?: Record<string, string>;
  /**
   * Ports that replace the web-only ones (webOnlyServices): a test's turn runner, sandbox control…;
   * or a function that builds them from the app's database, config and log before it starts.
   */
  services?: Partial<WebServices> | PortsOf;
  logs?: LogSink;
  /** This PostgreSQL database instead of the pass's engine (the fault test's own cluster). */
  databaseUrl?: string;
}

/**
 * The composition root of the tests' web app (and the benches'): a web-only server, which runs no
 * sandboxes (web/services.ts) and no background jobs, and whose agent tokens are checked by
 * signature and user only; `replace` swaps in a test's own ports.
 */
export function webOnlyServices(
  database: Database,
  encryptor: Encryptor,
  replace: Partial<WebServices> = {},
): WebServices {
  return {
    ...noSandboxPorts('unchecked'),
    metrics: createMetrics(),
    accounts: new AccountStore(database.sql, encryptor),
    // No sandbox is live, so no token has anywhere to go.
    tokenService: { pushToUser: async () => undefined },
    // A job stays queued: the daemon's runner is what starts jobs, and this server has none.
    directorySync: { start: () => undefined },
    approvals: {
      decide: () =>
        Promise.reject(new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session')),
    },
    // No connector gateway here: no user's grant is read.
    connectorTokens: { accessToken: async () => null },
    oauthConnectors: registryLookup(database.sql, encryptor),
    agentModels: () => [],
    ...replace,
  };
}

/** PostgreSQL pass: the database each data folder got, so an app restarted on it finds its data. */
const urlOfDir = new Map<string, string>();

/** Start the real web app on 127.0.0.1:0 over a real SQLite file; registers teardown. */
export async function startTestApp(
  t: { teardown(fn: () => unknown): void },
  opts: TestAppOptions = {},
): Promise<TestApp> {
  const dataDir = opts.dataDir ?? tempDir(t);
  // On the PostgreSQL pass of `npm test`, a new database on the test cluster (dropped at teardown).
  // The same data folder is the same install: a restarted app finds its database again.
  const url = opts.databaseUrl ?? urlOfDir.get(dataDir) ?? (await testDatabaseUrl(t));
  if (url) urlOfDir.set(dataDir, url);
  const config = testConfig(dataDir, { ...(url ? { AIRLOCK_DATABASE_URL: url } : {}), ...opts.env });
  const database = await openDatabase({ url, file: join(dataDir, 'airlock.db') });
  const logs = opts.logs ?? logSink();
  const log = createLogger({ level: 'debug', destination: logs.stream });
  const sessions = new DbSessionStore(database.sql);
  // Port 0 unless the test fixed one (SSO tests need the public origin before start).
  const web = await startWebServer(
    {
      config,
      database,
      log,
      sessions,
      encryptor: atRestEncryptor(config),
      services: webOnlyServices(
        database,
        atRestEncryptor(config),
        typeof opts.services === 'function' ? opts.services({ database, config, log }) : opts.services,
      ),
    },
    config.port,
    '127.0.0.1',
  );
  let closed = false;
  const app: TestApp = {
    url: web.url,
    config,
    database,
    log,
    logs,
    web,
    sessions,
    client: () => new Client(web.url),
    async close() {
      if (closed) return;
      closed = true;
      await web.close(100);
      await database.close();
    },
  };
  t.teardown(() => app.close());
  return app;
}

export async function addUser(
  database: Database,
  username: string,
  password: string,
  opts: { superuser?: boolean; email?: string } = {},
): Promise<User> {
  return createUser(database.sql, {
    username,
    email: opts.email ?? `${username}@example.test`,
    passwordHash: await hashPassword(password),
    isSuperuser: opts.superuser,
  });
}

/** A free TCP port on 127.0.0.1 (for tests that must know the app's origin before it starts). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Start the app on a port chosen before it listens (tests whose IdP must know the app's origin
 * up front). Another process may take the port between the pick and the listen: try again.
 */
export async function startTestAppWithOrigin(
  t: { teardown(fn: () => unknown): void },
  opts: TestAppOptions = {},
): Promise<{ app: TestApp; origin: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    try {
      const app = await startTestApp(t, {
        ...opts,
        env: { AIRLOCK_PORT: String(port), AIRLOCK_PUBLIC_ORIGIN: origin, ...(opts.env ?? {}) },
      });
      return { app, origin };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 10) throw err;
    }
  }
}
