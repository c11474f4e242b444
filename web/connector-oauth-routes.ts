/**
 * OAuth per user for connectors (docs/connectors.md, "OAuth per user"): a user connects an OAuth
 * connector from the chat or from Settings; the host is the OAuth client, the tokens stay on the
 * host (encrypted at rest), the sandbox never sees them.
 *   GET    /api/connections              the OAuth connectors the user may use, connected or not
 *   GET    /api/connections/:id          one of them
 *   POST   /api/connections/:id/connect  {return_to?} → {authorization_url}
 *   GET    /api/connections/callback     the authorization server's redirect → 302 return_to
 *   DELETE /api/connections/:id          revoke at the authorization server (RFC 7009), delete
 *   GET    /oauth/client-metadata.json   Airlock's client ID metadata document (public)
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { AppError, randomToken } from '../core/index.js';
import type { ConnectorConnectionView, OAuthConnectorLookup, OAuthConnectorSettings } from '../core/connector-oauth.js';
import {
  authorizationRequest,
  discover,
  exchangeCode,
  obtainClient,
  revoke,
  type AuthorizationServerMetadata,
  type ConnectorClient,
} from '../domain/connector-oauth/client.js';
import { ConnectorTokenStore } from '../domain/connector-oauth/store.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { resolveRedirect } from './redirect.js';
import { validateBody } from './validate.js';
import { saveSession } from './auth-routes.js';
import type {
  AuthorizationUrl,
  ClientMetadata,
  ConnectorConnectionList,
  ConnectorDisconnected,
} from './platform-api.js';

/** How long a started connect stays valid. */
export const CONNECT_STATE_TTL_MS = 10 * 60 * 1000;
const STATE_KEY = 'connector:';
/** The path of Airlock's client ID metadata document; its full URL is the client id. */
export const CLIENT_METADATA_PATH = '/oauth/client-metadata.json';
export const CONNECTOR_CALLBACK_PATH = '/api/connections/callback';

export const ConnectorConnectSchema = z.strictObject({ return_to: z.string().max(512).optional() });

/** A started connect, kept in the browser's login session (so bound to it) under its state. */
interface PendingConnect {
  connectorId: string;
  userId: number;
  verifier: string;
  returnTo: string;
  at: number;
  issuer: string;
  metadata: AuthorizationServerMetadata;
  resource: string;
  clientId: string;
  scope: string | null;
}

interface Deps {
  ctx: WebContext;
  lookup: OAuthConnectorLookup;
  store: ConnectorTokenStore;
  redirectUri: string;
  metadataUrl: string;
}

const bag = (req: Request): Record<string, unknown> => (req.session.oauth ??= {});

/** The connector, when it is an OAuth connector this user may use; else 404 (never says which). */
async function usable(d: Deps, id: string, userId: number): Promise<OAuthConnectorSettings> {
  const c = await d.lookup.get(id);
  if (!c || (d.lookup.mayUse && !(await d.lookup.mayUse(id, userId))))
    throw new AppError('ERR_CONNECTOR_OAUTH_UNKNOWN', `no OAuth connector '${id.slice(0, 64)}' for you`);
  return c;
}

/** The client a grant uses, with the pre-registered secret read from the registry when it is that client. */
function clientFor(c: OAuthConnectorSettings, clientId: string): ConnectorClient {
  const secret = c.clientId === clientId ? c.clientSecret?.reveal() : undefined;
  return { client_id: clientId, ...(secret ? { client_secret: secret } : {}) };
}

async function listView(d: Deps, userId: number, only?: string): Promise<ConnectorConnectionView[]> {
  const all = (await d.lookup.forUser(userId)) ?? [];
  const connected = await d.store.connectedOf(userId);
  return all
    .filter((c) => only === undefined || c.id === only)
    .map((c) => {
      const g = connected.get(c.id);
      if (!g) return { connector_id: c.id, label: c.label, connected: false };
      return {
        connector_id: c.id,
        label: c.label,
        connected: true,
        connected_at: g.connectedAt,
        access_expires_at: new Date(g.accessExpiresAt).toISOString(),
        offline: g.offline,
        scope: g.scope,
      };
    });
}

