import { assertPortFree } from '../port-check.js';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AppError,
  createLogger,
  hashPassword,
  loadConfig,
  atRestEncryptor,
  SERVE_REQUIRED,
  tokenRequest,
  WORKSPACE_SCOPES,
  type Config,
  type Logger,
} from '../../core/index.js';
import { getConnectionByProvider, saveConnection } from '../../domain/identity/index.js';
import { AccountStore, createUser, getCredentials, setCredentials, type Sql } from '../../domain/index.js';
import { start as startGoogle, type GoogleEmulator, type SeedSheet } from '../../emulator/google.js';
import { start as startGoogleOAuth, type GoogleOAuth } from '../../emulator/google-oauth.js';
import { start as startOidc, type OidcEmulator } from '../../emulator/oidc.js';
import { start as startDirectory, type DirectoryEmulator } from '../../emulator/directory.js';
import { serve, type RunningDaemon } from '../serve.js';
import { createDocker } from '../runtime/docker.js';
import { ensureSandboxImage } from '../runtime/image.js';
import { repoRoot } from '../cli/runtime.js';
import { freePort, startTokenRouter } from './demo-net.js';
import { startDemoTickets } from './demo-tickets.js';

/**
 * `airlock demo`: the whole product on one machine. Emulators for Google (Gmail send with a
 * mailbox page, Sheets, Drive), Google's OAuth server, an OIDC IdP and the Admin SDK directory
 * run on 127.0.0.1 ephemeral ports; the daemon runs through the ordinary serve() with a config
 * pointing at them, the offline demo model, and secrets generated once into the data folder.
 */

export const DEMO_DOMAIN = 'example.com';
export const DEMO_ADMIN = { username: 'admin', email: `admin@${DEMO_DOMAIN}`, name: 'Demo Admin' };
export const DEMO_USER = { username: 'demo', email: `demo@${DEMO_DOMAIN}`, name: 'Demo User' };
const SECRETS_FILE = 'demo-secrets.json';

/** The sample spreadsheet the demo model's "chart the sample spreadsheet" plan finds. */
export const SAMPLE_SHEET: SeedSheet = {
  id: 'sheet-sample-sales-2026',
  name: 'Sample sales 2026',
  sheets: {
    Sales: [
      ['Month', 'Revenue', 'Costs'],
      ['Jan', 120, 80],
      ['Feb', 135, 82],
      ['Mar', 150, 90],
      ['Apr', 142, 88],
      ['May', 168, 95],
      ['Jun', 181, 99],
    ],
  },
};
const OTHER_SHEET: SeedSheet = {
  id: 'sheet-team-budget',
  name: 'Team budget',
  sheets: {
    Budget: [
      ['Item', 'Amount'],
      ['Laptops', 4200],
      ['Travel', 1800],
    ],
  },
};

export interface DemoOptions {
  /** The raw settings (process.env in main.ts); the demo adds its own over them. */
  env?: Record<string, string | undefined>;
  log?: Logger;
  /** Where the banner and progress go (default stdout). */
  print?: (line: string) => void;
  /** Runtime owner label (tests use a unique one). */
  owner?: string;
}

export interface DemoUser {
  username: string;
  email: string;
  password: string;
}

export interface Demo {
  url: string;
  mailboxUrl: string;
  users: { admin: DemoUser; user: DemoUser };
  config: Readonly<Config>;
  daemon: RunningDaemon;
  emulators: { google: GoogleEmulator; oauth: GoogleOAuth; oidc: OidcEmulator; directory: DirectoryEmulator };
  /** Daemon first, then the emulators. removeContainers also removes live session sandboxes. */
  close(opts?: { removeContainers?: boolean }): Promise<void>;
}

interface DemoSecrets {
  agentUserTokenSecret: string;
  mcpInternalSecret: string;
  adminPassword: string;
  userPassword: string;
}

/** Generated once into the data folder (0600) and reused on every start. */
export function loadOrCreateDemoSecrets(dataDir: string): DemoSecrets {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, SECRETS_FILE);
  if (existsSync(file)) {
    const s = JSON.parse(readFileSync(file, 'utf8')) as DemoSecrets;
    if (s.agentUserTokenSecret && s.mcpInternalSecret && s.adminPassword && s.userPassword) return s;
  }
  const pw = () => randomBytes(12).toString('base64url');
  const s: DemoSecrets = {
    agentUserTokenSecret: randomBytes(32).toString('hex'),
    mcpInternalSecret: randomBytes(32).toString('hex'),
    adminPassword: pw(),
    userPassword: pw(),
  };
  writeFileSync(file, JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return s;
}

