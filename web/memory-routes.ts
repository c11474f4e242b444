import { Router, type Request } from 'express';
import { AppError, AuthError, Encryptor, NotFoundError, getUserById, loadOrCreateEncryptionKey, verifyAgentUserToken, type Db } from '../core/index.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import { validateBody } from './validate.js';

/** The memory source fetch_memory may never hand to the agent (docs/rules.md#data-access-rules, rule 7). */
export const REFUSED_MEMORY_SOURCE = 'bi';
export const MEMORY_CONTENT_MAX = 4000;
export const MEMORIES_PER_USER_MAX = 1000;
const AGENT_LIST_DEFAULT = 50;
const AGENT_LIST_MAX = 200;

export interface MemoryEntry {
  id: number;
  content: string;
  source: string;
  created_at: string;
}

/**
 * Optional hook the daemon may provide in ctx.services.agentSessions: when present, an
 * agent token is accepted only while its chat session is live and owned by its user.
 */
export interface AgentSessionCheck {
  isLive(sessionId: string, userId: number): boolean;
}

const ADD_SCHEMA = {
  type: 'object',
  required: ['content'],
  additionalProperties: false,
  properties: {
    content: { type: 'string', minLength: 1, maxLength: MEMORY_CONTENT_MAX },
    source: { type: 'string', pattern: '^[a-z][a-z0-9_.-]{0,31}$', default: 'user' },
  },
} as const;

interface MemoryRow {
  id: number;
  user_id: number;
  content: string;
  source: string;
  created_at: string;
}

/**
 * Memory entries at rest: content is AES-256-GCM encrypted (core Encryptor, the data folder's
 * key) with the owner's id as associated data, so a row moved to another user fails to decrypt.
 * `source` stays clear text: the `bi` rule is enforced in SQL.
 */