/** POST /:id/connect: discovery, the client, a state bound to user and browser session, the authorization URL. */
async function startConnect(d: Deps, req: Request, res: Response): Promise<void> {
  const body = validateBody(ConnectorConnectSchema, req.body ?? {});
  const returnTo = body.return_to === undefined ? '/' : resolveRedirect(body.return_to, d.ctx.config.publicOrigin);
  if (returnTo === null)
    throw new AppError('ERR_CONNECTOR_OAUTH_RETURN_TO', 'return_to must be a path on this service');
  const userId = req.user!.id;
  const c = await usable(d, String(req.params.id), userId);
  const server = await discover(c.url);
  const scope = c.scope ?? server.scope;
  const keep = d.lookup.keepRegisteredClient?.bind(d.lookup, c.id);
  const client = await obtainClient(server, c, d.metadataUrl, { redirectUri: d.redirectUri, scope, keep });
  const state = randomToken(24);
  const { url, verifier } = await authorizationRequest(server, client, d.redirectUri, state, scope);
  const pending = bag(req);
  // Stale handshakes go, so the session does not grow.
  for (const [k, v] of Object.entries(pending))
    if (k.startsWith(STATE_KEY) && Date.now() - (v as PendingConnect).at > CONNECT_STATE_TTL_MS) delete pending[k];
  pending[STATE_KEY + state] = {
    connectorId: c.id,
    userId,
    verifier,
    returnTo,
    at: Date.now(),
    issuer: server.issuer,
    metadata: server.metadata,
    resource: server.resource,
    clientId: client.client_id,
    scope: scope ?? null,
  } satisfies PendingConnect;
  await saveSession(req);
  req.log.info(
    {
      event: 'connector_connect_started',
      connector: c.id,
      client:
        client.client_id === d.metadataUrl
          ? 'metadata_document'
          : client.client_id === c.clientId
            ? 'pre_registered'
            : 'registered',
    },
    'connector connect started',
  );
  res.json({ authorization_url: url } satisfies AuthorizationUrl);
}

/** The started connect a callback's state names, taken out (single use) and checked. */
function takePending(req: Request): PendingConnect {
  const state = typeof req.query.state === 'string' ? req.query.state : '';
  const pending = bag(req);
  const p = state ? (pending[STATE_KEY + state] as PendingConnect | undefined) : undefined;
  if (state) delete pending[STATE_KEY + state];
  if (!p || p.userId !== req.user!.id || Date.now() - p.at > CONNECT_STATE_TTL_MS)
    throw new AppError('ERR_CONNECTOR_OAUTH_STATE', 'unknown, used or expired connect attempt; start again');
  return p;
}

/** GET /callback: state, issuer (RFC 9207), code → tokens (checked), saved in one transaction, 302 back. */
async function completeConnect(d: Deps, req: Request, res: Response): Promise<void> {
  const p = takePending(req);
  // The state is used up whatever follows: a replayed callback finds nothing.
  await saveSession(req);
  const iss = typeof req.query.iss === 'string' ? req.query.iss : undefined;
  const issRequired =
    (p.metadata as { authorization_response_iss_parameter_supported?: boolean })
      .authorization_response_iss_parameter_supported === true;
  if ((iss !== undefined && iss !== p.issuer) || (iss === undefined && issRequired))
    throw new AppError('ERR_CONNECTOR_OAUTH_ISSUER', 'the authorization answer comes from another issuer');
  if (typeof req.query.error === 'string') {
    const kind = /^[a-z_]{1,40}$/.test(req.query.error) ? req.query.error : 'error';
    throw new AppError('ERR_CONNECTOR_OAUTH_DENIED', `the authorization server did not grant access (${kind})`);
  }
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  if (!code) throw new AppError('ERR_VALIDATION', 'code: missing');
  const c = await usable(d, p.connectorId, p.userId);
  const t = await exchangeCode(p, clientFor(c, p.clientId), { code, verifier: p.verifier, redirectUri: d.redirectUri });
  await d.store.connect(
    c.id,
    p.userId,
    {
      clientId: p.clientId,
      issuer: p.issuer,
      metadata: p.metadata,
      resource: p.resource,
      scope: t.scope ?? p.scope,
      accessToken: t.accessToken,
      accessExpiresAt: t.expiresAt,
      refreshToken: t.refreshToken,
    },
    {
      event: 'connector.connected',
      actorId: p.userId,
      subjectId: p.userId,
      data: { connector: c.id, offline: !!t.refreshToken },
    },
  );
  req.log.info({ event: 'connector_connected', connector: c.id, offline: !!t.refreshToken }, 'connector connected');
  const back = new URL(p.returnTo, d.ctx.config.publicOrigin);
  back.searchParams.set('connected', c.id);
  // The fragment too: the chat's return_to is `/#/chat/<id>`, the chat the user was in.
  res.redirect(302, back.pathname + back.search + back.hash);
}