/** How to get a Docker engine: the message `airlock demo` exits with. */
export function dockerHelp(socket: string, why: string): string {
  return [
    `The demo needs a Docker engine, and none answered at ${socket} (${why}).`,
    'To get one:',
    '  - install it:          sudo apt-get install docker.io   (or Docker Desktop / docs.docker.com/engine/install)',
    '  - start it:            sudo dockerd --bridge=none --iptables=false &   (sandboxes use no network, so no bridge is needed)',
    '  - or point Airlock at a running engine: AIRLOCK_DOCKER_SOCKET=/path/to/docker.sock npm run demo',
    'Your user must be allowed to use the socket (e.g. be in the docker group).',
  ].join('\n');
}

/** Build the sandbox image when its tag is missing, with a progress display. */
async function ensureImage(config: Readonly<Config>, print: (l: string) => void, log: Logger): Promise<void> {
  const docker = createDocker(config);
  const exists = await docker
    .getImage(config.docker.image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (exists) return;
  print(`Building the sandbox image ${config.docker.image} (first start only; a few minutes)…`);
  const started = Date.now();
  const frames = ['|', '/', '-', '\\'];
  let i = 0;
  const tty = process.stdout.isTTY;
  const timer = setInterval(
    () => {
      const s = Math.round((Date.now() - started) / 1000);
      if (tty) process.stdout.write(`\r  ${frames[i++ % 4]} building… ${s}s `);
      else print(`  … still building (${s}s)`);
    },
    tty ? 250 : 15_000,
  );
  timer.unref();
  // The build logs its stages (base rootfs, app layer) at info; show them as progress lines.
  const stages = createLogger({
    level: 'info',
    destination: {
      write: (line: string) => {
        try {
          const o = JSON.parse(line) as { msg?: string; level?: number };
          if (o.msg && (o.level ?? 30) >= 30) print(`${tty ? '\r' : ''}  · ${o.msg}`);
        } catch {
          // not JSON: ignore
        }
      },
    } as unknown as NodeJS.WritableStream,
  });
  try {
    await ensureSandboxImage({ docker, tag: config.docker.image, root: repoRoot(), log: stages });
  } catch (err) {
    log.error({ err }, 'sandbox image build failed');
    throw err;
  } finally {
    clearInterval(timer);
    if (tty) process.stdout.write('\r');
  }
  print(`  ✓ image built in ${Math.round((Date.now() - started) / 1000)}s`);
}

async function ensureUser(
  db: Sql,
  u: { username: string; email: string; name: string },
  password: string,
  superuser: boolean,
): Promise<number> {
  const passwordHash = await hashPassword(password);
  const found = await getCredentials(db, u.username);
  if (found) {
    // Keep the printed password true even if the secrets file was replaced.
    await setCredentials(db, found.user.id, { passwordHash, isSuperuser: superuser });
    return found.user.id;
  }
  return (
    await createUser(db, {
      username: u.username,
      email: u.email,
      displayName: u.name,
      passwordHash,
      isSuperuser: superuser,
    })
  ).id;
}

/** Connect the user's workspace account the way the browser flow would: authorize (PKCE) → code → tokens. */
async function connectWorkspace(
  config: Readonly<Config>,
  accounts: AccountStore,
  userId: number,
  email: string,
): Promise<void> {
  const verifier = randomBytes(32).toString('base64url');
  const redirectUri = `${config.publicOrigin}/api/account/callback`;
  const u = new URL(config.google.authUrl);
  u.search = new URLSearchParams({
    client_id: config.google.clientId!,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: WORKSPACE_SCOPES.join(' '),
    access_type: 'offline',
    prompt: 'consent',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  }).toString();
  const r = await fetch(u, { redirect: 'manual' });
  const code = r.headers.get('location') ? new URL(r.headers.get('location')!).searchParams.get('code') : null;
  if (!code) throw new AppError('ERR_DEMO_SETUP', `the OAuth emulator did not answer with a code (${r.status})`);
  const tok = await tokenRequest(
    { tokenUrl: config.google.tokenUrl, clientId: config.google.clientId, clientSecret: config.google.clientSecret },
    { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri },
  );
  await accounts.connect(userId, {
    email,
    scopes: (tok.scope ?? WORKSPACE_SCOPES.join(' ')).split(' ').filter(Boolean),
    accessToken: tok.access_token,
    expiresAt: Date.now() + tok.expires_in * 1000,
    refreshToken: tok.refresh_token,
  });
}

/** The Docker engine must answer before anything starts (its absence explained, not a stack). */
async function checkDocker(base: Readonly<Config>): Promise<void> {
  const docker = createDocker(base);
  try {
    await docker.ping();
  } catch (err) {
    throw new AppError('ERR_DEMO_DOCKER', dockerHelp(base.docker.socketPath, (err as Error).message));
  }
}

/** The demo's settings over the caller's: the emulators' URLs, the generated secrets. */
function demoEnvOf(
  env: Record<string, string | undefined>,
  port: number,
  secrets: ReturnType<typeof loadOrCreateDemoSecrets>,
  e: {
    clientId: string;
    clientSecret: string;
    oauth: { authorizeUrl: string; revokeUrl: string };
    router: { tokenUrl: string };
    google: { url: string };
    directory: { url: string };
  },
): Record<string, string | undefined> {
  const { clientId, clientSecret, oauth, router, google, directory } = e;
  return {
    ...env,
    AIRLOCK_PORT: String(port),
    AIRLOCK_MODEL_PROVIDER: env.AIRLOCK_MODEL_PROVIDER || 'demo',
    AIRLOCK_LOG_LEVEL: env.AIRLOCK_LOG_LEVEL || 'warn',
    AGENT_USER_TOKEN_SECRET: env.AGENT_USER_TOKEN_SECRET || secrets.agentUserTokenSecret,
    MCP_INTERNAL_SECRET: env.MCP_INTERNAL_SECRET || secrets.mcpInternalSecret,
    AIRLOCK_GOOGLE_CLIENT_ID: clientId,
    AIRLOCK_GOOGLE_CLIENT_SECRET: clientSecret,
    AIRLOCK_GOOGLE_AUTH_URL: oauth.authorizeUrl,
    AIRLOCK_GOOGLE_TOKEN_URL: router.tokenUrl,
    AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
    AIRLOCK_GOOGLE_MAIL_BASE_URL: google.url,
    AIRLOCK_GOOGLE_SHEETS_BASE_URL: google.url,
    AIRLOCK_GOOGLE_DRIVE_BASE_URL: google.url,
    AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: directory.url,
  };
}

/** "Sign in with Google (demo)": an active IdP connection for the OIDC emulator (its port changes every start). */
async function connectDemoIdp(
  db: Sql,
  config: Readonly<Config>,
  oidc: OidcEmulator,
  directory: DirectoryEmulator,
): Promise<void> {
  const idpClient = { client_id: 'airlock-demo-login', client_secret: randomBytes(16).toString('hex') };
  oidc.addClient({ ...idpClient, redirect_uris: [`${config.publicOrigin}/accounts/google/login/callback/`] });
  const conn = {
    display_name: 'Google (demo)',
    issuer: oidc.url,
    ...idpClient,
    service_account_json: JSON.stringify(directory.serviceAccount),
    delegated_admin_email: DEMO_ADMIN.email,
    is_active: true,
  };
  const enc = atRestEncryptor(config);
  const existing = await getConnectionByProvider(db, 'google');
  await saveConnection(db, enc, existing ? conn : { provider: 'google', ...conn }, existing?.id);
}

/** Start the emulators and the daemon; print how to use them. */
export async function startDemo(opts: DemoOptions = {}): Promise<Demo> {
  const print = opts.print ?? ((l: string) => process.stdout.write(l + '\n'));
  const env = { ...(opts.env ?? {}) };
  // First pass: where the data folder, engine and listener are.
  const base = loadConfig(env);
  const log = opts.log ?? createLogger({ level: env.AIRLOCK_LOG_LEVEL || 'warn', destination: process.stderr });

  // Before Docker, the emulators and the daemon: a port in use stops the demo with nothing started.
  await assertPortFree(base.host, base.port);
  await checkDocker(base);
  await ensureImage(base, print, log);

  const secrets = loadOrCreateDemoSecrets(base.dataDir);
  const cleanups: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const router = await startTokenRouter();
    cleanups.push(() => router.close());
    const clientId = 'airlock-demo-workspace';
    const clientSecret = randomBytes(16).toString('hex');
    const oauth = await startGoogleOAuth({ clientId, clientSecret, email: DEMO_USER.email });
    cleanups.push(() => oauth.close());
    const google = await startGoogle({
      authorize: (t) => oauth.issued.access.includes(t) && !oauth.revoked.includes(t),
      seed: { spreadsheets: [SAMPLE_SHEET, OTHER_SHEET] },
      userEmail: DEMO_USER.email,
    });
    cleanups.push(() => google.close());
    const directory = await startDirectory({ domain: DEMO_DOMAIN, audience: router.tokenUrl });
    cleanups.push(() => directory.close());
    router.route(oauth.tokenUrl, directory.tokenUrl);
    seedDirectory(directory);
    const oidc = await startOidc({
      users: [DEMO_USER, DEMO_ADMIN].map((u) => ({
        sub: u.username,
        email: u.email,
        email_verified: true,
        name: u.name,
      })),
    });
    cleanups.push(() => oidc.close());

    const host = base.host;
    const port = base.port === 0 ? await freePort(host) : base.port;
    const demoEnv = demoEnvOf(env, port, secrets, { clientId, clientSecret, oauth, router, google, directory });
    if (base.port === 0 && !env.AIRLOCK_PUBLIC_ORIGIN)
      demoEnv.AIRLOCK_PUBLIC_ORIGIN = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const config = loadConfig(demoEnv, { require: SERVE_REQUIRED });

    // The demo connector with OAuth per user (docs/connectors.md): the user connects it in Settings or the chat.
    const demoTickets = await startDemoTickets(config, {
      username: DEMO_USER.username,
      password: secrets.userPassword,
    });
    cleanups.push(() => demoTickets.tickets.close());
    const daemon = await serve(config, { log, runtime: opts.owner ? { owner: opts.owner } : {} });
    cleanups.push(() => daemon.close());
    if (!daemon.runtime)
      throw new AppError('ERR_DEMO_DOCKER', dockerHelp(config.docker.socketPath, 'the runtime did not start'));

    await ensureUser(daemon.database.sql, DEMO_ADMIN, secrets.adminPassword, true);
    const userId = await ensureUser(daemon.database.sql, DEMO_USER, secrets.userPassword, false);
    const accounts = new AccountStore(daemon.database.sql, atRestEncryptor(config));
    await connectWorkspace(config, accounts, userId, DEMO_USER.email);

    await connectDemoIdp(daemon.database.sql, config, oidc, directory);
    await demoTickets.register(daemon.database.sql, atRestEncryptor(config));

    const url = config.publicOrigin;
    const mailboxUrl = `${google.url}/mailbox`;
    const users = {
      admin: { username: DEMO_ADMIN.username, email: DEMO_ADMIN.email, password: secrets.adminPassword },
      user: { username: DEMO_USER.username, email: DEMO_USER.email, password: secrets.userPassword },
    };
    print(banner(url, mailboxUrl, users, config));
    let closing: Promise<void> | undefined;
    return {
      url,
      mailboxUrl,
      users,
      config,
      daemon,
      emulators: { google, oauth, oidc, directory },
      close(o = {}) {
        closing ??= (async () => {
          if (o.removeContainers) await daemon.runtime?.close({ removeContainers: true });
          await closeAll();
        })();
        return closing;
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

function seedDirectory(d: DirectoryEmulator): void {
  const people = [
    DEMO_ADMIN,
    DEMO_USER,
    { email: `ana.lima@${DEMO_DOMAIN}`, name: 'Ana Lima' },
    { email: `ben.okafor@${DEMO_DOMAIN}`, name: 'Ben Okafor' },
    { email: `chen.wei@${DEMO_DOMAIN}`, name: 'Chen Wei' },
  ];
  for (const p of people)
    d.addUser({ primaryEmail: p.email, name: { fullName: p.name }, isAdmin: p.email === DEMO_ADMIN.email });
  const sales = d.addGroup({ email: `sales@${DEMO_DOMAIN}`, name: 'Sales', description: 'Sales team' });
  const eng = d.addGroup({ email: `engineering@${DEMO_DOMAIN}`, name: 'Engineering', description: 'Engineering team' });
  d.setMembers(sales.id, [DEMO_USER.email, `ana.lima@${DEMO_DOMAIN}`]);
  d.setMembers(eng.id, [`ben.okafor@${DEMO_DOMAIN}`, `chen.wei@${DEMO_DOMAIN}`]);
}

function banner(url: string, mailboxUrl: string, users: Demo['users'], config: Readonly<Config>): string {
  return [
    '',
    'Airlock demo is running.',
    '',
    `  Open          ${url}/`,
    `  Log in as     ${users.user.username} / ${users.user.password}        (the demo user, workspace account connected)`,
    `  Admin         ${users.admin.username} / ${users.admin.password}        (superuser)`,
    '  or use "Sign in with Google (demo)" on the login page.',
    '',
    '  Then ask:     chart the sample spreadsheet and email it to someone@example.com',
    '  Approve it:   the chat shows an approval card for the recipient (the send policy asks',
    '                about every domain not allowed; AIRLOCK_MAIL_ALLOW_DOMAINS lists your own)',
    `  Read it at    ${mailboxUrl}   (the emulated Gmail's mailbox)`,
    '',
    `  Data folder   ${config.dataDir}   Model: ${config.model.provider}   Metrics: ${url}/metrics`,
    '  Ctrl-C stops everything.',
    '',
  ].join('\n');
}
