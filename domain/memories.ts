import { AppError } from '../core/errors.js';
import type { Encryptor } from '../core/crypto.js';
import type { Row, Sql } from './db/index.js';
import type { AgentMemoryList, MemoryEntry } from '../core/api-types-account.js';

/** The memory source fetch_memory may never hand to the agent (docs/rules.md#data-access-rules, rule 7). */
export const REFUSED_MEMORY_SOURCE = 'bi';
export const MEMORY_CONTENT_MAX = 4000;
export const MEMORIES_PER_USER_MAX = 1000;

export type { MemoryEntry };

/**
 * Memory entries at rest: content is AES-256-GCM encrypted (core Encryptor, the data folder's
 * key) with the owner's id as associated data, so a row moved to another user fails to decrypt.
 * `source` stays clear text: the `bi` rule is enforced in SQL.
 */
export class MemoryStore {
  readonly #db: Sql;
  readonly #enc: Encryptor;
  constructor(db: Sql, enc: Encryptor) {
    this.#db = db;
    this.#enc = enc;
  }

  #open(r: Row<'memories'>): MemoryEntry {
    return {
      id: r.id,
      content: this.#enc.decrypt(r.content, `memory:${r.user_id}`),
      source: r.source,
      created_at: r.created_at,
    };
  }

  /** Add an entry; 409 ERR_MEMORY_LIMIT once the user has MEMORIES_PER_USER_MAX (counted in the same transaction). */
  async add(userId: number, content: string, source: string): Promise<MemoryEntry> {
    const row = await this.#db.transaction().execute(async (trx) => {
      const { n } = await trx
        .selectFrom('memories')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow();
      if (Number(n) >= MEMORIES_PER_USER_MAX) {
        throw new AppError('ERR_MEMORY_LIMIT', `at most ${MEMORIES_PER_USER_MAX} memory entries per user`);
      }
      return trx
        .insertInto('memories')
        .values({ user_id: userId, content: this.#enc.encrypt(content, `memory:${userId}`), source })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return this.#open(row);
  }

  /** Own entries, newest first; `excludeSource` is filtered in SQL (never decrypted). */
  async list(userId: number, opts: { excludeSource?: string; source?: string } = {}): Promise<MemoryEntry[]> {
    let q = this.#db.selectFrom('memories').selectAll().where('user_id', '=', userId);
    if (opts.excludeSource !== undefined) q = q.where('source', '<>', opts.excludeSource);
    if (opts.source !== undefined) q = q.where('source', '=', opts.source);
    const rows = await q.orderBy('id', 'desc').execute();
    return rows.map((r) => this.#open(r));
  }

  /**
   * What the agent may read (GET /api/agent/memories): own entries but those of the refused
   * source, which SQL leaves out (never decrypted), counted instead; `q` filters the decrypted
   * text, so it runs here, after the SQL filters.
   */
  async agentList(userId: number, opts: { source?: string; q: string; limit: number }): Promise<AgentMemoryList> {
    const q = opts.q.toLowerCase();
    const memories = (await this.list(userId, { excludeSource: REFUSED_MEMORY_SOURCE, source: opts.source }))
      .filter((m) => !q || m.content.toLowerCase().includes(q))
      .slice(0, opts.limit);
    return { memories, withheld: { [REFUSED_MEMORY_SOURCE]: await this.count(userId, REFUSED_MEMORY_SOURCE) } };
  }

  async get(userId: number, id: number): Promise<MemoryEntry | undefined> {
    const r = await this.#db
      .selectFrom('memories')
      .selectAll()
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return r && this.#open(r);
  }

  async count(userId: number, source: string): Promise<number> {
    const { n } = await this.#db
      .selectFrom('memories')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', userId)
      .where('source', '=', source)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  async delete(userId: number, id: number): Promise<boolean> {
    const r = await this.#db
      .deleteFrom('memories')
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
