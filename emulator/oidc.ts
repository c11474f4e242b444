import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader, importJWK, type JWK } from 'jose';

/** A user the emulated IdP knows. `sub` is the account id. */
export interface OidcUser {
  sub: string;
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface OidcClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface OidcEmulatorOptions {
  clients?: OidcClient[];
  users?: OidcUser[];
}

export interface RecordedRequest {
  method: string;
  path: string;
}

/**
 * Ways the emulated IdP's token endpoint can misbehave. `nonce` re-signs the ID token (with the
 * IdP's real key) carrying another nonce; `idToken` replaces the ID token in the token response
 * with whatever it returns (a forged signature, a claim changed without re-signing, …), as a
 * tampering party between the relying party and the token endpoint would.
 */
export interface OidcTamper {
  nonce?: string;
  idToken?: (idToken: string) => string | Promise<string>;
  /** Answer the JWKS endpoint (`/jwks`) with this HTTP status and no keys (an IdP outage). */
  jwksStatus?: number;
}

export interface OidcEmulator {
  /** The issuer (= base URL); discovery at `${url}/.well-known/openid-configuration`. */
  url: string;
  requests: RecordedRequest[];
  users: Map<string, OidcUser>;
  addClient(c: OidcClient): void;
  addUser(u: OidcUser): void;
  /** Misbehave on the next token responses (tests the relying party's checks). */
  tamper: OidcTamper;
  close(): Promise<void>;
}

/** GET /interaction/<uid>: sign in the user named by `?login=` (or list them), then grant consent. */
async function interaction(
  provider: Provider,
  users: Map<string, OidcUser>,
  req: IncomingMessage,
  res: ServerResponse,
  u: URL,
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const login = u.searchParams.get('login');
  if (details.prompt.name === 'login') {
    if (!login) {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        `<!doctype html><title>Emulated IdP</title><h1>Sign in</h1><ul>${[...users.values()].map((x) => `<li><a href="?login=${encodeURIComponent(x.sub)}">${escapeHtml(x.email)}</a></li>`).join('')}</ul>`,
      );
      return;
    }
    if (!users.has(login)) throw new Error('unknown user');
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    return;
  }
  // Consent: grant what was asked (an IdP's "allow" button).
  const { accountId } = details.session!;
  const grant = details.grantId
    ? (await provider.Grant.find(details.grantId))!
    : new provider.Grant({ accountId, clientId: details.params.client_id as string });
  if (details.prompt.details.missingOIDCScope)
    grant.addOIDCScope((details.prompt.details.missingOIDCScope as string[]).join(' '));
  if (details.prompt.details.missingOIDCClaims)
    grant.addOIDCClaims(details.prompt.details.missingOIDCClaims as string[]);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** oidc-provider's adapter over one in-memory map (the emulator's store; also the tickets authorization server's). */
export function memoryAdapter(store: Map<string, { payload: Record<string, unknown>; exp?: number }>) {
  return class Adapter {
    constructor(private readonly model: string) {}
    #k(id: string) {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      store.set(this.#k(id), { payload, exp: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
    }
    async find(id: string) {
      const e = store.get(this.#k(id));
      if (!e || (e.exp && e.exp < Date.now())) return undefined;
      return e.payload;
    }
    async findByUid(uid: string) {
      for (const [k, e] of store) if (k.startsWith(`${this.model}:`) && e.payload.uid === uid) return e.payload;
      return undefined;
    }
    async findByUserCode(code: string) {
      for (const [k, e] of store) if (k.startsWith(`${this.model}:`) && e.payload.userCode === code) return e.payload;
      return undefined;
    }
    async consume(id: string) {
      const e = store.get(this.#k(id));
      if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.#k(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const [k, e] of store) if (e.payload.grantId === grantId) store.delete(k);
    }
  };
}

/** The provider's settings: code flow with PKCE, the emulator's users and clients, no dev pages. */
function providerOptions(
  clients: OidcClient[],
  users: Map<string, OidcUser>,
  jwk: JWK,
  adapter: ReturnType<typeof memoryAdapter>,
): ConstructorParameters<typeof Provider>[1] {
  return {
    clients: clients.map((c) => ({
      ...c,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    adapter,
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx, id) => {
      const u = users.get(id);
      if (!u) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: u.email, email_verified: u.email_verified, name: u.name ?? u.email }),
      };
    },
    renderError: async (ctx, out) => {
      ctx.type = 'application/json';
      ctx.body = out;
    },
  };
}

/**
 * An OpenID Connect provider built on `oidc-provider` (the same library openid-client tests
 * against), on 127.0.0.1:0. Login is programmatic: the provider sends the browser to
 * `/interaction/<uid>`; a GET there with `?login=<sub>` signs that user in and grants the
 * requested scopes (no consent page), so a test with a cookie jar can follow the real
 * redirect chain. Without `login`, the page lists the users as links (for `airlock demo`).
 * ID tokens carry `email` and `email_verified`, as Google's do.
 */
export async function start(opts: OidcEmulatorOptions = {}): Promise<OidcEmulator> {
  const users = new Map<string, OidcUser>((opts.users ?? []).map((u) => [u.sub, u]));
  const clients: OidcClient[] = [...(opts.clients ?? [])];
  const requests: RecordedRequest[] = [];
  const tamper: OidcTamper = {};
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'emu-1', alg: 'RS256', use: 'sig' };

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // The emulator's own in-memory store (one per emulator, kept across client changes).
  const store = new Map<string, { payload: Record<string, unknown>; exp?: number }>();
  const Adapter = memoryAdapter(store);

  let provider: Provider;
  const build = () => {
    provider = new Provider(url, providerOptions(clients, users, jwk, Adapter));
    // Tampering hooks on the token response's ID token (see OidcTamper).
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.path !== '/token' || !ctx.body || typeof ctx.body !== 'object' || !('id_token' in ctx.body)) return;
      const body = ctx.body as { id_token: string };
      if (tamper.nonce) {
        const claims = decodeJwt(body.id_token);
        const header = decodeProtectedHeader(body.id_token);
        body.id_token = await new SignJWT({ ...claims, nonce: tamper.nonce })
          .setProtectedHeader({ alg: header.alg!, kid: header.kid, typ: header.typ })
          .sign(await importJWK(jwk, 'RS256'));
      }
      if (tamper.idToken) body.id_token = await tamper.idToken(body.id_token);
    });
  };
  build();
  let callback = provider!.callback();

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', url);
    requests.push({ method: req.method ?? 'GET', path: u.pathname });
    if (u.pathname === '/jwks' && tamper.jwksStatus) {
      res.statusCode = tamper.jwksStatus;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ error: 'server_error' }));
      return;
    }
    const m = /^\/interaction\/([^/]+)$/.exec(u.pathname);
    if (m && req.method === 'GET') {
      interaction(provider, users, req, res, u).catch((err: Error) => {
        res.statusCode = 400;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: 'interaction_failed', error_description: err.message }));
      });
      return;
    }
    callback(req, res);
  });

  let closed = false;
  return {
    url,
    requests,
    users,
    tamper,
    addClient(c) {
      clients.push(c);
      build();
      callback = provider.callback();
    },
    addUser(user) {
      users.set(user.sub, user);
    },
    close() {
      if (closed) return Promise.resolve();
      closed = true;
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
