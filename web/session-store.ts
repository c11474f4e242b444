import session from 'express-session';
import type { Db } from '../core/index.js';
import type { Sql } from '../domain/db/index.js';
import { deleteUserWebSessions, deleteWebSession, pruneWebSessions, readWebSession, touchWebSession, writeWebSession } from '../domain/web-sessions.js';

const DEFAULT_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * express-session store in Airlock's database (SQLite or PostgreSQL, domain/web-sessions.ts), so
 * login sessions survive a restart and every node of a fleet sees them. The user id is kept in
 * its own column so a user's sessions can be ended at once.
 */
export class DbSessionStore extends session.Store {
  readonly #db: Sql;
  constructor(db: Sql) {
    super();
    this.#db = db;
  }

  override get(sid: string, cb: (err: unknown, s?: session.SessionData | null) => void): void {
    readWebSession(this.#db, sid).then(
      (data) => cb(null, data === undefined ? null : (JSON.parse(data) as session.SessionData)),
      (err: unknown) => cb(err),
    );
  }

  override set(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    writeWebSession(this.#db, sid, { userId: sess.userId ?? null, data: JSON.stringify(sess), expiresAt: expiry(sess) }).then(
      () => cb?.(),
      (err: unknown) => cb?.(err),
    );
  }

  override touch(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    touchWebSession(this.#db, sid, expiry(sess)).then(
      () => cb?.(),
      (err: unknown) => cb?.(err),
    );
  }

  override destroy(sid: string, cb?: (err?: unknown) => void): void {
    deleteWebSession(this.#db, sid).then(
      () => cb?.(),
      (err: unknown) => cb?.(err),
    );
  }

  /** End every web session of a user (deactivation, password change). Returns how many. */
  destroyUserSessions(userId: number): Promise<number> {
    return deleteUserWebSessions(this.#db, userId);
  }

  /** Remove expired rows. */
  prune(): Promise<number> {
    return pruneWebSessions(this.#db);
  }
}

function expiry(sess: session.SessionData): number {
  const e = sess.cookie?.expires;
  return e ? new Date(e).getTime() : Date.now() + DEFAULT_TTL_MS;
}
