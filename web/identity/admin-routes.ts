import { Router, type Request } from 'express';
import { AppError, Encryptor, NotFoundError } from '../../core/index.js';
import { logAction, type Severity } from '../../domain/action-log.js';
import { effectiveAgentPolicy } from '../../domain/identity/agent-policy.js';
import { mailPolicyFor } from '../../domain/mail.js';
import {
  createOrGetRunningJob,
  deleteConnection,
  getConnection,
  getConnectionByProvider,
  latestJob,
  listConnections,
  logSyncFinished,
  saveConnection,
  syncConnection,
  type ConnectionInput,
} from '../../domain/identity/store.js';
import type { ConnectionList, ConnectionView, EffectiveAgentPolicyResponse, SyncJobStarted, SyncJobState } from '../admin-api.js';
import { asyncHandler, requireSuperuser, requireUser, type WebContext } from '../context.js';
import { validateBody } from '../validate.js';
import { CONNECTION_CREATE, CONNECTION_PATCH, SYNC_BODY } from './admin-schemas.js';
import { organisationRoutes } from './org-routes.js';
import { connectionView, jobView } from './views.js';

export { NAME_MAX } from './admin-schemas.js';

export const intParam = (req: Request, name: string): number => {
  const v = Number(req.params[name]);
  if (!Number.isSafeInteger(v) || v < 1) throw new AppError('ERR_VALIDATION', `${name} must be a positive integer`, { status: 400 });
  return v;
};

/** Every change on /api/identity goes to the action log as `identity.*`, by the signed-in admin. */
export type Audit = (req: Request, event: string, data: Record<string, unknown>, subjectId?: number | null, severity?: Severity) => Promise<number>;

/** /api/identity/*: directory sync, IdP connections, organisations, teams, external groups, agent policies. */
export function identityAdminRoutes(ctx: WebContext, enc: Encryptor): Router {
  const r = Router();
  const db = ctx.database.sql;
  const services = ctx.services;
  const audit: Audit = (req, event, data, subjectId, severity) =>
    logAction(db, { event: `identity.${event}`, actorId: req.user!.id, subjectId: subjectId ?? null, severity, data });
  /**
   * A sync job runs in the background; its end goes into the action log when this process sees
   * it finish (checked every second, at most an hour) or when the sync page reads it, once.
   */
  const watchSync = (jobId: number) => {
    const until = Date.now() + 3600_000;
    const timer = setInterval(() => {
      void (async () => {
        if ((await logSyncFinished(db, jobId)) || Date.now() > until) clearInterval(timer);
        else if (!(await db.selectFrom('directory_sync_jobs').select('id').where('id', '=', jobId).executeTakeFirst())) clearInterval(timer);
      })().catch(() => {
        // The database closed (server shutting down): stop watching; the sync page logs it later.
        clearInterval(timer);
      });
    }, 1000);
    timer.unref();
  };

  // ---- directory sync (superuser only) ----
  r.post(
    '/directory-sync',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const body = validateBody<{ provider?: string }>(SYNC_BODY, req.body ?? {});
      const c = await syncConnection(db, body.provider);
      await services.directorySync?.recoverStale?.(c.id);
      const { job, created } = await createOrGetRunningJob(db, c.id, 'manual', req.user!.id);
      if (created) {
        req.log.info({ jobId: job.id, connectionId: c.id }, 'directory sync requested');
        await audit(req, 'directory_sync.requested', { job_id: job.id, connection_id: c.id, provider: c.provider });
        services.directorySync?.start(job.id);
        watchSync(job.id);
      }
      res.status(created ? 202 : 200).json({ job: jobView(job), created } satisfies SyncJobStarted);
    }),
  );

  r.get(
    '/directory-sync',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const provider = typeof req.query.provider === 'string' ? req.query.provider : undefined;
      const c = provider ? await getConnectionByProvider(db, provider) : (await listConnections(db))[0];
      if (!c) throw new NotFoundError('ERR_IDP_NOT_FOUND', 'no IdP connection is configured');
      const job = await latestJob(db, c.id);
      if (job) await logSyncFinished(db, job.id);
      res.json({ job: job ? jobView(job) : null } satisfies SyncJobState);
    }),
  );

  // ---- IdP connections (superuser only) ----
  r.get(
    '/connections',
    requireSuperuser,
    asyncHandler(async (_req, res) => {
      res.json({ connections: (await listConnections(db)).map(connectionView) } satisfies ConnectionList);
    }),
  );
  r.post(
    '/connections',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const body = validateBody<ConnectionInput>(CONNECTION_CREATE, req.body);
      const saved = await saveConnection(db, enc, body);
      // Field names only: the secret and the key never reach the log.
      await audit(req, 'connection.created', { connection_id: saved.id, provider: saved.provider, fields: Object.keys(body).sort() });
      res.status(201).json(connectionView(saved) satisfies ConnectionView);
    }),
  );
  r.get(
    '/connections/:id',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      res.json(connectionView(await getConnection(db, intParam(req, 'id'))) satisfies ConnectionView);
    }),
  );
  r.patch(
    '/connections/:id',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const body = validateBody<ConnectionInput>(CONNECTION_PATCH, req.body);
      if (body.provider) throw new AppError('ERR_VALIDATION', 'Provider cannot change.', { status: 400, details: { field: 'provider' } });
      const saved = await saveConnection(db, enc, body, intParam(req, 'id'));
      await audit(req, 'connection.updated', { connection_id: saved.id, provider: saved.provider, fields: Object.keys(body).sort() });
      res.json(connectionView(saved) satisfies ConnectionView);
    }),
  );
  r.delete(
    '/connections/:id',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const id = intParam(req, 'id');
      const conn = await getConnection(db, id);
      const changed = await deleteConnection(db, id, req.user!.id);
      await audit(req, 'connection.deleted', { connection_id: id, provider: conn.provider }, null, 'warning');
      if (changed.length) services.sandboxes?.policyChanged?.(changed);
      res.status(204).end();
    }),
  );

  // ---- organisations, members, external groups, teams, agent policies ----
  r.use(organisationRoutes(ctx));

  // The caller's own effective agent policy (superusers may ask for anyone's).
  // A plain user may ask about themself only; asking about another user is refused (403),
  // never silently answered with the caller's own policy.
  r.get(
    '/agent-policy',
    requireUser,
    asyncHandler(async (req, res) => {
      const raw = req.query.user_id;
      let uid = req.user!.id;
      if (raw !== undefined) {
        if (typeof raw !== 'string' || !/^[1-9][0-9]{0,15}$/.test(raw)) throw new AppError('ERR_VALIDATION', 'user_id must be a positive integer', { status: 400 });
        uid = Number(raw);
        if (uid !== req.user!.id && !req.user!.is_superuser) throw new AppError('ERR_AUTH_FORBIDDEN', "only a superuser may read another user's agent policy", { status: 403 });
      }
      res.json({ user_id: uid, policy: await effectiveAgentPolicy(db, uid), mail: await mailPolicyFor(db, ctx.config.mail, uid) } satisfies EffectiveAgentPolicyResponse);
    }),
  );

  return r;
}
