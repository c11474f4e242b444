import express, { type Express, type NextFunction, type Request, type Response, type Router } from 'express';
import session from 'express-session';
import { randomUUID } from 'node:crypto';
import { AppError, safeEqual } from '../core/index.js';
import { getUserById } from '../domain/users.js';
import { accountRoutes } from './account-routes.js';
import { authRoutes, SESSION_COOKIE } from './auth-routes.js';
import { adminUserRoutes } from './admin-users-routes.js';
import { adminSessionRoutes } from './admin-sessions-routes.js';
import { adminAuditRoutes } from './admin-audit-routes.js';
import { adminMailPolicyRoutes } from './admin-mail-policy-routes.js';
import { adminChatModelRoutes } from './admin-chat-models-routes.js';
import { adminConnectorRoutes } from './admin-connectors-routes.js';
import { adminBudgetRoutes, adminUsageCsvRoutes, adminUsageRoutes } from './admin-usage-routes.js';
import { settingsRoutes } from './settings-routes.js';
import { biInternalRoutes, dataAuthorizationRoutes } from './data-access/index.js';
import { chatRoutes } from './chat-routes.js';
import type { WebContext } from './context.js';
import { useContractCheck } from './contract.js';
import { errorMiddleware, notFound } from './errors.js';
import { agentApiRoutes, memoryRoutes } from './memory-routes.js';
import { sessionSecret } from './session-secret.js';
import { uiRoutes } from './ui.js';
import { identityRouters } from './identity/index.js';
import { openApiDocument } from './openapi.js';
import { fleetRoutes, nodeAuth } from './fleet.js';
import { refuseQueryArrays } from './query-params.js';
import { loggedPath, shareRoutes } from './share-routes.js';
import { feedbackRoutes } from './feedback-routes.js';
import { clientMetadataRoutes, connectorOAuthRoutes } from './connector-oauth-routes.js';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SESSION_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/**
 * The embedded express app. Area routers are mounted here; the daemon hands in its
 * services through ctx.services (interfaces each area declares).
 */
export function createApp(ctx: WebContext): Express {
  const app = express();
  app.disable('x-powered-by');
  // Only the reverse proxies the operator names may set the client address (X-Forwarded-For):
  // otherwise any local client could pick its own address and dodge the login limits.
  app.set('trust proxy', ctx.config.trustProxy.length ? ctx.config.trustProxy : false);
  app.set('etag', false);
  if (ctx.config.contractLog) useContractCheck(app, ctx.config.contractLog);
  useRequestBasics(app, ctx);
  useSessionUserAndCsrf(app, ctx);

  // `?user_id[]=2` and the like: refused, never ignored (web/query-params.ts).
  app.use('/api', refuseQueryArrays);
  app.use('/api/auth', authRoutes(ctx));
  // Identity: SSO redirect + callback (outside /api, see web/identity/sso-routes.ts on CSRF) and /api/identity.
  const identity = identityRouters(ctx);
  app.use(identity.sso);
  app.use('/api/identity', identity.api);
  // Each area's router under its path, in this order (read-only chat links: web/share-routes.ts).
  const areas: [string, (ctx: WebContext) => Router][] = [
    ['/api/data-authorization', dataAuthorizationRoutes],
    ['/api/internal', biInternalRoutes],
    ['/api/memories', memoryRoutes],
    ['/api/agent', agentApiRoutes],
    ['/api/account', accountRoutes],
    ['/api/connections', connectorOAuthRoutes],
    ['/api/admin/sessions', adminSessionRoutes],
    ['/api/admin/turns', adminAuditRoutes],
    ['/api/admin/users', adminUserRoutes],
    ['/api/admin/mail-policy', adminMailPolicyRoutes],
    ['/api/admin/chat-models', adminChatModelRoutes],
    ['/api/admin/connectors', adminConnectorRoutes],
    ['/api/admin/usage', adminUsageRoutes],
    ['/api/admin/usage.csv', adminUsageCsvRoutes],
    ['/api/admin/budgets', adminBudgetRoutes],
    ['/api', shareRoutes],
    ['/api/chat', feedbackRoutes],
    ['/api/settings', settingsRoutes],
  ];
  for (const [path, routes] of areas) app.use(path, routes(ctx));
  const chat = chatRoutes(ctx);
  app.use('/api/chat', chat);
  // The chat routes another node forwards to this one (the session's sandbox runs here), signed.
  app.use('/api/fleet', nodeAuth(ctx), fleetRoutes(ctx, chat));

  mountProbes(app, ctx);

  app.use('/api', notFound);
  // Airlock's client ID metadata document, fetched by connectors' authorization servers.
  app.use(clientMetadataRoutes(ctx));
  app.use(uiRoutes());
  app.use(errorMiddleware);
  return app;
}

