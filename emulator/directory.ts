import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { importSPKI, jwtVerify } from 'jose';

/** Admin SDK Directory user (the fields sync reads). */
export interface DirUser {
  id: string;
  primaryEmail: string;
  name: { fullName: string; givenName?: string; familyName?: string };
  suspended: boolean;
  archived: boolean;
  isAdmin: boolean;
}

export interface DirGroup {
  id: string;
  email: string;
  name: string;
  description: string;
}

export interface DirMember {
  id: string;
  email: string;
  role: 'MEMBER' | 'MANAGER' | 'OWNER';
  type: 'USER' | 'GROUP' | 'CUSTOMER';
  status: 'ACTIVE' | 'SUSPENDED';
}

/** A service-account key file as Google issues it (JSON). */
export interface ServiceAccountFile {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

export interface FailRule {
  /** Substring of the request path (e.g. '/members', '/users'). */
  pathIncludes: string;
  /** Let this many matching requests through first. */
  after?: number;
  /** How many matching requests fail (default: all after `after`). */
  times?: number;
  status: number;
  /** Google error reason, e.g. 'rateLimitExceeded', 'backendError'. */
  reason?: string;
  /** Send `Retry-After: <seconds>` with the failure, as Google may on 429 and 503. */
  retryAfterS?: number;
}

export interface DirectoryEmulator {
  url: string;
  /** The token endpoint the service account's assertion is POSTed to. */
  tokenUrl: string;
  /** Every request, with the time it arrived (ms since the epoch). */
  requests: { method: string; path: string; query: string; at: number }[];
  users: DirUser[];
  groups: DirGroup[];
  /** group id → members */
  members: Map<string, DirMember[]>;
  domain: string;
  /** A service-account key file whose public key the token endpoint trusts. */
  serviceAccount: ServiceAccountFile;
  /** Delegated admins the token endpoint accepts as `sub`. */
  admins: Set<string>;
  /** Fail matching requests (an upstream outage or rate limiting). */
  fail(rule: FailRule): void;
  clearFailures(): void;
  /** Milliseconds to wait before answering each API request. */
  latencyMs: number;
  addUser(u: Partial<DirUser> & { primaryEmail: string }): DirUser;
  addGroup(g: Partial<DirGroup> & { email: string }): DirGroup;
  setMembers(groupId: string, emails: string[]): void;
  /** Replace the whole directory with a generated one. */
  seed(opts: SeedOptions): void;
  close(): Promise<void>;
}

export interface SeedOptions {
  users: number;
  groups: number;
  memberships: number;
  /** Fraction of users suspended (default 0). */
  suspended?: number;
}

const SCOPES_NEEDED: Record<string, string> = {
  users: 'https://www.googleapis.com/auth/admin.directory.user.readonly',
  groups: 'https://www.googleapis.com/auth/admin.directory.group.readonly',
  members: 'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
};

const MAX: Record<string, number> = { users: 500, groups: 200, members: 200 };

/**
 * A Google Admin SDK Directory API stand-in on 127.0.0.1:0: users.list, groups.list and
 * members.list with maxResults/pageToken paging and Google's response and error shapes, plus
 * an OAuth token endpoint that accepts only a JWT-bearer assertion signed by the service
 * account's private key (verified against its public key), with `sub` a known admin and the
 * read-only directory scopes.
 */
/** `audience`: the token URL assertions are addressed to, when a router sits in front of this one (the demo). */
export async function start(opts: { domain?: string; audience?: string } = {}): Promise<DirectoryEmulator> {
  const domain = opts.domain ?? 'example.test';
  const requests: DirectoryEmulator['requests'] = [];
  const tokens: Tokens = new Map();
  const rules: (FailRule & { seen: number; failed: number })[] = [];
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const spki = await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }).toString(), 'RS256');
  const keyId = randomBytes(20).toString('hex');

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tokenUrl = `${url}/token`;

  const emu: DirectoryEmulator = {
    url,
    tokenUrl,
    requests,
    users: [],
    groups: [],
    members: new Map(),
    domain,
    admins: new Set([`admin@${domain}`]),
    latencyMs: 0,
    serviceAccount: {
      type: 'service_account',
      project_id: 'emulated',
      private_key_id: keyId,
      private_key: pem,
      client_email: `airlock-sync@emulated.iam.gserviceaccount.test`,
      client_id: '1000000000000',
      token_uri: tokenUrl,
    },
    fail(rule) {
      rules.push({ ...rule, seen: 0, failed: 0 });
    },
    clearFailures() {
      rules.length = 0;
    },
    addUser: (u) => addUser(emu, u),
    addGroup: (g) => addGroup(emu, g),
    setMembers: (groupId, emails) => setMembers(emu, groupId, emails),
    seed(s) {
      seedDirectory(emu, domain, s);
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };

  const tk: TokenKit = { emu, tokens, spki, keyId, audience: opts.audience ?? tokenUrl };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', url);
    requests.push({ method: req.method ?? 'GET', path: u.pathname, query: u.search, at: Date.now() });
    const go = async () => {
      if (u.pathname === '/token' && req.method === 'POST') return handleToken(tk, req, res);
      if (emu.latencyMs) await new Promise((r) => setTimeout(r, emu.latencyMs));
      for (const r of rules) {
        if (!u.pathname.includes(r.pathIncludes)) continue;
        r.seen++;
        if (r.seen > (r.after ?? 0) && (r.times === undefined || r.failed < r.times)) {
          r.failed++;
          const reason =
            r.reason ?? (r.status === 429 ? 'rateLimitExceeded' : r.status >= 500 ? 'backendError' : 'forbidden');
          if (r.retryAfterS !== undefined) res.setHeader('retry-after', String(r.retryAfterS));
          return apiError(res, r.status, reason, `emulated failure: ${reason}`);
        }
      }
      if (req.method === 'GET' && u.pathname.startsWith('/admin/directory/v1/'))
        return handleApi(emu, tokens, req, res, u);
      apiError(res, 404, 'notFound', 'Not Found');
    };
    go().catch(() => apiError(res, 500, 'backendError', 'Backend Error'));
  });

  return emu;
}

