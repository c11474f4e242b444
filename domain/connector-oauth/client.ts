/**
 * The host's OAuth client to a connector's MCP server (docs/connectors.md, "OAuth per user"), on
 * the official MCP SDK's client auth helpers: protected-resource metadata (RFC 9728, from the
 * 401's `WWW-Authenticate` else the well-known URL), the authorization server's metadata
 * (RFC 8414 / OpenID discovery), authorization code + PKCE S256 with the `resource` indicator
 * (RFC 8707), refresh, and revocation (RFC 7009). Every request goes through one guarded fetch:
 * a redirect to another host is refused, answers are bounded, and a token endpoint that echoes
 * a secret of the request is refused without its answer being read any further.
 */
import {
  buildDiscoveryUrls,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import {
  OAuthMetadataSchema,
  type OAuthClientInformationMixed,
  type OAuthMetadata,
  type OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AppError, isAppError, type ErrorCode } from '../../core/index.js';
import type { OAuthConnectorSettings } from '../../core/connector-oauth.js';

/**
 * An authorization server's metadata, as RFC 8414 names its fields (unknown fields kept). An
 * OpenID discovery document is read with the same schema: it is a superset, and the SDK's OpenID
 * schema drops the fields it does not name (`revocation_endpoint` among them).
 */
export type AuthorizationServerMetadata = OAuthMetadata;

/** Largest answer of a metadata, token or revocation endpoint that is read. */
const MAX_ANSWER_BYTES = 64 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;
/** An access token without `expires_in` is taken to last this long (then refreshed, or the user reconnects). */
const DEFAULT_EXPIRES_IN_S = 3600;

/** What discovery found: the authorization server and what a grant's requests need. */
export interface DiscoveredServer {
  issuer: string;
  metadata: AuthorizationServerMetadata;
  /** The resource indicator (the protected-resource metadata's `resource`, verbatim). */
  resource: string;
  /** Scopes to ask for: the MCP server's 401 `scope`, else the ones its metadata lists, space-separated (undefined: none). */
  scope?: string;
}

/** The client a grant is made with: the metadata document's URL (public), or the pre-registered one. */
export interface ConnectorClient {
  client_id: string;
  client_secret?: string;
}

/** A grant's tokens, checked. */
export interface GrantedTokens {
  accessToken: string;
  /** ms since epoch. */
  expiresAt: number;
  refreshToken?: string;
  scope: string | null;
}

/** http allowed only on loopback, and only when the connector itself is on loopback http (a dev setup). */
function allowedUrl(raw: string | undefined, connectorUrl: string): boolean {
  if (!raw) return false;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return false;
  }
  if (u.username || u.password) return false;
  if (u.protocol === 'https:') return true;
  const loopback = (h: string) => h === '127.0.0.1' || h === '[::1]' || h === 'localhost';
  return (
    u.protocol === 'http:' &&
    loopback(u.hostname) &&
    new URL(connectorUrl).protocol === 'http:' &&
    loopback(new URL(connectorUrl).hostname)
  );
}

/** The values of a token or revocation request that must never come back: secrets and one-time values. */
function secretsOf(init: RequestInit | undefined): string[] {
  const out: string[] = [];
  if (init?.body instanceof URLSearchParams)
    for (const k of ['client_secret', 'code_verifier', 'code']) out.push(...init.body.getAll(k));
  const auth = new Headers(init?.headers).get('authorization');
  if (auth?.toLowerCase().startsWith('basic ')) {
    const pair = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    out.push(decodeURIComponent(pair.slice(pair.indexOf(':') + 1)));
  }
  return out.filter((s) => s.length >= 8);
}

/**
 * The fetch every OAuth request of a connector goes through. Redirects are never followed here:
 * one to another origin is refused (ERR_CONNECTOR_OAUTH_REDIRECT); one within the origin is
 * handed back, and the SDK follows it within the origin. The body is read whole (bounded), and
 * an answer to a request that carried a secret is refused when it contains that secret.
 */
export function guardedFetch(timeoutMs = REQUEST_TIMEOUT_MS): FetchLike {
  return async (url, init) => {
    const target = new URL(String(url));
    let res: Response;
    try {
      res = await fetch(target, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      // A TypeError would make the SDK retry without headers (its CORS path): say what it is instead.
      throw new AppError('ERR_CONNECTOR_OAUTH_DISCOVERY', `${target.origin} is unreachable`, {
        retryable: true,
        cause: err,
      });
    }
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location');
      const next = to ? new URL(to, target) : undefined;
      await res.body?.cancel();
      if (!next || next.origin !== target.origin)
        throw new AppError(
          'ERR_CONNECTOR_OAUTH_REDIRECT',
          `${target.origin} redirected to ${next ? next.origin : 'nowhere'}: not followed`,
        );
      return new Response(null, { status: res.status, headers: { location: next.href } });
    }
    const bytes = await readBounded(res);
    const text = bytes.toString('utf8');
    if (secretsOf(init).some((s) => text.includes(s)))
      throw new AppError(
        'ERR_CONNECTOR_OAUTH_ECHO',
        `${target.origin} echoed a secret of the request in its answer: refused`,
      );
    return new Response(bytes.length ? new Uint8Array(bytes) : null, { status: res.status, headers: res.headers });
  };
}

