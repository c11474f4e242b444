import { Router } from 'express';
import { AppError } from '../core/index.js';
import { logAction } from '../domain/action-log.js';
import { sessionLabels } from '../domain/session-labels.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';
import type { LiveSessionList } from './admin-api.js';

/** What the live-sessions admin page needs from the daemon's session manager (ctx.services.sandboxAdmin). */
export interface SandboxAdmin {
  list(): {
    containerId: string;
    sessionId: string | null;
    userId: number | null;
    state: string;
    createdAt: number;
    claimedAt: number | null;
    lastUsedAt: number;
    turns: number;
    stale: boolean;
  }[];
  restart(id: string): Promise<unknown>;
  kill(id: string): Promise<unknown>;
}

/**
 * /api/admin/sessions (superuser, session + CSRF): the live sandboxes with restart and kill,
 * the same operations as `airlock sessions …` on the operator socket.
 */
export function adminSessionRoutes(ctx: WebContext): Router {
  const r = Router();
  const admin = (): SandboxAdmin => {
    const s = ctx.services.sandboxAdmin;
    if (!s) throw new AppError('ERR_RUNTIME_UNAVAILABLE', 'the sandbox runtime is not running on this server (no Docker engine)');
    return s;
  };
  r.use(requireSuperuser);
  r.get(
    '/',
    asyncHandler(async (_req, res) => {
      const all = admin().list();
      const live = all.filter((s): s is typeof s & { sessionId: string } => s.sessionId !== null);
      // The chat's title and its owner by name: what an admin recognises, beside the ids.
      const labels = await sessionLabels(
        ctx.database.sql,
        live.map((s) => s.sessionId),
        [...new Set(live.flatMap((s) => (s.userId === null ? [] : [s.userId])))],
      );
      const sessions = live
        .map((s) => ({
          id: s.sessionId,
          title: labels.titles.get(s.sessionId) ?? null,
          container_id: s.containerId.slice(0, 12),
          user_id: s.userId,
          username: s.userId === null ? null : (labels.users.get(s.userId)?.username ?? null),
          display_name: s.userId === null ? null : (labels.users.get(s.userId)?.display_name ?? null),
          status: s.stale ? `${s.state} (stale)` : s.state,
          stale: s.stale,
          turns: s.turns,
          started_at: new Date(s.claimedAt ?? s.createdAt).toISOString(),
          last_used_at: new Date(s.lastUsedAt).toISOString(),
        }));
      res.json({ sessions, pool_ready: all.filter((s) => !s.sessionId).length } satisfies LiveSessionList);
    }),
  );
  for (const op of ['restart', 'kill'] as const) {
    r.post(
      `/:id/${op}`,
      asyncHandler(async (req, res) => {
        const id = String(req.params.id);
        const owner = admin().list().find((s) => s.sessionId === id)?.userId ?? null;
        await admin()[op](id);
        req.log.info({ sessionId: id, op }, 'session operation by admin');
        await logAction(ctx.database.sql, {
          event: op === 'kill' ? 'session.killed' : 'session.restarted',
          severity: op === 'kill' ? 'warning' : 'info',
          actorId: req.user!.id,
          subjectId: owner,
          data: { session_id: id },
        });
        res.status(204).end();
      }),
    );
  }
  return r;
}