/** DELETE /:id: revoke at the authorization server, then delete the grant (whatever it answered). */
async function disconnect(d: Deps, req: Request, res: Response): Promise<void> {
  const userId = req.user!.id;
  const id = String(req.params.id);
  const c = await d.lookup.get(id);
  let outcome: { revoked: boolean; reason?: string } | undefined;
  try {
    const g = await d.store.grant(id, userId);
    if (g) {
      const client = c ? clientFor(c, g.clientId) : { client_id: g.clientId };
      // The access token first (it may outlive a refresh token's revocation at some servers), then the grant.
      const access = await revoke(g.metadata, client, g.accessToken, 'access_token');
      outcome = g.refreshToken ? await revoke(g.metadata, client, g.refreshToken, 'refresh_token') : access;
    }
  } catch (err) {
    // Undecryptable (the key changed): the grant goes anyway; nothing to revoke with.
    req.log.warn({ connector: id, err: (err as Error).message }, 'connector grant unreadable at disconnect');
  }
  const revoked = outcome?.revoked ?? null;
  const had = await d.store.remove(id, userId, {
    event: 'connector.disconnected',
    actorId: userId,
    subjectId: userId,
    severity: revoked === false ? 'warning' : 'info',
    data: { connector: id, revoked_at_server: revoked, ...(outcome?.reason ? { reason: outcome.reason } : {}) },
  });
  req.log.info(
    { event: 'connector_disconnected', connector: id, had, revoked, reason: outcome?.reason },
    'connector disconnected',
  );
  res.json({ connector_id: id, connected: false, had, revoked_at_server: revoked } satisfies ConnectorDisconnected);
}

/** /api/connections (see the file's head). */
export function connectorOAuthRoutes(ctx: WebContext): Router {
  const r = Router();
  const d: Deps = {
    ctx,
    // The connector registry, unless the daemon (or a test) hands in another lookup.
    lookup: ctx.services.oauthConnectors,
    store: new ConnectorTokenStore(ctx.database.sql, ctx.encryptor),
    redirectUri: ctx.config.publicOrigin + CONNECTOR_CALLBACK_PATH,
    metadataUrl: ctx.config.publicOrigin + CLIENT_METADATA_PATH,
  };
  r.get(
    '/',
    requireUser,
    asyncHandler(async (req, res) => {
      res.json({ connectors: await listView(d, req.user!.id) } satisfies ConnectorConnectionList);
    }),
  );
  r.get(
    '/callback',
    requireUser,
    asyncHandler((req, res) => completeConnect(d, req, res)),
  );
  r.get(
    '/:id',
    requireUser,
    asyncHandler(async (req, res) => {
      const [v] = await listView(d, req.user!.id, String(req.params.id));
      if (!v) throw new AppError('ERR_CONNECTOR_OAUTH_UNKNOWN', 'no such OAuth connector for you');
      res.json(v);
    }),
  );
  r.post(
    '/:id/connect',
    requireUser,
    asyncHandler((req, res) => startConnect(d, req, res)),
  );
  r.delete(
    '/:id',
    requireUser,
    asyncHandler((req, res) => disconnect(d, req, res)),
  );
  return r;
}

/**
 * Airlock's client ID metadata document (MCP authorization, "Client ID Metadata Documents"): the
 * document's own URL is the client id; a public client (no secret, PKCE) whose one redirect URI is
 * the connectors' callback. Authorization servers fetch it; it holds nothing secret.
 */
export function clientMetadataDocument(publicOrigin: string): ClientMetadata {
  return {
    client_id: publicOrigin + CLIENT_METADATA_PATH,
    client_name: 'Airlock',
    client_uri: publicOrigin,
    redirect_uris: [publicOrigin + CONNECTOR_CALLBACK_PATH],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

export function clientMetadataRoutes(ctx: WebContext): Router {
  const r = Router();
  const doc = clientMetadataDocument(ctx.config.publicOrigin);
  r.get(CLIENT_METADATA_PATH, (_req, res) => {
    res.setHeader('cache-control', 'public, max-age=3600');
    res.json(doc);
  });
  return r;
}