async function readBounded(res: Response): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (!res.body) return Buffer.alloc(0);
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES)
      throw new AppError(
        'ERR_CONNECTOR_OAUTH_DISCOVERY',
        `answer of ${new URL(res.url || 'http://x').origin} is larger than ${MAX_ANSWER_BYTES} bytes`,
      );
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** Run an SDK step; what it throws becomes `code` with a safe message (the SDK's may quote answer bodies). */
async function step<T>(code: ErrorCode, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isAppError(err)) throw err;
    const name = (err as { errorCode?: unknown }).errorCode;
    const kind = typeof name === 'string' && /^[a-z_]{1,40}$/.test(name) ? name : undefined;
    throw new AppError(code, `${what} failed${kind ? ` (${kind})` : ''}`, {
      details: kind ? { oauth_error: kind } : undefined,
      cause: err,
    });
  }
}

/** The `resource_metadata` and `scope` a 401 from the MCP server names (RFC 9728 §5.1, RFC 6750 §3), if any. */
async function resourceMetadataHint(
  serverUrl: string,
  fetchFn: FetchLike,
): Promise<{ url?: URL; scope?: string } | undefined> {
  try {
    const res = await fetchFn(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'airlock', version: '1' } },
      }),
    });
    if (res.status !== 401) return undefined;
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
    return { url: resourceMetadataUrl, scope: scope || undefined };
  } catch (err) {
    if (isAppError(err, 'ERR_CONNECTOR_OAUTH_REDIRECT')) throw err;
    return undefined; // the well-known URL is tried next
  }
}

/**
 * The authorization server's metadata at the SDK's discovery URLs, in its order (RFC 8414, then
 * OpenID discovery, path-aware): the first 2xx is it, a 4xx (or a redirect) moves on.
 */
async function authorizationServerMetadata(
  as: string,
  fetchFn: FetchLike,
): Promise<AuthorizationServerMetadata | undefined> {
  for (const { url } of buildDiscoveryUrls(as)) {
    const res = await fetchFn(url, { headers: { accept: 'application/json' } });
    if (res.status >= 500)
      throw new AppError('ERR_CONNECTOR_OAUTH_DISCOVERY', `authorization server metadata: http_${res.status}`);
    if (res.status !== 200) continue;
    const parsed = OAuthMetadataSchema.safeParse(await res.json().catch(() => undefined));
    if (!parsed.success)
      throw new AppError(
        'ERR_CONNECTOR_OAUTH_DISCOVERY',
        'the authorization server metadata is not valid JSON metadata',
      );
    return parsed.data;
  }
  return undefined;
}

const sameIssuer = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/** Discover the connector's authorization server (checks: resource, issuer, code + S256, endpoints). */
export async function discover(connectorUrl: string, fetchFn: FetchLike = guardedFetch()): Promise<DiscoveredServer> {
  const bad = (why: string) => new AppError('ERR_CONNECTOR_OAUTH_DISCOVERY', why);
  const hint = await resourceMetadataHint(connectorUrl, fetchFn);
  if (hint?.url && !allowedUrl(hint.url.href, connectorUrl))
    throw bad('the resource metadata URL the server names is not https');
  const prm = await step('ERR_CONNECTOR_OAUTH_DISCOVERY', 'protected-resource metadata', () =>
    discoverOAuthProtectedResourceMetadata(connectorUrl, { resourceMetadataUrl: hint?.url }, fetchFn),
  );
  if (!checkResourceAllowed({ requestedResource: connectorUrl, configuredResource: prm.resource }))
    throw bad(`the protected-resource metadata is for ${prm.resource}, not for this connector`);
  const as = prm.authorization_servers?.[0];
  if (!as || !allowedUrl(as, connectorUrl))
    throw bad('the protected-resource metadata names no (https) authorization server');
  const metadata = await authorizationServerMetadata(as, fetchFn);
  if (!metadata) throw bad(`no authorization server metadata at ${new URL(as).origin}`);
  if (!sameIssuer(metadata.issuer, as)) throw bad('the authorization server metadata names another issuer');
  if (!metadata.response_types_supported.includes('code'))
    throw bad('the authorization server has no authorization code flow');
  if (!metadata.code_challenge_methods_supported?.includes('S256'))
    throw bad('the authorization server does not advertise PKCE S256');
  for (const e of [metadata.authorization_endpoint, metadata.token_endpoint, metadata.revocation_endpoint]) {
    if (e !== undefined && !allowedUrl(e, connectorUrl))
      throw bad('an endpoint of the authorization server is not https');
  }
  // The scope the server's 401 asks for comes first, then the ones its metadata lists (MCP's scope selection).
  return {
    issuer: metadata.issuer,
    metadata,
    resource: prm.resource,
    scope: hint?.scope ?? (prm.scopes_supported?.join(' ') || undefined),
  };
}

