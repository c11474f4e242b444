import { Router, type NextFunction, type Request, type Response } from 'express';
import { AppError, ConflictError, Encryptor, logAction, NotFoundError, nowIso, type Db, type Severity } from '../../core/index.js';
import type {
  AgentCatalogView,
  AgentPolicyList,
  AgentPolicyView,
  ConnectionList,
  ConnectionView,
  EffectiveAgentPolicyResponse,
  ExternalGroupList,
  Organisation,
  OrganisationList,
  SyncJobStarted,
  SyncJobState,
  TeamList,
  TeamMember,
  TeamView,
} from '../admin-api.js';
import { asyncHandler, requireSuperuser, requireUser, type WebContext } from '../context.js';
import { problemsError, validateBody } from '../validate.js';
import { AGENT_TOOLS, effectiveAgentPolicy, rewriteAgentPolicies, unknownNames, type AgentCatalog } from './agent-policy.js';
import { followGroup } from './teams.js';
import type { IdentityServices } from './services.js';
import {
  connectionView,
  createOrGetRunningJob,
  deleteConnection,
  getConnection,
  getConnectionByProvider,
  jobView,
  latestJob,
  listConnections,
  logSyncFinished,
  saveConnection,
  syncConnection,
  type ConnectionInput,
} from './store.js';

const nullableString = (max = 500) => ({ anyOf: [{ type: 'string', minLength: 1, maxLength: max }, { type: 'null' }] });
const nameList = { anyOf: [{ type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } }, { type: 'null' }] };