/** Request id and log line per request, the JSON-only rule and the body parsers. */
function useRequestBasics(app: Express, ctx: WebContext): void {
  app.use((req, res, next) => {
    req.id = randomUUID();
    req.log = ctx.log.child({ reqId: req.id });
    res.setHeader('X-Request-Id', req.id);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    const started = process.hrtime.bigint();
    // Taken now: by 'finish' a sub-router has cut req.path down to its own part.
    const path = loggedPath(req.path);
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Path only: query values may carry codes or tokens.
      req.log.info({ method: req.method, path, status: res.statusCode, ms: Math.round(ms) }, 'request');
    });
    next();
  });

  // The JSON API takes JSON only: a body of any other type (a form post, text/plain, …) is 415
  // before it is parsed, so no route ever sees form fields, and a cross-site form cannot reach it.
  app.use('/api', requireJsonBody);
  // inflate: false: compressed request bodies (gzip, deflate, br) are refused with 415, so the
  // body limit is a limit on what we hold in memory, not on the compressed bytes.
  app.use(
    express.json({
      limit: `${ctx.config.bodyLimitKb}kb`,
      inflate: false,
      verify: (req, _res, buf) => {
        (req as Request).rawBody = buf;
      },
    }),
  );
  app.use(express.urlencoded({ extended: false, limit: `${ctx.config.bodyLimitKb}kb`, inflate: false }));
}

/** The login session cookie, the logged-in user (re-read per request) and the CSRF check on /api. */
function useSessionUserAndCsrf(app: Express, ctx: WebContext): void {
  app.use(
    session({
      name: SESSION_COOKIE,
      secret: sessionSecret(ctx.config),
      store: ctx.sessions,
      // An https public origin means TLS ends at a proxy in front; it says so in
      // X-Forwarded-Proto. Only the Secure cookie decision reads it (req.ip does not).
      proxy: ctx.config.secureCookies ? true : undefined,
      resave: false,
      saveUninitialized: false,
      rolling: true,
      cookie: {
        httpOnly: true,
        sameSite: 'lax',
        secure: ctx.config.secureCookies,
        path: '/',
        maxAge: SESSION_MAX_AGE_MS,
      },
    }),
  );

  // The logged-in user, re-read each request so deactivation takes effect at once.
  app.use((req, _res, next) => {
    const id = req.session.userId;
    if (id === undefined) return next();
    getUserById(ctx.database.sql, id).then((u) => {
      if (u && u.is_active) {
        req.user = u;
        req.log = req.log.child({ userId: u.id });
      } else delete req.session.userId;
      next();
    }, next);
  });

  // CSRF: every unsafe method under /api/ a browser session can reach (login included)
  // needs the session's token in X-CSRF-Token. /api/internal/* authenticates by secret.
  app.use('/api', (req, _res, next) => {
    // /api/internal/* authenticates by secret, /api/fleet/* by a node signature (web/fleet.ts).
    if (!UNSAFE.has(req.method) || req.path.startsWith('/internal/') || req.path.startsWith('/fleet/')) return next();
    const expected = req.session.csrfToken;
    const got = req.get('x-csrf-token');
    if (!expected || !got || !safeEqual(expected, got)) {
      return next(new AppError('ERR_AUTH_CSRF', 'missing or wrong CSRF token (GET /api/auth/csrf)'));
    }
    next();
  });
}

/** /api/openapi.json, /healthz and (when the daemon has metrics) /metrics. */
function mountProbes(app: Express, ctx: WebContext): void {
  app.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument(ctx.config.publicOrigin));
  });

  // Liveness and the database: 503 ERR_DB_UNAVAILABLE while the database does not answer.
  app.get('/healthz', async (_req, res) => {
    const db = ctx.database;
    const up = await db.ping();
    const body = { ok: up, database: db.engine, schema_version: db.schemaVersion, node: ctx.config.node.id };
    if (up) return res.json(body);
    res.setHeader('Retry-After', '5');
    res.status(503).json({ ...body, error: { code: 'ERR_DB_UNAVAILABLE', message: 'the database does not answer' } });
  });

  // Prometheus metrics (no secrets or user data in them; restrict with the listen address
  // or a reverse proxy if the port is reachable by others).
  const metrics = ctx.services.metrics;
  app.get('/metrics', async (_req, res, next) => {
    try {
      res.setHeader('Content-Type', metrics.registry.contentType);
      res.end(await metrics.registry.metrics());
    } catch (err) {
      next(err);
    }
  });
}

/** A request that carries a body (a declared length above 0, or chunked). */
function hasBody(req: Request): boolean {
  const te = req.headers['transfer-encoding'];
  const cl = req.headers['content-length'];
  return te !== undefined || (cl !== undefined && cl !== '0');
}

/**
 * Every /api route that takes a body takes JSON: anything else is 415
 * ERR_HTTP_UNSUPPORTED_MEDIA_TYPE, and a body with a Content-Encoding other than identity is
 * 415 ERR_HTTP_UNSUPPORTED_ENCODING. Bodiless requests (GET, a POST with no body) pass.
 */
const UPLOAD_PATH = /^\/chat\/(?:sessions\/[^/]+\/)?files$/;

function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
  if (!hasBody(req)) return next();
  const enc = String(req.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (enc !== 'identity')
    return next(new AppError('ERR_HTTP_UNSUPPORTED_ENCODING', 'compressed request bodies are not accepted'));
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  // The one exception: a file uploaded into a chat is its raw bytes (web/upload-routes.ts).
  if (type === 'application/octet-stream' && req.method === 'POST' && UPLOAD_PATH.test(req.path)) return next();
  if (type !== 'application/json') {
    return next(new AppError('ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json'));
  }
  next();
}