export class MemoryStore {
  readonly #db: Db;
  readonly #enc: Encryptor;
  constructor(db: Db, enc: Encryptor) {
    this.#db = db;
    this.#enc = enc;
  }
  #open(r: MemoryRow): MemoryEntry {
    return { id: r.id, content: this.#enc.decrypt(r.content, `memory:${r.user_id}`), source: r.source, created_at: r.created_at };
  }
  add(userId: number, content: string, source: string): MemoryEntry {
    return this.#db.transaction(() => {
      const { n } = this.#db.prepare('SELECT COUNT(*) AS n FROM memories WHERE user_id = ?').get(userId) as { n: number };
      if (n >= MEMORIES_PER_USER_MAX) {
        throw new AppError('ERR_MEMORY_LIMIT', `at most ${MEMORIES_PER_USER_MAX} memory entries per user`, { status: 409 });
      }
      const info = this.#db
        .prepare('INSERT INTO memories (user_id, content, source) VALUES (?, ?, ?)')
        .run(userId, this.#enc.encrypt(content, `memory:${userId}`), source);
      return this.#open(this.#db.prepare('SELECT * FROM memories WHERE id = ?').get(info.lastInsertRowid) as MemoryRow);
    })();
  }
  /** Own entries, newest first; `excludeSource` is filtered in SQL (never decrypted). */
  list(userId: number, opts: { excludeSource?: string; source?: string } = {}): MemoryEntry[] {
    const where = ['user_id = ?'];
    const args: unknown[] = [userId];
    if (opts.excludeSource !== undefined) {
      where.push('source <> ?');
      args.push(opts.excludeSource);
    }
    if (opts.source !== undefined) {
      where.push('source = ?');
      args.push(opts.source);
    }
    const rows = this.#db.prepare(`SELECT * FROM memories WHERE ${where.join(' AND ')} ORDER BY id DESC`).all(...args) as MemoryRow[];
    return rows.map((r) => this.#open(r));
  }
  get(userId: number, id: number): MemoryEntry | undefined {
    const r = this.#db.prepare('SELECT * FROM memories WHERE id = ? AND user_id = ?').get(id, userId) as MemoryRow | undefined;
    return r && this.#open(r);
  }
  count(userId: number, source: string): number {
    return (this.#db.prepare('SELECT COUNT(*) AS n FROM memories WHERE user_id = ? AND source = ?').get(userId, source) as { n: number }).n;
  }
  delete(userId: number, id: number): boolean {
    return this.#db.prepare('DELETE FROM memories WHERE id = ? AND user_id = ?').run(id, userId).changes > 0;
  }
}

function storeFor(ctx: WebContext): MemoryStore {
  return new MemoryStore(ctx.db, new Encryptor(loadOrCreateEncryptionKey(ctx.config.dataDir, ctx.config.encryptionKey)));
}

/** /api/memories: a logged-in user adds, lists and deletes their own memory entries. */
export function memoryRoutes(ctx: WebContext): Router {
  const r = Router();
  const store = storeFor(ctx);
  r.use(requireUser);

  r.get('/', (req, res) => {
    res.json({ memories: store.list(req.user!.id) });
  });

  r.post('/', (req, res) => {
    const body = validateBody<{ content: string; source: string }>(ADD_SCHEMA, req.body);
    const entry = store.add(req.user!.id, body.content, body.source);
    req.log.info({ memoryId: entry.id, source: entry.source }, 'memory added');
    res.status(201).json(entry);
  });

  r.delete('/:id', (req, res) => {
    const id = Number(req.params.id);
    // Another user's entry answers the same 404 as a missing one: ids tell nothing.
    if (!(Number.isSafeInteger(id) && id > 0 && store.delete(req.user!.id, id))) {
      throw new NotFoundError('ERR_MEMORY_NOT_FOUND', 'no such memory entry');
    }
    res.status(204).end();
  });

  return r;
}

/** Resolve the agent token on a request to an active user id (401 otherwise). */
function agentUser(ctx: WebContext, req: Request): { userId: number; sessionId: string } {
  const secret = ctx.config.agentUserTokenSecret;
  if (!secret) throw new AppError('ERR_AGENT_TOKEN_UNCONFIGURED', 'agent API is not configured', { status: 503 });
  const m = /^Bearer ([A-Za-z0-9._-]{1,2048})$/.exec(req.get('authorization') ?? '');
  if (!m) throw new AuthError('ERR_AGENT_TOKEN_INVALID', 'missing or malformed agent user token');
  const claims = verifyAgentUserToken(secret, m[1]);
  const user = getUserById(ctx.db, claims.userId);
  if (!user || !user.is_active) throw new AuthError('ERR_AGENT_TOKEN_INVALID', 'invalid agent user token');
  const sessions = ctx.services.agentSessions as AgentSessionCheck | undefined;
  if (sessions && !sessions.isLive(claims.sessionId, claims.userId)) {
    throw new AuthError('ERR_AGENT_TOKEN_INVALID', 'the chat session of this token has ended');
  }
  return { userId: claims.userId, sessionId: claims.sessionId };
}

function refused(): AppError {
  return new AppError('ERR_MEMORY_SOURCE_REFUSED', `memory entries with source "${REFUSED_MEMORY_SOURCE}" are not available to the agent`, { status: 403 });
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

  r.get('/memories', (req, res) => {
    const { userId } = agentUser(ctx, req);
    const source = typeof req.query.source === 'string' ? req.query.source : undefined;
    if (source !== undefined && source.toLowerCase() === REFUSED_MEMORY_SOURCE) throw refused();
    const rawLimit = typeof req.query.limit === 'string' ? Number(req.query.limit) : AGENT_LIST_DEFAULT;
    if (!Number.isSafeInteger(rawLimit) || rawLimit < 1 || rawLimit > AGENT_LIST_MAX) {
      throw new AppError('ERR_VALIDATION', `limit: must be an integer from 1 to ${AGENT_LIST_MAX}`, { status: 400 });
    }
    const q = typeof req.query.q === 'string' ? req.query.q.slice(0, 200).toLowerCase() : '';
    // Content is encrypted at rest, so the text filter runs here, after the SQL source filter.
    const memories = store
      .list(userId, { excludeSource: REFUSED_MEMORY_SOURCE, source })
      .filter((m) => !q || m.content.toLowerCase().includes(q))
      .slice(0, rawLimit);
    const n = store.count(userId, REFUSED_MEMORY_SOURCE);
    req.log.info({ count: memories.length, withheld: n }, 'agent memories read');
    res.json({ memories, withheld: { [REFUSED_MEMORY_SOURCE]: n } });
  });

  r.get(
    '/memories/:id',
    asyncHandler(async (req, res) => {
      const { userId } = agentUser(ctx, req);
      const id = Number(req.params.id);
      const row = Number.isSafeInteger(id) && id > 0 ? store.get(userId, id) : undefined;
      if (!row) throw new NotFoundError('ERR_MEMORY_NOT_FOUND', 'no such memory entry');
      if (row.source === REFUSED_MEMORY_SOURCE) throw refused();
      res.json(row);
    }),
  );

  return r;
}
