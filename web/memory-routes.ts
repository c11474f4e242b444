import { Router, type Request } from 'express';
import { AppError, verifyAgentUserToken } from '../core/index.js';
import { MEMORY_CONTENT_MAX, MemoryStore, REFUSED_MEMORY_SOURCE } from '../domain/memories.js';
import { getUserById } from '../domain/users.js';
import { intQueryParam } from './query-params.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { validateBody } from './validate.js';
import { z } from 'zod';
import type { AgentMemoryList, MemoryList } from '../core/api-types-account.js';

export {
  MEMORIES_PER_USER_MAX,
  MEMORY_CONTENT_MAX,
  MemoryStore,
  REFUSED_MEMORY_SOURCE,
  type MemoryEntry,
} from '../domain/memories.js';

const AGENT_LIST_DEFAULT = 50;
const AGENT_LIST_MAX = 200;

/**
 * Optional hook the daemon may provide in ctx.services.agentSessions: when present, an
 * agent token is accepted only while its chat session is live and owned by its user (web/ports.ts).
 */
export type { AgentSessionCheck } from './ports.js';

export const MemoryAddSchema = z.strictObject({
  content: z.string().min(1).max(MEMORY_CONTENT_MAX),
  source: z
    .string()
    .regex(/^[a-z][a-z0-9_.-]{0,31}$/)
    .default('user'),
});

function storeFor(ctx: WebContext): MemoryStore {
  return new MemoryStore(ctx.database.sql, ctx.encryptor);
}

/** /api/memories: a logged-in user adds, lists and deletes their own memory entries. */
export function memoryRoutes(ctx: WebContext): Router {
  const r = Router();
  const store = storeFor(ctx);
  r.use(requireUser);

  r.get(
    '/',
    asyncHandler(async (req, res) => {
      res.json({ memories: await store.list(req.user!.id) } satisfies MemoryList);
    }),
  );

  r.post(
    '/',
    asyncHandler(async (req, res) => {
      const body = validateBody(MemoryAddSchema, req.body);
      const entry = await store.add(req.user!.id, body.content, body.source);
      req.log.info({ memoryId: entry.id, source: entry.source }, 'memory added');
      res.status(201).json(entry);
    }),
  );

  r.delete(
    '/:id',
    asyncHandler(async (req, res) => {
      const id = Number(req.params.id);
      // Another user's entry answers the same 404 as a missing one: ids tell nothing.
      if (!(Number.isSafeInteger(id) && id > 0 && (await store.delete(req.user!.id, id)))) {
        throw new AppError('ERR_MEMORY_NOT_FOUND', 'no such memory entry');
      }
      res.status(204).end();
    }),
  );

  return r;
}

/** Resolve the agent token on a request to an active user id (401 otherwise). */
async function agentUser(ctx: WebContext, req: Request): Promise<{ userId: number; sessionId: string }> {
  const secret = ctx.config.agentUserTokenSecret;
  if (!secret) throw new AppError('ERR_AGENT_TOKEN_UNCONFIGURED', 'agent API is not configured');
  const m = /^Bearer ([A-Za-z0-9._-]{1,2048})$/.exec(req.get('authorization') ?? '');
  if (!m) throw new AppError('ERR_AGENT_TOKEN_INVALID', 'missing or malformed agent user token');
  const claims = verifyAgentUserToken(secret, m[1]);
  const user = await getUserById(ctx.database.sql, claims.userId);
  if (!user || !user.is_active) throw new AppError('ERR_AGENT_TOKEN_INVALID', 'invalid agent user token');
  if (!ctx.services.agentSessions.isLive(claims.sessionId, claims.userId)) {
    throw new AppError('ERR_AGENT_TOKEN_INVALID', 'the chat session of this token has ended');
  }
  return { userId: claims.userId, sessionId: claims.sessionId };
}

function refused(): AppError {
  return new AppError(
    'ERR_MEMORY_SOURCE_REFUSED',
    `memory entries with source "${REFUSED_MEMORY_SOURCE}" are not available to the agent`,
  );
}

/**
 * /api/agent: the agent API the sandbox reaches through the proxy's `host` route,
 * authenticated by `Authorization: Bearer <AGENT_USER_TOKEN>` (no cookie, no CSRF: GET only).
 *
 * Decision on `bi` entries (RBAC rule 7): a listing FILTERS them out in SQL (their content
 * never leaves the database towards the sandbox) and reports how many were withheld; asking
 * for them explicitly (?source=bi, or GET /memories/:id of a `bi` entry) is REFUSED with
 * 403 ERR_MEMORY_SOURCE_REFUSED.
 */
export function agentApiRoutes(ctx: WebContext): Router {
  const r = Router();
  const store = storeFor(ctx);

  r.get(
    '/memories',
    asyncHandler(async (req, res) => {
      const { userId } = await agentUser(ctx, req);
      const source = typeof req.query.source === 'string' ? req.query.source : undefined;
      if (source !== undefined && source.toLowerCase() === REFUSED_MEMORY_SOURCE) throw refused();
      const limit = intQueryParam(req, 'limit', { min: 1, max: AGENT_LIST_MAX }) ?? AGENT_LIST_DEFAULT;
      const q = typeof req.query.q === 'string' ? req.query.q.slice(0, 200) : '';
      const answer = await store.agentList(userId, { source, q, limit });
      req.log.info(
        { count: answer.memories.length, withheld: answer.withheld[REFUSED_MEMORY_SOURCE] },
        'agent memories read',
      );
      res.json(answer satisfies AgentMemoryList);
    }),
  );

  r.get(
    '/memories/:id',
    asyncHandler(async (req, res) => {
      const { userId } = await agentUser(ctx, req);
      const id = Number(req.params.id);
      const row = Number.isSafeInteger(id) && id > 0 ? await store.get(userId, id) : undefined;
      if (!row) throw new AppError('ERR_MEMORY_NOT_FOUND', 'no such memory entry');
      if (row.source === REFUSED_MEMORY_SOURCE) throw refused();
      res.json(row);
    }),
  );

  return r;
}