/**
 * The client to use: Airlock's client ID metadata document (its https URL is the client id) when
 * the authorization server takes them, else the connector's pre-registered client.
 */
export function chooseClient(
  metadata: AuthorizationServerMetadata,
  settings: Pick<OAuthConnectorSettings, 'clientId' | 'clientSecret'>,
  metadataDocumentUrl: string,
): ConnectorClient {
  const cimd = metadata.client_id_metadata_document_supported === true;
  if (cimd && metadataDocumentUrl.startsWith('https://')) return { client_id: metadataDocumentUrl };
  if (settings.clientId)
    return {
      client_id: settings.clientId,
      ...(settings.clientSecret ? { client_secret: settings.clientSecret.reveal() } : {}),
    };
  throw new AppError(
    'ERR_CONNECTOR_OAUTH_CLIENT',
    'the authorization server takes no client ID metadata document from this origin and the connector has no pre-registered client',
  );
}

/**
 * The client a connect uses: the one `chooseClient` picks, else — when the authorization server
 * offers dynamic registration (RFC 7591) and the connector has no client — one registered there
 * now and kept by `keep` as the connector's client (which answers the client to use: a
 * registration that raced another keeps the first).
 */
export async function obtainClient(
  server: Pick<DiscoveredServer, 'issuer' | 'metadata'>,
  settings: Pick<OAuthConnectorSettings, 'clientId' | 'clientSecret'>,
  metadataDocumentUrl: string,
  a: { redirectUri: string; scope?: string; keep?: (client: ConnectorClient) => Promise<ConnectorClient> },
  fetchFn: FetchLike = guardedFetch(),
): Promise<ConnectorClient> {
  try {
    return chooseClient(server.metadata, settings, metadataDocumentUrl);
  } catch (err) {
    if (!isAppError(err, 'ERR_CONNECTOR_OAUTH_CLIENT') || !server.metadata.registration_endpoint || !a.keep) throw err;
  }
  if (!allowedUrl(server.metadata.registration_endpoint, server.issuer))
    throw new AppError(
      'ERR_CONNECTOR_OAUTH_DISCOVERY',
      'the registration endpoint of the authorization server is not https',
    );
  const methods = server.metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  // A confidential client where the server takes one: the secret stays on the host, encrypted.
  const auth =
    ['client_secret_basic', 'client_secret_post', 'none'].find((m) => methods.includes(m)) ?? 'client_secret_basic';
  // The SDK keeps only RFC 7591's fields; RFC 7592's (how to delete the client) are read here.
  const answer: { json?: { registration_client_uri?: unknown; registration_access_token?: unknown } } = {};
  const keepAnswer: FetchLike = async (url, init) => {
    const res = await fetchFn(url, init);
    if (res.ok)
      answer.json = (await res
        .clone()
        .json()
        .catch(() => undefined)) as typeof answer.json;
    return res;
  };
  const registered = await step('ERR_CONNECTOR_OAUTH_CLIENT', 'client registration', () =>
    registerClient(server.issuer, {
      metadata: server.metadata,
      clientMetadata: {
        client_name: 'Airlock',
        redirect_uris: [a.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: auth,
      },
      scope: a.scope,
      fetchFn: keepAnswer,
    }),
  );
  const kept = await a.keep({
    client_id: registered.client_id,
    ...(registered.client_secret ? { client_secret: registered.client_secret } : {}),
  });
  // Another registration came first (two users, or two nodes, at once): this one is not used, so
  // it is deleted again where the server allows it (RFC 7592), not left behind at the server.
  if (kept.client_id !== registered.client_id && answer.json)
    await deregister(answer.json, server.metadata.registration_endpoint, fetchFn);
  return kept;
}

/**
 * Delete a registered client (RFC 7592 §2.3: DELETE its registration_client_uri with its
 * registration access token). Best effort: a server without client management, or one that
 * refuses, keeps an unused client, which holds no grant. The token goes only to the origin of
 * the registration endpoint.
 */
async function deregister(
  client: { registration_client_uri?: unknown; registration_access_token?: unknown },
  registrationEndpoint: string,
  fetchFn: FetchLike,
): Promise<boolean> {
  const uri = typeof client.registration_client_uri === 'string' ? client.registration_client_uri : '';
  const token = typeof client.registration_access_token === 'string' ? client.registration_access_token : '';
  if (!uri || !token) return false;
  try {
    if (new URL(uri).origin !== new URL(registrationEndpoint).origin) return false;
    const res = await fetchFn(uri, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    await res.body?.cancel();
    return res.status === 204;
  } catch {
    return false;
  }
}

/** The authorization URL (code + PKCE S256 + resource) and the verifier to keep for the callback. */
export async function authorizationRequest(
  server: DiscoveredServer,
  client: ConnectorClient,
  redirectUri: string,
  state: string,
  scope?: string,
): Promise<{ url: string; verifier: string }> {
  const { authorizationUrl, codeVerifier } = await step('ERR_CONNECTOR_OAUTH_DISCOVERY', 'authorization request', () =>
    startAuthorization(server.issuer, {
      metadata: server.metadata,
      clientInformation: client as OAuthClientInformationMixed,
      redirectUrl: redirectUri,
      state,
      scope,
      resource: server.resource,
    }),
  );
  return { url: authorizationUrl.href, verifier: codeVerifier };
}

function checked(tokens: OAuthTokens, now: number): GrantedTokens {
  if (!tokens.access_token || tokens.token_type.toLowerCase() !== 'bearer')
    throw new AppError('ERR_CONNECTOR_OAUTH_TOKEN', 'the token endpoint answered no bearer access token');
  const expiresIn = tokens.expires_in && tokens.expires_in > 0 ? tokens.expires_in : DEFAULT_EXPIRES_IN_S;
  return {
    accessToken: tokens.access_token,
    expiresAt: now + expiresIn * 1000,
    refreshToken: tokens.refresh_token || undefined,
    scope: tokens.scope ?? null,
  };
}

/** The authorization_code grant (with the verifier and the resource). */
export async function exchangeCode(
  server: Pick<DiscoveredServer, 'issuer' | 'metadata' | 'resource'>,
  client: ConnectorClient,
  a: { code: string; verifier: string; redirectUri: string },
  fetchFn: FetchLike = guardedFetch(),
  now = Date.now(),
): Promise<GrantedTokens> {
  const tokens = await step('ERR_CONNECTOR_OAUTH_TOKEN', 'token request', () =>
    exchangeAuthorization(server.issuer, {
      metadata: server.metadata,
      clientInformation: client as OAuthClientInformationMixed,
      authorizationCode: a.code,
      codeVerifier: a.verifier,
      redirectUri: a.redirectUri,
      resource: server.resource,
      fetchFn,
    }),
  );
  return checked(tokens, now);
}

/** The refresh_token grant (with the resource); a refresh token not rotated is kept. */
export async function refreshGrant(
  server: { issuer: string; metadata: AuthorizationServerMetadata; resource: string | null },
  client: ConnectorClient,
  refreshToken: string,
  fetchFn: FetchLike = guardedFetch(),
  now = Date.now(),
): Promise<GrantedTokens> {
  const tokens = await step('ERR_CONNECTOR_OAUTH_TOKEN', 'refresh', () =>
    refreshAuthorization(server.issuer, {
      metadata: server.metadata,
      clientInformation: client as OAuthClientInformationMixed,
      refreshToken,
      resource: server.resource ?? undefined,
      fetchFn,
    }),
  );
  return checked(tokens, now);
}

/**
 * Revoke a token at the authorization server's revocation endpoint (RFC 7009), authenticated as
 * the client. Never throws: answers whether the server confirmed it (or why not, safe to log).
 */
export async function revoke(
  metadata: AuthorizationServerMetadata,
  client: ConnectorClient,
  token: string,
  hint: 'refresh_token' | 'access_token',
  fetchFn: FetchLike = guardedFetch(),
): Promise<{ revoked: boolean; reason?: string }> {
  const endpoint = metadata.revocation_endpoint;
  if (!endpoint) return { revoked: false, reason: 'no revocation endpoint' };
  const body = new URLSearchParams({ token, token_type_hint: hint, client_id: client.client_id });
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (client.client_secret) {
    const methods =
      metadata.revocation_endpoint_auth_methods_supported ?? metadata.token_endpoint_auth_methods_supported ?? [];
    if (methods.includes('client_secret_post') && !methods.includes('client_secret_basic'))
      body.set('client_secret', client.client_secret);
    else
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
  }
  try {
    const res = await fetchFn(endpoint, { method: 'POST', headers, body });
    return res.ok ? { revoked: true } : { revoked: false, reason: `http_${res.status}` };
  } catch (err) {
    return { revoked: false, reason: isAppError(err) ? err.code : 'unreachable' };
  }
}
