import { Router } from 'express';
import { AppError, getUserById } from '../core/index.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';

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
    const s = ctx.services.sandboxAdmin as SandboxAdmin | undefined;
    if (!s) throw new AppError('ERR_RUNTIME_UNAVAILABLE', 'the sandbox runtime is not running on this server (no Docker engine)', { status: 503 });
    return s;
  };
  r.use(requireSuperuser);
  r.get('/', (_req, res) => {
    const all = admin().list();
    const sessions = all
      .filter((s) => s.sessionId)
      .map((s) => ({
        id: s.sessionId,
        container_id: s.containerId.slice(0, 12),
        user_id: s.userId,
        username: s.userId === null ? null : (getUserById(ctx.db, s.userId)?.username ?? null),
        status: s.stale ? `${s.state} (stale)` : s.state,
        stale: s.stale,
        turns: s.turns,
        started_at: new Date(s.claimedAt ?? s.createdAt).toISOString(),
        last_used_at: new Date(s.lastUsedAt).toISOString(),
      }));
    res.json({ sessions, pool_ready: all.filter((s) => !s.sessionId).length });
  });
  for (const op of ['restart', 'kill'] as const) {
    r.post(
      `/:id/${op}`,
      asyncHandler(async (req, res) => {
        await admin()[op](String(req.params.id));
        req.log.info({ sessionId: req.params.id, op }, 'session operation by admin');
        res.status(204).end();
      }),
    );
  }
  return r;
}