type Tokens = Map<string, { scopes: Set<string>; exp: number }>;

/** What the token endpoint checks an assertion against. */
interface TokenKit {
  emu: DirectoryEmulator;
  tokens: Tokens;
  spki: Awaited<ReturnType<typeof importSPKI>>;
  keyId: string;
  audience: string;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=UTF-8');
  res.end(JSON.stringify(body));
}

function apiError(res: ServerResponse, status: number, reason: string, message: string): void {
  send(res, status, { error: { code: status, message, errors: [{ domain: 'global', reason, message }] } });
}

function page<T>(items: T[], u: URL, kind: string): { slice: T[]; next?: string } {
  const max = Math.min(Number(u.searchParams.get('maxResults') ?? MAX[kind]) || MAX[kind], MAX[kind]);
  const start = u.searchParams.get('pageToken')
    ? Number(Buffer.from(u.searchParams.get('pageToken')!, 'base64url').toString())
    : 0;
  const slice = items.slice(start, start + max);
  const next = start + max < items.length ? Buffer.from(String(start + max)).toString('base64url') : undefined;
  return { slice, next };
}

async function handleToken(
  { emu, tokens, spki, keyId, audience }: TokenKit,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const form = new URLSearchParams(await readBody(req));
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
    return send(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
  }
  try {
    const { payload, protectedHeader } = await jwtVerify(form.get('assertion') ?? '', spki, {
      audience,
      issuer: emu.serviceAccount.client_email,
      algorithms: ['RS256'],
    });
    if (protectedHeader.kid && protectedHeader.kid !== keyId) throw new Error('unknown key id');
    if (typeof payload.sub !== 'string' || !emu.admins.has(payload.sub)) {
      return send(res, 401, {
        error: 'unauthorized_client',
        error_description:
          'Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested.',
      });
    }
    const scopes = new Set(
      String(payload.scope ?? '')
        .split(' ')
        .filter(Boolean),
    );
    const token = `ya29.emu-${randomBytes(24).toString('base64url')}`;
    tokens.set(token, { scopes, exp: Date.now() + 3600_000 });
    send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3599 });
  } catch {
    // Any verification failure is Google's invalid_grant; details stay server-side.
    send(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
  }
}

