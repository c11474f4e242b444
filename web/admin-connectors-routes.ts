import type { Router } from 'express';
import { logAction } from '../domain/action-log.js';
import { ConnectorService, getConnector, listConnectors } from '../domain/connectors/index.js';
import {
  AppError,
  ConnectorChangeSchema,
  ConnectorCreateSchema,
  ConnectorToolModesSchema,
  type ConnectorView,
} from '../core/index.js';
import { asyncHandler, type WebContext } from './context.js';
import { parseFields, superuserRouter } from './route-kit.js';
import type { ConnectorList, ConnectorSaved } from './admin-api.js';

/** What the action log keeps of a connector: never a secret, only whether there is one. */
function logged(c: ConnectorView) {
  return {
    id: c.id,
    label: c.label,
    url: c.url,
    transport: c.transport,
    audience: c.audience,
    auth_kind: c.auth_kind,
    has_secret: c.has_secret,
    enabled: c.enabled,
    tools: c.tools.map((t) => `${t.name}:${t.mode}`),
  };
}

/**
 * /api/admin/connectors (superuser, session + CSRF): remote MCP servers (docs/connectors.md).
 * GET lists; POST adds one and lists its tools from the server (a server that does not answer as
 * MCP saves nothing); PATCH /:id changes one; DELETE /:id removes one; POST /:id/refresh lists the
 * tools again (modes kept); PATCH /:id/tools sets tool modes. Each change is in the action log;
 * no answer and no log entry holds a secret.
 */
export function adminConnectorRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  const svc = () =>
    new ConnectorService({
      db,
      enc: ctx.encryptor,
      allowHttpLoopback: ctx.config.connectors?.allowHttpLoopback ?? false,
      tokens: ctx.services.connectorTokens,
    });
  const log = (event: string, actorId: number, data: Record<string, unknown>) =>
    logAction(db, { event, actorId, subjectId: null, data });

  r.get(
    '/',
    asyncHandler(async (_req, res) => {
      res.json({ connectors: await listConnectors(db) } satisfies ConnectorList);
    }),
  );
  r.get(
    '/:id',
    asyncHandler(async (req, res) => {
      const c = await getConnector(db, String(req.params.id));
      if (!c) throw new AppError('ERR_CONNECTOR_NOT_FOUND', 'no such connector');
      res.json(c satisfies ConnectorView);
    }),
  );
  r.post(
    '/',
    asyncHandler(async (req, res) => {
      const body = parseFields(ConnectorCreateSchema, req.body, 'a connector');
      const out = await svc().create(body, req.user!.id);
      await log('connector.created', req.user!.id, { ...logged(out.connector), skipped: out.skipped.length });
      res.status(201).json(out satisfies ConnectorSaved);
    }),
  );
  r.patch(
    '/:id',
    asyncHandler(async (req, res) => {
      const change = parseFields(ConnectorChangeSchema, req.body, 'a connector');
      const out = await svc().update(String(req.params.id), change);
      const secretChanged = change.auth_secret !== undefined || change.oauth_client_secret !== undefined;
      await log('connector.updated', req.user!.id, {
        ...logged(out),
        fields: Object.keys(change).filter((k) => !k.includes('secret')),
        ...(secretChanged ? { secret_changed: true } : {}),
      });
      res.json(out satisfies ConnectorView);
    }),
  );
  r.delete(
    '/:id',
    asyncHandler(async (req, res) => {
      const id = String(req.params.id);
      await svc().delete(id);
      await log('connector.deleted', req.user!.id, { id });
      res.status(204).end();
    }),
  );
  r.post(
    '/:id/refresh',
    asyncHandler(async (req, res) => {
      const out = await svc().refreshTools(String(req.params.id), req.user!.id);
      await log('connector.tools_refreshed', req.user!.id, { ...logged(out.connector), skipped: out.skipped.length });
      res.json(out satisfies ConnectorSaved);
    }),
  );
  r.patch(
    '/:id/tools',
    asyncHandler(async (req, res) => {
      const { modes } = parseFields(ConnectorToolModesSchema, req.body, 'tool modes');
      const out = await svc().setToolModes(String(req.params.id), modes);
      await log('connector.tools_changed', req.user!.id, { id: out.id, modes });
      res.json(out satisfies ConnectorView);
    }),
  );
  return r;
}
