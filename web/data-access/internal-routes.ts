import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { AppError, type Config } from '../../core/index.js';
import { logAction } from '../../domain/action-log.js';
import {
  COLUMN_RE,
  FILTER_LIMITS,
  TABLE_RE,
  compilePolicy,
  effectivePolicyOf,
  tableAccess,
} from '../../domain/data-access/index.js';
import { getUserById } from '../../domain/users.js';
import { asyncHandler, type WebContext } from '../context.js';
import { parseId, parseTableName, validateData } from './routes.js';

/**
 * Only a caller presenting MCP_INTERNAL_SECRET as `Authorization: Bearer <secret>` passes:
 * 401 ERR_AUTH_SECRET_REQUIRED without it, 403 ERR_AUTH_SECRET_INVALID when wrong.
 * The comparison is constant-time (Secret.equals). With no secret configured nobody passes.
 */
export function requireInternalSecret(config: Readonly<Config>): RequestHandler {
  return (req, _res, next) => {
    const h = req.get('authorization');
    const m = h ? /^Bearer[ ]+(\S+)\s*$/i.exec(h) : null;
    if (!m)
      return next(
        new AppError(
          'ERR_AUTH_SECRET_REQUIRED',
          'internal endpoint: Authorization: Bearer <MCP_INTERNAL_SECRET> required',
        ),
      );
    const secret = config.mcpInternalSecret;
    if (!secret || !secret.equals(m[1]))
      return next(new AppError('ERR_AUTH_SECRET_INVALID', 'internal endpoint: wrong secret'));
    next();
  };
}

/** The fields bi-audit keeps; everything else (sql, query, rows, values, …) is dropped unread. */
const AUDIT_FIELDS = ['user_id', 'table', 'decision', 'columns', 'reason'] as const;
const REASON_MAX = 500;

export const BI_AUDIT_SCHEMA = z.strictObject({
  user_id: z.int().min(1),
  table: z.string().min(1).max(256),
  decision: z.enum(['allowed', 'denied']),
  columns: z.array(z.string().max(256)).max(FILTER_LIMITS.maxColumns).optional(),
  reason: z.string().max(4000).optional(),
});

/** /api/internal/bi-policy/{user_id} and /api/internal/bi-audit (mounted at /api/internal). */
export function biInternalRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;
  const auth = requireInternalSecret(ctx.config);

  // Effective policy and its compiled form; `?table=` adds that one table's compiled SELECT.
  r.get(
    '/bi-policy/:user_id',
    auth,
    asyncHandler(async (req, res) => {
      const eff = await effectivePolicyOf(db, parseId(req.params.user_id, 'user_id'));
      const table = req.query.table;
      res.json({
        user_id: eff.user.id,
        username: eff.user.username,
        bi: eff.bi,
        policy: eff,
        compiled: { sqlite: compilePolicy(eff, 'sqlite'), postgres: compilePolicy(eff, 'postgres') },
        ...(typeof table === 'string' && table !== '' ? { table: tableAccess(eff, parseTableName(table)) } : {}),
      });
    }),
  );

  r.post(
    '/bi-audit',
    auth,
    asyncHandler(async (req, res) => {
      // Pick the known fields first: unknown ones are dropped, never validated, stored or logged.
      const raw = (req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {}) as Record<
        string,
        unknown
      >;
      const picked: Record<string, unknown> = {};
      for (const k of AUDIT_FIELDS) if (Object.hasOwn(raw, k)) picked[k] = raw[k];
      const b = validateData(BI_AUDIT_SCHEMA, picked);
      if (!(await getUserById(db, b.user_id))) throw new AppError('ERR_DATA_USER_NOT_FOUND', `no user ${b.user_id}`);
      // Names that are not identifiers are not stored verbatim: they could carry query text.
      const tableOk = b.table === '*' || TABLE_RE.test(b.table);
      const cols = b.columns?.filter((c) => c === '*' || COLUMN_RE.test(c));
      const data: Record<string, unknown> = { decision: b.decision, table: tableOk ? b.table : null };
      if (!tableOk) data.table_invalid = true;
      if (cols) data.columns = cols;
      if (b.columns && cols && cols.length !== b.columns.length) data.columns_dropped = b.columns.length - cols.length;
      if (b.reason !== undefined) data.reason = b.reason.slice(0, REASON_MAX);
      const denied = b.decision === 'denied';
      const event = denied ? 'bi.denied' : 'bi.allowed';
      const severity = denied ? 'critical' : 'info';
      const id = await logAction(db, { event, severity, subjectId: b.user_id, data });
      req.log.info({ event, severity, subjectId: b.user_id, auditId: id }, 'bi audit recorded');
      // 200, not 201: the caller gets a receipt, not a resource it can fetch.
      res.json({ id, event, severity });
    }),
  );

  return r;
}
