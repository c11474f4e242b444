import { Router, type Request } from 'express';
import { AppError, Encryptor } from '../../core/index.js';
import { logAction, type Severity } from '../../domain/action-log.js';
import { inTransaction, type Sql } from '../../domain/db/index.js';
import { effectiveAgentPolicy } from '../../domain/identity/agent-policy.js';
import { policyNames } from '../../domain/identity/orgs.js';
import { mailPolicyFor } from '../../domain/mail/index.js';
import {
  createOrGetRunningJob,
  jobExists,
  latestJob,
  logSyncFinished,
} from '../../domain/identity/directory-sync-store.js';
import {
  deleteConnection,
  getConnection,
  getConnectionByProvider,
  listConnections,
  saveConnection,
  syncConnection,
} from '../../domain/identity/store.js';
import type {
  ConnectionList,
  ConnectionView,
  EffectiveAgentPolicyResponse,
  SyncJobStarted,
  SyncJobState,
} from '../admin-api.js';
import { asyncHandler, requireSuperuser, requireUser, type WebContext } from '../context.js';
import { intQueryParam } from '../query-params.js';
import { validateBody } from '../validate.js';
import { CONNECTION_CREATE, CONNECTION_PATCH, SYNC_BODY } from './admin-schemas.js';
import { organisationRoutes } from './org-routes.js';
import { connectionView, jobView } from '../../domain/identity/views.js';
import { intParam } from './params.js';

export { NAME_MAX } from './admin-schemas.js';

/**
 * Every change on /api/identity goes to the action log as `identity.*`, by the signed-in admin;
 * `db` is the change's transaction, so the entry and the change are written together or not at all.
 */
export type Audit = (
  trx: Sql,
  req: Request,
  event: string,
  data: Record<string, unknown>,
  subjectId?: number | null,
  severity?: Severity,
) => Promise<number>;

/** What the identity admin route groups share. */
interface IdentityKit {
  r: Router;
  ctx: WebContext;
  db: Sql;
  services: WebContext['services'];
  enc: Encryptor;
  audit: Audit;
  watchSync: (jobId: number) => void;
}

/** /api/identity/*: directory sync, IdP connections, organisations, teams, external groups, agent policies. */
export function identityAdminRoutes(ctx: WebContext, enc: Encryptor): Router {
  const r = Router();
  const db = ctx.database.sql;
  const services = ctx.services;
  const audit: Audit = (trx, req, event, data, subjectId, severity) =>
    logAction(trx, { event: `identity.${event}`, actorId: req.user!.id, subjectId: subjectId ?? null, severity, data });
  /**
   * A sync job runs in the background; its end goes into the action log when this process sees
   * it finish (checked every second, at most an hour) or when the sync page reads it, once.
   */
  const watchSync = (jobId: number) => {
    const until = Date.now() + 3600_000;
    const timer = setInterval(() => {
      void (async () => {
        if ((await logSyncFinished(db, jobId)) || Date.now() > until) clearInterval(timer);
        else if (!(await jobExists(db, jobId))) clearInterval(timer);
      })().catch(() => {
        // The database closed (server shutting down): stop watching; the sync page logs it later.
        clearInterval(timer);
      });
    }, 1000);
    timer.unref();
  };
  const kit: IdentityKit = { r, ctx, db, services, enc, audit, watchSync };
  directorySyncRoutes(kit);
  connectionRoutes(kit);
  organisationAndPolicyRoutes(kit);

  return r;
}

/** Directory sync: start a job, read its state. */
function directorySyncRoutes({ r, db, services, audit, watchSync }: IdentityKit): void {
  // ---- directory sync (superuser only) ----
  r.post(
    '/directory-sync',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const body = validateBody(SYNC_BODY, req.body ?? {});
      const c = await syncConnection(db, body.provider);
      await services.directorySync.recoverStale?.(c.id);
      const { job, created } = await createOrGetRunningJob(db, c.id, 'manual', req.user!.id);
      if (created) {
        req.log.info({ jobId: job.id, connectionId: c.id }, 'directory sync requested');
        await audit(db, req, 'directory_sync.requested', { job_id: job.id, connection_id: c.id, provider: c.provider });
        services.directorySync.start(job.id);
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
      if (!c) throw new AppError('ERR_IDP_NOT_FOUND', 'no IdP connection is configured');
      const job = await latestJob(db, c.id);
      if (job) await logSyncFinished(db, job.id);
      res.json({ job: job ? jobView(job) : null } satisfies SyncJobState);
    }),
  );
}

/** IdP connections: list, create, read, change, delete. */
function connectionRoutes({ r, db, services, enc, audit }: IdentityKit): void {
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
      const body = validateBody(CONNECTION_CREATE, req.body);
      const saved = await inTransaction(db, async (trx) => {
        const c = await saveConnection(trx, enc, body);
        // Field names only: the secret and the key never reach the log.
        await audit(trx, req, 'connection.created', {
          connection_id: c.id,
          provider: c.provider,
          fields: Object.keys(body).sort(),
        });
        return c;
      });
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
      const body = validateBody(CONNECTION_PATCH, req.body);
      if (body.provider)
        throw new AppError('ERR_VALIDATION', 'Provider cannot change.', { details: { field: 'provider' } });
      const id = intParam(req, 'id');
      const saved = await inTransaction(db, async (trx) => {
        const c = await saveConnection(trx, enc, body, id);
        await audit(trx, req, 'connection.updated', {
          connection_id: c.id,
          provider: c.provider,
          fields: Object.keys(body).sort(),
        });
        return c;
      });
      res.json(connectionView(saved) satisfies ConnectionView);
    }),
  );
  r.delete(
    '/connections/:id',
    requireSuperuser,
    asyncHandler(async (req, res) => {
      const id = intParam(req, 'id');
      const changed = await inTransaction(db, async (trx) => {
        const conn = await getConnection(trx, id);
        const users = await deleteConnection(trx, id, req.user!.id);
        await audit(trx, req, 'connection.deleted', { connection_id: id, provider: conn.provider }, null, 'warning');
        return users;
      });
      if (changed.length) services.sandboxes.policyChanged?.(changed);
      res.status(204).end();
    }),
  );
}

/** Organisations (org-routes.ts) and a user's effective agent policy. */
function organisationAndPolicyRoutes({ r, ctx, db }: IdentityKit): void {
  // ---- organisations, members, external groups, teams, agent policies ----
  r.use(organisationRoutes(ctx));

  // The caller's own effective agent policy (superusers may ask for anyone's).
  // A plain user may ask about themself only; asking about another user is refused (403),
  // never silently answered with the caller's own policy.
  r.get(
    '/agent-policy',
    requireUser,
    asyncHandler(async (req, res) => {
      const asked = req.query.user_id === undefined ? undefined : intQueryParam(req, 'user_id', { min: 1 });
      if (req.query.user_id !== undefined && asked === undefined)
        throw new AppError('ERR_VALIDATION', 'user_id must be a positive integer');
      const uid = asked ?? req.user!.id;
      if (uid !== req.user!.id && !req.user!.is_superuser)
        throw new AppError('ERR_AUTH_FORBIDDEN', "only a superuser may read another user's agent policy");
      const policy = await effectiveAgentPolicy(db, uid);
      const policies = await policyNames(db, policy.policy_ids);
      res.json({
        user_id: uid,
        policy,
        policies,
        mail: await mailPolicyFor(db, ctx.config.mail, uid),
      } satisfies EffectiveAgentPolicyResponse);
    }),
  );
}
