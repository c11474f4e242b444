import { Router } from 'express';
import { logAction } from '../domain/action-log.js';
import { sessionLabels } from '../domain/session-labels.js';
import { asyncHandler, requireSuperuser, type WebContext } from './context.js';
import type { LiveSession, LiveSessionList } from './admin-api.js';
import type { SandboxAdmin } from './ports.js';

/** What the live-sessions admin page needs from the daemon's session manager (ctx.services.sandboxAdmin; web/ports.ts). */
export type { SandboxAdmin } from './ports.js';

const secs = (ms: number): number => Math.max(0, Math.round(ms / 1000));

/** Idle time, memory, CPU and the running turn of one live sandbox, as the page shows them. */
function liveFigures(
  s: ReturnType<SandboxAdmin['list']>[number],
  usage: { memoryBytes: number; cpuSeconds: number } | undefined,
  now: number,
): Pick<LiveSession, 'idle_s' | 'memory_bytes' | 'cpu_seconds' | 'turn'> {
  const turn = s.turn
    ? { running_s: secs(now - s.turn.startedAt), phase: s.turn.phase, phase_s: secs(now - s.turn.phaseSince) }
    : null;
  return {
    idle_s: turn ? null : secs(now - s.lastUsedAt),
    memory_bytes: usage?.memoryBytes ?? null,
    cpu_seconds: usage?.cpuSeconds ?? null,
    turn,
  };
}

/**
 * /api/admin/sessions (superuser, session + CSRF): the live sandboxes with restart and kill,
 * the same operations as `airlock sessions …` on the operator socket.
 */
export function adminSessionRoutes(ctx: WebContext): Router {
  const r = Router();
  // Without a sandbox runtime each of its calls answers ERR_RUNTIME_UNAVAILABLE (web/services.ts).
  const admin = (): SandboxAdmin => ctx.services.sandboxAdmin;
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
      // A stable order: the chat's creation, then its id. The daemon lists a restarted sandbox
      // last, which moved its row to the end of the page's list.
      const key = (s: (typeof live)[number]) =>
        `${labels.created.get(s.sessionId) ?? new Date(s.createdAt).toISOString()} ${s.sessionId}`;
      const sessions = [...live]
        .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
        .map((s) => ({
          id: s.sessionId,
          title: labels.titles.get(s.sessionId) ?? null,
          container_id: s.containerId.slice(0, 12),
          user_id: s.userId,
          username: s.userId === null ? null : (labels.users.get(s.userId)?.username ?? null),
          display_name: s.userId === null ? null : (labels.users.get(s.userId)?.display_name ?? null),
          status: s.stale ? `${s.state} (stale)` : s.state,
          stale: s.stale,
          // The chat's turns (kept across a restart); the sandbox's own count for a chat not stored.
          turns: labels.turns.get(s.sessionId) ?? s.turns,
          started_at: new Date(s.claimedAt ?? s.createdAt).toISOString(),
          last_used_at: new Date(s.lastUsedAt).toISOString(),
          ...liveFigures(s, admin().usage?.(s.containerId), Date.now()),
        }));
      res.json({ sessions, pool_ready: all.filter((s) => !s.sessionId).length } satisfies LiveSessionList);
    }),
  );
  for (const op of ['restart', 'kill'] as const) {
    r.post(
      `/:id/${op}`,
      asyncHandler(async (req, res) => {
        const id = String(req.params.id);
        const owner =
          admin()
            .list()
            .find((s) => s.sessionId === id)?.userId ?? null;
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