const CONNECTION_PROPS = {
  provider: { type: 'string', enum: ['google'] },
  display_name: { type: 'string', minLength: 1, maxLength: 100 },
  issuer: { type: 'string', format: 'uri', maxLength: 500 },
  client_id: { type: 'string', minLength: 1, maxLength: 500 },
  client_secret: nullableString(2000),
  service_account_json: { anyOf: [{ type: 'string', maxLength: 20000 }, { type: 'object' }, { type: 'null' }] },
  delegated_admin_email: { anyOf: [{ type: 'string', format: 'email', maxLength: 320 }, { type: 'null' }] },
  customer: { type: 'string', minLength: 1, maxLength: 100 },
  is_active: { type: 'boolean' },
} as const;
const CONNECTION_CREATE = { type: 'object', additionalProperties: false, required: ['issuer', 'client_id'], properties: CONNECTION_PROPS } as const;
const CONNECTION_PATCH = { type: 'object', additionalProperties: false, properties: CONNECTION_PROPS } as const;
const SYNC_BODY = { type: 'object', additionalProperties: false, properties: { provider: { type: 'string', maxLength: 50 } } } as const;
/** Names of organisations, teams and policies: 1–100 characters with at least one that is not a space. */
export const NAME_MAX = 100;
const NAME = { type: 'string', minLength: 1, maxLength: NAME_MAX, pattern: '\\S', description: 'must not be only spaces' } as const;
const ORG_BODY = { type: 'object', additionalProperties: false, required: ['name'], properties: { name: NAME } } as const;
const MEMBER_BODY = { type: 'object', additionalProperties: false, properties: { role: { type: 'string', enum: ['member', 'manager'], default: 'member' } } } as const;
const TEAM_PROPS = {
  name: NAME,
  external_group_id: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
} as const;
const TEAM_CREATE = { type: 'object', additionalProperties: false, required: ['name'], properties: TEAM_PROPS } as const;
const TEAM_PATCH = { type: 'object', additionalProperties: false, properties: TEAM_PROPS } as const;
const POLICY_PROPS = {
  name: NAME,
  applies_to: { type: 'string', enum: ['all', 'teams'] },
  team_ids: { type: 'array', maxItems: 500, items: { type: 'integer', minimum: 1 } },
  allowed_tools: nameList,
  allowed_models: nameList,
  denied_tools: { type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } },
  denied_models: { type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;
const POLICY_CREATE = { type: 'object', additionalProperties: false, required: ['name', 'applies_to'], properties: POLICY_PROPS } as const;
const POLICY_PATCH = { type: 'object', additionalProperties: false, properties: POLICY_PROPS } as const;

const intParam = (req: Request, name: string): number => {
  const v = Number(req.params[name]);
  if (!Number.isSafeInteger(v) || v < 1) throw new AppError('ERR_VALIDATION', `${name} must be a positive integer`, { status: 400 });
  return v;
};

/** Organisation managers manage their organisation's teams and policies; superusers manage all. */
function requireManager(db: Db, req: Request, orgId: number): void {
  if (!db.prepare('SELECT 1 FROM organisations WHERE id = ?').get(orgId)) throw new NotFoundError('ERR_ORG_NOT_FOUND', 'no such organisation');
  if (req.user!.is_superuser) return;
  const m = db.prepare("SELECT 1 FROM organisation_members WHERE organisation_id = ? AND user_id = ? AND role = 'manager'").get(orgId, req.user!.id);
  if (!m) throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only', { status: 403 });
}

/**
 * Managers are named by superusers only. So a manager (who is not a superuser) may add, remove
 * and keep plain members, but not make anyone a manager, nor demote or remove a manager
 * (themselves included): each of those is 403 ERR_AUTH_FORBIDDEN. `newRole` is undefined for a
 * removal.
 */
function requireMayManageMember(db: Db, req: Request, orgId: number, userId: number, newRole?: 'member' | 'manager'): void {
  if (req.user!.is_superuser) return;
  const current = db.prepare('SELECT role FROM organisation_members WHERE organisation_id = ? AND user_id = ?').get(orgId, userId) as { role: string } | undefined;
  if (newRole === 'manager' || current?.role === 'manager') {
    throw new AppError('ERR_AUTH_FORBIDDEN', 'only a superuser may name, demote or remove an organisation manager', { status: 403 });
  }
}

interface TeamRow {
  id: number;
  organisation_id: number;
  name: string;
  external_group_id: number | null;
  created_at: string;
  updated_at: string;
}
interface PolicyRow {
  id: number;
  organisation_id: number;
  name: string;
  applies_to: 'all' | 'teams';
  allowed_tools: string | null;
  allowed_models: string | null;
  denied_tools: string;
  denied_models: string;
}

function teamView(db: Db, t: TeamRow): TeamView {
  const members = db
    .prepare('SELECT u.id, u.username, u.display_name FROM team_members m JOIN users u ON u.id = m.user_id WHERE m.team_id = ? ORDER BY u.username')
    .all(t.id) as TeamMember[];
  return { ...t, member_ids: members.map((m) => m.id).sort((a, b) => a - b), members };
}

function policyView(db: Db, p: PolicyRow): AgentPolicyView {
  const teams = (db.prepare('SELECT team_id FROM agent_policy_teams WHERE policy_id = ? ORDER BY team_id').all(p.id) as { team_id: number }[]).map((r) => r.team_id);
  return {
    id: p.id,
    organisation_id: p.organisation_id,
    name: p.name,
    applies_to: p.applies_to,
    team_ids: teams,
    allowed_tools: p.allowed_tools === null ? null : JSON.parse(p.allowed_tools),
    allowed_models: p.allowed_models === null ? null : JSON.parse(p.allowed_models),
    denied_tools: JSON.parse(p.denied_tools),
    denied_models: JSON.parse(p.denied_models),
  };
}

function getTeam(db: Db, id: number): TeamRow {
  const t = db.prepare('SELECT * FROM teams WHERE id = ?').get(id) as TeamRow | undefined;
  if (!t) throw new NotFoundError('ERR_TEAM_NOT_FOUND', 'no such team');
  return t;
}

function getPolicy(db: Db, id: number): PolicyRow {
  const p = db.prepare('SELECT * FROM agent_policies WHERE id = ?').get(id) as PolicyRow | undefined;
  if (!p) throw new NotFoundError('ERR_POLICY_NOT_FOUND', 'no such agent policy');
  return p;
}

function checkGroup(db: Db, groupId: number | null | undefined): void {
  if (groupId && !db.prepare('SELECT 1 FROM external_groups WHERE id = ?').get(groupId)) {
    throw new NotFoundError('ERR_GROUP_NOT_FOUND', 'no such external group');
  }
}

function wrapUnique<T>(fn: () => T, code: string, msg: string): T {
  try {
    return fn();
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new ConflictError(code, msg);
    throw err;
  }
}

/** Everyone an organisation's policies reach: its members and the members of its teams. */
function orgMemberIds(db: Db, orgId: number): number[] {
  return (
    db
      .prepare(
        `SELECT user_id FROM organisation_members WHERE organisation_id = ?
         UNION SELECT tm.user_id FROM team_members tm JOIN teams t ON t.id = tm.team_id WHERE t.organisation_id = ?`,
      )
      .all(orgId, orgId) as { user_id: number }[]
  ).map((r) => r.user_id);
}

/** All organisation members affected by a policy change: rewrite their stored sandbox policy. */
function rewriteOrgPolicies(db: Db, services: IdentityServices, orgId: number): void {
  const ids = orgMemberIds(db, orgId);
  const changed = rewriteAgentPolicies(db, ids);
  if (changed.length) services.sandboxes?.policyChanged?.(changed);
}

/** /api/identity/*: directory sync, IdP connections, organisations, teams, external groups, agent policies. */
export function identityAdminRoutes(ctx: WebContext, enc: Encryptor): Router {
  const r = Router();
  const db = ctx.db;
  const services = ctx.services as IdentityServices;
  /** Every change on this router goes to the action log as `identity.*`, by the signed-in admin. */
  const audit = (req: Request, event: string, data: Record<string, unknown>, subjectId?: number | null, severity?: Severity) =>
    logAction(db, { event: `identity.${event}`, actorId: req.user!.id, subjectId: subjectId ?? null, severity, data });
  /** Tools and models a policy may name: AGENT_TOOLS and the configured model (plus any the daemon offers). */
  const catalog = (): AgentCatalog => {
    const extra = (ctx.services.agentModels as (() => string[]) | undefined)?.() ?? [];
    return { tools: [...AGENT_TOOLS], models: [...new Set([ctx.config.model.model, ...extra])].filter(Boolean) };
  };
  /**
   * A sync job runs in the background; its end goes into the action log when this process sees
   * it finish (checked every second, at most an hour) or when the sync page reads it, once.
   */
  const watchSync = (jobId: number) => {
    const until = Date.now() + 3600_000;
    const timer = setInterval(() => {
      try {
        if (logSyncFinished(db, jobId) || Date.now() > until) clearInterval(timer);
        else if ((db.prepare('SELECT status FROM directory_sync_jobs WHERE id = ?').get(jobId) as { status?: string } | undefined)?.status === undefined) clearInterval(timer);
      } catch {
        // The database closed (server shutting down): stop watching; the sync page logs it later.
        clearInterval(timer);
      }
    }, 1000);
    timer.unref();
  };

  // ---- directory sync (superuser only) ----
  r.post('/directory-sync', requireSuperuser, (req, res) => {
    const body = validateBody<{ provider?: string }>(SYNC_BODY, req.body ?? {});
    const c = syncConnection(db, body.provider);
    services.directorySync?.recoverStale?.(c.id);
    const { job, created } = createOrGetRunningJob(db, c.id, 'manual', req.user!.id);
    if (created) {
      req.log.info({ jobId: job.id, connectionId: c.id }, 'directory sync requested');
      audit(req, 'directory_sync.requested', { job_id: job.id, connection_id: c.id, provider: c.provider });
      services.directorySync?.start(job.id);
      watchSync(job.id);
    }
    res.status(created ? 202 : 200).json({ job: jobView(job), created } satisfies SyncJobStarted);
  });

  r.get('/directory-sync', requireSuperuser, (req, res) => {
    const provider = typeof req.query.provider === 'string' ? req.query.provider : undefined;
    const c = provider ? getConnectionByProvider(db, provider) : listConnections(db)[0];
    if (!c) throw new NotFoundError('ERR_IDP_NOT_FOUND', 'no IdP connection is configured');
    const job = latestJob(db, c.id);
    if (job) logSyncFinished(db, job.id);
    res.json({ job: job ? jobView(job) : null } satisfies SyncJobState);
  });

  // ---- IdP connections (superuser only) ----
  r.get('/connections', requireSuperuser, (_req, res) => {
    res.json({ connections: listConnections(db).map(connectionView) } satisfies ConnectionList);
  });
  r.post('/connections', requireSuperuser, (req, res) => {
    const body = validateBody<ConnectionInput>(CONNECTION_CREATE, req.body);
    const saved = saveConnection(db, enc, body);
    // Field names only: the secret and the key never reach the log.
    audit(req, 'connection.created', { connection_id: saved.id, provider: saved.provider, fields: Object.keys(body).sort() });
    res.status(201).json(connectionView(saved) satisfies ConnectionView);
  });
  r.get('/connections/:id', requireSuperuser, (req, res) => {
    res.json(connectionView(getConnection(db, intParam(req, 'id'))) satisfies ConnectionView);
  });
  r.patch('/connections/:id', requireSuperuser, (req, res) => {
    const body = validateBody<ConnectionInput>(CONNECTION_PATCH, req.body);
    if (body.provider) throw new AppError('ERR_VALIDATION', 'Provider cannot change.', { status: 400, details: { field: 'provider' } });
    const saved = saveConnection(db, enc, body, intParam(req, 'id'));
    audit(req, 'connection.updated', { connection_id: saved.id, provider: saved.provider, fields: Object.keys(body).sort() });
    res.json(connectionView(saved) satisfies ConnectionView);
  });
  r.delete('/connections/:id', requireSuperuser, (req, res) => {
    const id = intParam(req, 'id');
    const conn = getConnection(db, id);
    const changed = deleteConnection(db, id, req.user!.id);
    audit(req, 'connection.deleted', { connection_id: id, provider: conn.provider }, null, 'warning');
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.status(204).end();
  });

  // ---- organisations (superuser creates them and names managers) ----
  r.get('/organisations', requireUser, (req, res) => {
    const rows = (
      req.user!.is_superuser
        ? db.prepare('SELECT * FROM organisations ORDER BY id').all()
        : db.prepare('SELECT o.* FROM organisations o JOIN organisation_members m ON m.organisation_id = o.id WHERE m.user_id = ? ORDER BY o.id').all(req.user!.id)
    ) as Organisation[];
    res.json({ organisations: rows } satisfies OrganisationList);
  });
  r.post('/organisations', requireSuperuser, (req, res) => {
    const body = validateBody<{ name: string }>(ORG_BODY, req.body);
    const name = body.name.trim();
    const info = wrapUnique(() => db.prepare('INSERT INTO organisations (name) VALUES (?)').run(name), 'ERR_ORG_EXISTS', 'an organisation with that name exists');
    audit(req, 'organisation.created', { organisation_id: Number(info.lastInsertRowid), name });
    res.status(201).json(db.prepare('SELECT * FROM organisations WHERE id = ?').get(info.lastInsertRowid) as Organisation);
  });
  // Rename (superuser): the name is all an organisation has of its own.
  r.patch('/organisations/:id', requireSuperuser, (req, res) => {
    const orgId = intParam(req, 'id');
    const body = validateBody<{ name: string }>(ORG_BODY, req.body);
    const org = db.prepare('SELECT * FROM organisations WHERE id = ?').get(orgId) as { name: string } | undefined;
    if (!org) throw new NotFoundError('ERR_ORG_NOT_FOUND', 'no such organisation');
    const name = body.name.trim();
    wrapUnique(() => db.prepare('UPDATE organisations SET name = ? WHERE id = ?').run(name, orgId), 'ERR_ORG_EXISTS', 'an organisation with that name exists');
    if (org.name !== name) audit(req, 'organisation.renamed', { organisation_id: orgId, from: org.name, name });
    res.json(db.prepare('SELECT * FROM organisations WHERE id = ?').get(orgId) as Organisation);
  });
  /**
   * Delete (superuser): its members, teams and agent policies go with it (foreign keys cascade);
   * the users it covered get their stored agent policy recomputed at once.
   */
  r.delete('/organisations/:id', requireSuperuser, (req, res) => {
    const orgId = intParam(req, 'id');
    const org = db.prepare('SELECT * FROM organisations WHERE id = ?').get(orgId) as { name: string } | undefined;
    if (!org) throw new NotFoundError('ERR_ORG_NOT_FOUND', 'no such organisation');
    const changed = db.transaction(() => {
      const ids = orgMemberIds(db, orgId);
      const counts = {
        teams: (db.prepare('SELECT COUNT(*) AS n FROM teams WHERE organisation_id = ?').get(orgId) as { n: number }).n,
        agent_policies: (db.prepare('SELECT COUNT(*) AS n FROM agent_policies WHERE organisation_id = ?').get(orgId) as { n: number }).n,
        users_affected: ids.length,
      };
      db.prepare('DELETE FROM organisations WHERE id = ?').run(orgId);
      audit(req, 'organisation.deleted', { organisation_id: orgId, name: org.name, ...counts }, null, 'warning');
      return rewriteAgentPolicies(db, ids);
    })();
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.status(204).end();
  });
  r.get('/organisations/:id/members', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    requireManager(db, req, orgId);
    res.json({ members: db.prepare('SELECT user_id, role FROM organisation_members WHERE organisation_id = ? ORDER BY user_id').all(orgId) });
  });
  r.put('/organisations/:id/members/:userId', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    const userId = intParam(req, 'userId');
    const body = validateBody<{ role: 'member' | 'manager' }>(MEMBER_BODY, req.body ?? {});
    requireManager(db, req, orgId);
    if (!db.prepare('SELECT 1 FROM users WHERE id = ?').get(userId)) throw new NotFoundError('ERR_USER_NOT_FOUND', 'no such user');
    // `role` defaults to member, so without this a manager's PUT {} would demote another manager.
    requireMayManageMember(db, req, orgId, userId, body.role);
    db.prepare(
      `INSERT INTO organisation_members (organisation_id, user_id, role) VALUES (?, ?, ?)
       ON CONFLICT (organisation_id, user_id) DO UPDATE SET role = excluded.role`,
    ).run(orgId, userId, body.role);
    audit(req, 'organisation.member_set', { organisation_id: orgId, role: body.role }, userId);
    const changed = rewriteAgentPolicies(db, [userId]);
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.json({ organisation_id: orgId, user_id: userId, role: body.role });
  });
  r.delete('/organisations/:id/members/:userId', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    const userId = intParam(req, 'userId');
    requireManager(db, req, orgId);
    requireMayManageMember(db, req, orgId, userId);
    const gone = db.prepare('DELETE FROM organisation_members WHERE organisation_id = ? AND user_id = ?').run(orgId, userId).changes;
    if (gone) audit(req, 'organisation.member_removed', { organisation_id: orgId }, userId);
    const changed = rewriteAgentPolicies(db, [userId]);
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.status(204).end();
  });

  // ---- external groups: the team picker lists every synced group ----
  r.get('/external-groups', requireUser, (req, res) => {
    const managerOrSuper =
      req.user!.is_superuser || db.prepare("SELECT 1 FROM organisation_members WHERE user_id = ? AND role = 'manager'").get(req.user!.id);
    if (!managerOrSuper) throw new AppError('ERR_AUTH_FORBIDDEN', 'organisation managers only', { status: 403 });
    const q = typeof req.query.q === 'string' ? `%${req.query.q.replace(/[%_\\]/g, (m) => `\\${m}`)}%` : '%';
    const groups = db
      .prepare(
        `SELECT g.id, g.connection_id, g.email, g.name, g.description,
                (SELECT COUNT(*) FROM external_group_members m WHERE m.group_id = g.id) AS member_count
         FROM external_groups g WHERE g.email LIKE ? ESCAPE '\\' OR g.name LIKE ? ESCAPE '\\' ORDER BY g.email LIMIT 200`,
      )
      .all(q, q) as ExternalGroupList['groups'];
    res.json({ groups } satisfies ExternalGroupList);
  });

  // ---- teams (organisation managers) ----
  /**
   * A team linked to a group has the group's active members (as of the last sync) at once:
   * otherwise a re-linked team would keep the previous group's members, and with them the
   * team's agent policies, until the next sync.
   */
  const linkTeam = (teamId: number, groupId: number): number[] => {
    const { added, removed } = followGroup(db, teamId, groupId);
    return rewriteAgentPolicies(db, [...added, ...removed]);
  };
  r.get('/organisations/:id/teams', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    requireManager(db, req, orgId);
    const rows = db.prepare('SELECT * FROM teams WHERE organisation_id = ? ORDER BY id').all(orgId) as TeamRow[];
    res.json({ teams: rows.map((t) => teamView(db, t)) } satisfies TeamList);
  });
  r.post('/organisations/:id/teams', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    requireManager(db, req, orgId);
    const body = validateBody<{ name: string; external_group_id?: number | null }>(TEAM_CREATE, req.body);
    checkGroup(db, body.external_group_id);
    const { teamId, changed } = db.transaction(() => {
      const info = wrapUnique(
        () => db.prepare('INSERT INTO teams (organisation_id, name, external_group_id) VALUES (?, ?, ?)').run(orgId, body.name, body.external_group_id ?? null),
        'ERR_TEAM_EXISTS',
        'a team with that name exists in the organisation',
      );
      const id = Number(info.lastInsertRowid);
      audit(req, 'team.created', { organisation_id: orgId, team_id: id, name: body.name, external_group_id: body.external_group_id ?? null });
      return { teamId: id, changed: body.external_group_id ? linkTeam(id, body.external_group_id) : [] };
    })();
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.status(201).json(teamView(db, getTeam(db, teamId)));
  });
  r.patch('/teams/:id', requireUser, (req, res) => {
    const team = getTeam(db, intParam(req, 'id'));
    requireManager(db, req, team.organisation_id);
    const body = validateBody<{ name?: string; external_group_id?: number | null }>(TEAM_PATCH, req.body);
    checkGroup(db, body.external_group_id);
    const changed = db.transaction(() => {
      wrapUnique(
        () =>
          db
            .prepare('UPDATE teams SET name = COALESCE(?, name), external_group_id = CASE WHEN ? THEN ? ELSE external_group_id END, updated_at = ? WHERE id = ?')
            .run(body.name ?? null, body.external_group_id !== undefined ? 1 : 0, body.external_group_id ?? null, nowIso(), team.id),
        'ERR_TEAM_EXISTS',
        'a team with that name exists in the organisation',
      );
      audit(req, 'team.updated', { organisation_id: team.organisation_id, team_id: team.id, name: body.name ?? team.name, ...(body.name !== undefined && body.name !== team.name ? { from: team.name } : {}), ...(body.external_group_id !== undefined ? { external_group_id: body.external_group_id } : {}) });
      // Linked (or re-linked): the team takes the group's members now, not at the next sync.
      // Unlinked (null): it keeps its members and becomes a manual team.
      return body.external_group_id ? linkTeam(team.id, body.external_group_id) : [];
    })();
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.json(teamView(db, getTeam(db, team.id)));
  });
  r.delete('/teams/:id', requireUser, (req, res) => {
    const team = getTeam(db, intParam(req, 'id'));
    requireManager(db, req, team.organisation_id);
    const members = (db.prepare('SELECT user_id FROM team_members WHERE team_id = ?').all(team.id) as { user_id: number }[]).map((m) => m.user_id);
    db.prepare('DELETE FROM teams WHERE id = ?').run(team.id);
    audit(req, 'team.deleted', { organisation_id: team.organisation_id, team_id: team.id, name: team.name, members: members.length }, null, 'warning');
    const changed = rewriteAgentPolicies(db, members);
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.status(204).end();
  });
  const editMembers = (add: boolean) => (req: Request, res: Response, _next: NextFunction) => {
    const team = getTeam(db, intParam(req, 'id'));
    requireManager(db, req, team.organisation_id);
    // A linked team follows its group: manual edits would be undone by the next sync.
    if (team.external_group_id) throw new ConflictError('ERR_TEAM_LINKED', 'this team follows an external group; change the group in the directory');
    const userId = intParam(req, 'userId');
    if (!db.prepare('SELECT 1 FROM users WHERE id = ?').get(userId)) throw new NotFoundError('ERR_USER_NOT_FOUND', 'no such user');
    const n = add
      ? db.prepare('INSERT OR IGNORE INTO team_members (team_id, user_id) VALUES (?, ?)').run(team.id, userId).changes
      : db.prepare('DELETE FROM team_members WHERE team_id = ? AND user_id = ?').run(team.id, userId).changes;
    if (n) audit(req, add ? 'team.member_added' : 'team.member_removed', { organisation_id: team.organisation_id, team_id: team.id, team: team.name }, userId);
    const changed = rewriteAgentPolicies(db, [userId]);
    if (changed.length) services.sandboxes?.policyChanged?.(changed);
    res.json(teamView(db, getTeam(db, team.id)));
  };
  r.put('/teams/:id/members/:userId', requireUser, editMembers(true));
  r.delete('/teams/:id/members/:userId', requireUser, editMembers(false));

  // ---- agent policies (organisation managers) ----
  r.get('/organisations/:id/agent-policies', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    requireManager(db, req, orgId);
    const rows = db.prepare('SELECT * FROM agent_policies WHERE organisation_id = ? ORDER BY id').all(orgId) as PolicyRow[];
    res.json({ policies: rows.map((p) => policyView(db, p)) } satisfies AgentPolicyList);
  });
  r.get('/agent-catalog', requireUser, (_req, res) => {
    res.json(catalog() satisfies AgentCatalogView);
  });
  /**
   * Beyond the schema: names must exist (tools and models of this server), and a policy for
   * "the chosen teams" needs at least one team (it would apply to nobody). `current` is the
   * stored policy on a PATCH, so the check is on the policy as it will be.
   */
  const checkPolicy = (body: Record<string, unknown>, current?: PolicyRow) => {
    const problems = unknownNames(body, catalog());
    const appliesTo = (body.applies_to as string | undefined) ?? current?.applies_to;
    const teamIds =
      (body.team_ids as number[] | undefined) ??
      (current ? (db.prepare('SELECT team_id FROM agent_policy_teams WHERE policy_id = ?').all(current.id) as { team_id: number }[]).map((x) => x.team_id) : []);
    if (appliesTo === 'teams' && teamIds.length === 0) {
      problems.push({ field: 'team_ids', message: 'Teams: choose at least one team, or apply the policy to every member of the organisation.' });
    }
    if (problems.length) {
      const err = problemsError(problems);
      throw new AppError('ERR_POLICY_INVALID', err.message, { status: 400, details: err.details });
    }
  };
  const savePolicy = (orgId: number, body: Record<string, unknown>, id?: number): number => {
    const teamIds = body.team_ids as number[] | undefined;
    if (teamIds) {
      for (const t of teamIds) if (getTeam(db, t).organisation_id !== orgId) throw new AppError('ERR_VALIDATION', 'Teams: every team must belong to this organisation.', { status: 400, details: { field: 'team_ids' } });
    }
    const json = (v: unknown) => (v === undefined ? undefined : v === null ? null : JSON.stringify(v));
    return db.transaction(() => {
      let pid = id;
      if (pid === undefined) {
        const info = wrapUnique(
          () =>
            db
              .prepare('INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_tools, allowed_models, denied_tools, denied_models) VALUES (?, ?, ?, ?, ?, ?, ?)')
              .run(orgId, body.name, body.applies_to, json(body.allowed_tools) ?? null, json(body.allowed_models) ?? null, json(body.denied_tools ?? []), json(body.denied_models ?? [])),
          'ERR_POLICY_EXISTS',
          'a policy with that name exists',
        );
        pid = Number(info.lastInsertRowid);
      } else {
        const sets: string[] = [];
        const args: unknown[] = [];
        for (const k of ['name', 'applies_to'] as const) if (body[k] !== undefined) (sets.push(`${k} = ?`), args.push(body[k]));
        for (const k of ['allowed_tools', 'allowed_models', 'denied_tools', 'denied_models'] as const) {
          if (body[k] !== undefined) (sets.push(`${k} = ?`), args.push(json(body[k])));
        }
        if (sets.length) wrapUnique(() => db.prepare(`UPDATE agent_policies SET ${sets.join(', ')}, updated_at = ? WHERE id = ?`).run(...args, nowIso(), pid), 'ERR_POLICY_EXISTS', 'a policy with that name exists');
      }
      if (teamIds) {
        db.prepare('DELETE FROM agent_policy_teams WHERE policy_id = ?').run(pid);
        const ins = db.prepare('INSERT INTO agent_policy_teams (policy_id, team_id) VALUES (?, ?)');
        for (const t of new Set(teamIds)) ins.run(pid, t);
      }
      return pid!;
    })();
  };
  r.post('/organisations/:id/agent-policies', requireUser, (req, res) => {
    const orgId = intParam(req, 'id');
    requireManager(db, req, orgId);
    const body = validateBody<Record<string, unknown>>(POLICY_CREATE, req.body);
    checkPolicy(body);
    const id = savePolicy(orgId, body);
    audit(req, 'agent_policy.created', { organisation_id: orgId, policy_id: id, name: body.name, applies_to: body.applies_to });
    rewriteOrgPolicies(db, services, orgId);
    res.status(201).json(policyView(db, getPolicy(db, id)));
  });
  r.patch('/agent-policies/:id', requireUser, (req, res) => {
    const p = getPolicy(db, intParam(req, 'id'));
    requireManager(db, req, p.organisation_id);
    const body = validateBody<Record<string, unknown>>(POLICY_PATCH, req.body);
    checkPolicy(body, p);
    savePolicy(p.organisation_id, body, p.id);
    audit(req, 'agent_policy.updated', { organisation_id: p.organisation_id, policy_id: p.id, name: body.name ?? p.name, fields: Object.keys(body).sort() });
    rewriteOrgPolicies(db, services, p.organisation_id);
    res.json(policyView(db, getPolicy(db, p.id)));
  });
  r.delete('/agent-policies/:id', requireUser, (req, res) => {
    const p = getPolicy(db, intParam(req, 'id'));
    requireManager(db, req, p.organisation_id);
    db.prepare('DELETE FROM agent_policies WHERE id = ?').run(p.id);
    audit(req, 'agent_policy.deleted', { organisation_id: p.organisation_id, policy_id: p.id, name: p.name }, null, 'warning');
    rewriteOrgPolicies(db, services, p.organisation_id);
    res.status(204).end();
  });

  // The caller's own effective agent policy (superusers may ask for anyone's).
  // A plain user may ask about themself only; asking about another user is refused (403),
  // never silently answered with the caller's own policy.
  r.get('/agent-policy', requireUser, (req, res) => {
    const raw = req.query.user_id;
    let uid = req.user!.id;
    if (raw !== undefined) {
      if (typeof raw !== 'string' || !/^[1-9][0-9]{0,15}$/.test(raw)) throw new AppError('ERR_VALIDATION', 'user_id must be a positive integer', { status: 400 });
      uid = Number(raw);
      if (uid !== req.user!.id && !req.user!.is_superuser) throw new AppError('ERR_AUTH_FORBIDDEN', 'only a superuser may read another user\'s agent policy', { status: 403 });
    }
    res.json({ user_id: uid, policy: effectiveAgentPolicy(db, uid) } satisfies EffectiveAgentPolicyResponse);
  });

  return r;
}

