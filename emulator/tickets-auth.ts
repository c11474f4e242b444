import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { memoryAdapter } from './oidc.js';

/** A client registered with the tickets authorization server beforehand. */
export interface TicketsClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

/** Ways the token endpoint misbehaves, to test the OAuth client's refusals. */
export interface TicketsAuthTamper {
  /** Answer the token request with a 200 that repeats the request's form body (secrets included). */
  echoSecrets?: boolean;
  /** Answer the token request with a redirect to this URL (another host). */
  redirectTokenTo?: string;
}

export interface TicketsAuthOptions {
  /** The one protected resource (the MCP server's URL): the only `resource` indicator accepted. */
  resource: string;
  /** username → password. */
  users: Record<string, string>;
  clients?: TicketsClient[];
  /** Access token lifetime (short in tests that refresh). */
  accessTokenTtlS?: number;
  /** Open dynamic client registration (RFC 7591) at `/reg`, advertised as `registration_endpoint`. */
  dynamicRegistration?: boolean;
}

export interface TicketsAuth {
  /** The issuer; discovery at `${url}/.well-known/openid-configuration`. */
  url: string;
  provider: Provider;
  /** The grant_type of every successful token request, in order. */
  grants: string[];
  /** Client ids registered dynamically (RFC 7591), and the ones deleted again (RFC 7592), in order. */
  registered: string[];
  deregistered: string[];
  /** Tokens revoked through the revocation endpoint (their count). */
  revocations: number;
  tamper: TicketsAuthTamper;
  close(): Promise<void>;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, title: string, body: string): void {
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(`<!doctype html><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1>${body}`);
}

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * The interaction pages: a login form (username, password), then a consent form ("Allow"). Both
 * are plain HTML forms posting back here, as a real authorization server's are.
 */
async function interaction(
  provider: Provider,
  users: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
  action: string | undefined,
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    if (details.prompt.name === 'login') {
      page(
        res,
        'Sign in to Acme Tickets',
        `<form method="post" action="/interaction/${uid}/login"><label>Username <input name="username"></label><label>Password <input name="password" type="password"></label><button>Sign in</button></form>`,
      );
    } else {
      page(
        res,
        'Allow Airlock to use Acme Tickets?',
        `<form method="post" action="/interaction/${uid}/confirm"><button>Allow</button></form><form method="post" action="/interaction/${uid}/abort"><button>Deny</button></form>`,
      );
    }
    return;
  }
  const form = await formBody(req);
  if (action === 'login') {
    const username = form.get('username') ?? '';
    if (users[username] === undefined || users[username] !== form.get('password'))
      return page(res, 'Wrong username or password', `<a href="/interaction/${uid}">Try again</a>`);
    return provider.interactionFinished(
      req,
      res,
      { login: { accountId: username } },
      { mergeWithLastSubmission: false },
    );
  }
  if (action === 'abort')
    return provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'the user denied access' },
      { mergeWithLastSubmission: false },
    );
  // Consent: what was asked, the resource's scopes included.
  const { accountId } = details.session!;
  const grant = details.grantId
    ? (await provider.Grant.find(details.grantId))!
    : new provider.Grant({ accountId, clientId: details.params.client_id as string });
  const d = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

function providerOptions(o: TicketsAuthOptions, jwk: JWK): ConstructorParameters<typeof Provider>[1] {
  return {
    clients: (o.clients ?? []).map((c) => ({
      ...c,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    adapter: memoryAdapter(new Map()),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    scopes: ['tickets', 'offline_access'],
    ttl: {
      AccessToken: o.accessTokenTtlS ?? 3600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 14 * 86400,
      RefreshToken: 14 * 86400,
    },
    pkce: { required: () => true },
    // A refresh token for every client allowed the grant (no offline_access dance).
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: o.dynamicRegistration === true },
      // RFC 7592: a registered client may delete itself (registration_client_uri + its access token).
      registrationManagement: { enabled: o.dynamicRegistration === true, rotateRegistrationAccessToken: false },
      // A client revokes only its own tokens.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) =>
          token.clientId === client.clientId,
      },
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => o.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== o.resource) throw new Error(`unknown resource ${indicator}`);
          return {
            scope: 'tickets',
            audience: o.resource,
            accessTokenTTL: o.accessTokenTtlS ?? 3600,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
    interactions: { url: (_ctx, i) => `/interaction/${i.uid}` },
    findAccount: async (_ctx, id) =>
      o.users[id] === undefined ? undefined : { accountId: id, claims: async () => ({ sub: id }) },
    renderError: async (ctx, out) => {
      ctx.type = 'application/json';
      ctx.body = out;
    },
  };
}

/**
 * The demo ticket tracker's own authorization server, built on `oidc-provider`: authorization
 * code with PKCE (required), `resource` indicators (RFC 8707; opaque access tokens for the one
 * MCP server), refresh tokens, revocation (RFC 7009), and client ID metadata documents (https
 * client ids only, as the draft asks). Login and consent are HTML forms. On 127.0.0.1:0.
 */
export async function startTicketsAuth(o: TicketsAuthOptions): Promise<TicketsAuth> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'tickets-1', alg: 'RS256', use: 'sig' };
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(url, providerOptions(o, jwk));
  const self: TicketsAuth = {
    url,
    provider,
    grants: [],
    registered: [],
    deregistered: [],
    revocations: 0,
    tamper: {},
    close: () => Promise.resolve(),
  };
  provider.on('grant.success', (ctx) => self.grants.push(String(ctx.oidc.params?.grant_type)));
  provider.on('registration_create.success', (_ctx, client) => self.registered.push(client.clientId));
  provider.on('registration_delete.success', (_ctx, client) => self.deregistered.push(client.clientId));
  const callback = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', url);
    if (u.pathname === '/token/revocation') res.on('finish', () => void (res.statusCode === 200 && self.revocations++));
    if (u.pathname === '/token' && req.method === 'POST' && (self.tamper.echoSecrets || self.tamper.redirectTokenTo))
      return void tamperedToken(self.tamper, req, res);
    const m = /^\/interaction\/([^/]+)(?:\/(login|confirm|abort))?$/.exec(u.pathname);
    if (m) {
      interaction(provider, o.users, req, res, m[1], m[2]).catch((err: Error) => {
        res.statusCode = 400;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: 'interaction_failed', error_description: err.message }));
      });
      return;
    }
    callback(req, res);
  });
  self.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return self;
}

/** A token endpoint gone wrong: it echoes the request's form (secrets and all), or redirects away. */
async function tamperedToken(tamper: TicketsAuthTamper, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const form = await formBody(req);
  if (tamper.redirectTokenTo) {
    res.writeHead(307, { location: tamper.redirectTokenTo });
    return void res.end();
  }
  const basic = (req.headers.authorization ?? '').replace(/^Basic /, '');
  res.setHeader('content-type', 'application/json');
  res.end(
    JSON.stringify({
      access_token: 'echo-token',
      token_type: 'Bearer',
      expires_in: 600,
      debug: { request: form.toString(), authorization: Buffer.from(basic, 'base64').toString('utf8') },
    }),
  );
}