async function handleApi(
  emu: DirectoryEmulator,
  tokens: Tokens,
  req: IncomingMessage,
  res: ServerResponse,
  u: URL,
): Promise<void> {
  const auth = req.headers.authorization ?? '';
  const tok = tokens.get(auth.replace(/^Bearer /, ''));
  if (!tok || tok.exp < Date.now()) return apiError(res, 401, 'authError', 'Invalid Credentials');
  const p = u.pathname.replace(/^\/admin\/directory\/v1/, '');
  let m: RegExpExecArray | null;
  if (p === '/users') {
    if (!tok.scopes.has(SCOPES_NEEDED.users))
      return apiError(res, 403, 'insufficientPermissions', 'Insufficient Permission');
    if (!u.searchParams.get('customer') && !u.searchParams.get('domain'))
      return apiError(res, 400, 'badRequest', 'Bad Request');
    const { slice, next } = page(emu.users, u, 'users');
    return send(res, 200, {
      kind: 'admin#directory#users',
      etag: '"e"',
      users: slice.map((x) => ({ kind: 'admin#directory#user', ...x })),
      nextPageToken: next,
    });
  }
  if (p === '/groups') {
    if (!tok.scopes.has(SCOPES_NEEDED.groups))
      return apiError(res, 403, 'insufficientPermissions', 'Insufficient Permission');
    const { slice, next } = page(emu.groups, u, 'groups');
    return send(res, 200, {
      kind: 'admin#directory#groups',
      etag: '"e"',
      groups: slice.map((g) => ({
        kind: 'admin#directory#group',
        ...g,
        directMembersCount: String(emu.members.get(g.id)?.length ?? 0),
      })),
      nextPageToken: next,
    });
  }
  if ((m = /^\/groups\/([^/]+)\/members$/.exec(p))) {
    if (!tok.scopes.has(SCOPES_NEEDED.members))
      return apiError(res, 403, 'insufficientPermissions', 'Insufficient Permission');
    const key = decodeURIComponent(m[1]);
    const g = emu.groups.find((x) => x.id === key || x.email === key);
    if (!g) return apiError(res, 404, 'notFound', 'Resource Not Found: groupKey');
    const { slice, next } = page(emu.members.get(g.id) ?? [], u, 'members');
    return send(res, 200, {
      kind: 'admin#directory#members',
      etag: '"e"',
      members: slice.map((x) => ({ kind: 'admin#directory#member', ...x })),
      nextPageToken: next,
    });
  }
  apiError(res, 404, 'notFound', 'Not Found');
}

function addUser(emu: DirectoryEmulator, u: Partial<DirUser> & { primaryEmail: string }): DirUser {
  const user: DirUser = {
    id: u.id ?? String(100000000 + emu.users.length + Math.floor(Math.random() * 1e6) * 1000),
    primaryEmail: u.primaryEmail,
    name: u.name ?? { fullName: u.primaryEmail.split('@')[0] },
    suspended: u.suspended ?? false,
    archived: u.archived ?? false,
    isAdmin: u.isAdmin ?? false,
  };
  emu.users.push(user);
  return user;
}

function addGroup(emu: DirectoryEmulator, g: Partial<DirGroup> & { email: string }): DirGroup {
  const group: DirGroup = {
    id: g.id ?? randomUUID().replace(/-/g, '').slice(0, 17),
    email: g.email,
    name: g.name ?? g.email.split('@')[0],
    description: g.description ?? '',
  };
  emu.groups.push(group);
  emu.members.set(group.id, []);
  return group;
}

function setMembers(emu: DirectoryEmulator, groupId: string, emails: string[]): void {
  emu.members.set(
    groupId,
    emails.map((e) => {
      const u = emu.users.find((x) => x.primaryEmail === e);
      return { id: u?.id ?? randomBytes(8).toString('hex'), email: e, role: 'MEMBER', type: 'USER', status: 'ACTIVE' };
    }),
  );
}

/** A synthetic directory of the given size (deterministic, for benchmarks and load tests). */
function seedDirectory(emu: DirectoryEmulator, domain: string, s: SeedOptions): void {
  emu.users = [];
  emu.groups = [];
  emu.members = new Map();
  for (let i = 0; i < s.users; i++) {
    emu.users.push({
      id: String(110000000000 + i),
      primaryEmail: `user${i}@${domain}`,
      name: { fullName: `User ${i}`, givenName: 'User', familyName: String(i) },
      suspended: s.suspended ? i % Math.round(1 / s.suspended) === 0 : false,
      archived: false,
      isAdmin: false,
    });
  }
  for (let g = 0; g < s.groups; g++) {
    const id = `grp${String(g).padStart(6, '0')}`;
    emu.groups.push({ id, email: `group${g}@${domain}`, name: `Group ${g}`, description: '' });
    emu.members.set(id, []);
  }
  // Deterministic spread: membership k puts user (k * 7919) mod N into group k mod G.
  const seen = new Set<string>();
  for (let k = 0; k < s.memberships && s.groups && s.users; k++) {
    const g = k % s.groups;
    let u = (k * 7919) % s.users;
    while (seen.has(`${g}:${u}`)) u = (u + 1) % s.users;
    seen.add(`${g}:${u}`);
    const user = emu.users[u];
    emu.members
      .get(emu.groups[g].id)!
      .push({ id: user.id, email: user.primaryEmail, role: 'MEMBER', type: 'USER', status: 'ACTIVE' });
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
