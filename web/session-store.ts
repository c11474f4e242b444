import session from 'express-session';
import type { Db } from '../core/index.js';

const DEFAULT_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * express-session store in the same SQLite database, so web sessions survive a restart.
 * The user id is kept in its own column so a user's sessions can be ended at once.
 */
export class SqliteSessionStore extends session.Store {
  readonly #db: Db;
  constructor(db: Db) {
    super();
    this.#db = db;
  }

  override get(sid: string, cb: (err: unknown, s?: session.SessionData | null) => void): void {
    try {
      const row = this.#db.prepare('SELECT data, expires_at FROM web_sessions WHERE sid = ?').get(sid) as
        | { data: string; expires_at: number }
        | undefined;
      if (!row || row.expires_at <= Date.now()) return cb(null, null);
      cb(null, JSON.parse(row.data) as session.SessionData);
    } catch (err) {
      cb(err);
    }
  }

  override set(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    try {
      const expires = expiry(sess);
      const userId = (sess as { userId?: number }).userId ?? null;
      this.#db
        .prepare(
          `INSERT INTO web_sessions (sid, user_id, data, expires_at) VALUES (?, ?, ?, ?)
           ON CONFLICT(sid) DO UPDATE SET user_id = excluded.user_id, data = excluded.data, expires_at = excluded.expires_at`,
        )
        .run(sid, userId, JSON.stringify(sess), expires);
      cb?.();
    } catch (err) {
      cb?.(err);
    }
  }

  override touch(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    try {
      this.#db.prepare('UPDATE web_sessions SET expires_at = ? WHERE sid = ?').run(expiry(sess), sid);
      cb?.();
    } catch (err) {
      cb?.(err);
    }
  }

  override destroy(sid: string, cb?: (err?: unknown) => void): void {
    try {
      this.#db.prepare('DELETE FROM web_sessions WHERE sid = ?').run(sid);
      cb?.();
    } catch (err) {
      cb?.(err);
    }
  }

  /** End every web session of a user (deactivation, password change). Returns how many. */
  destroyUserSessions(userId: number): number {
    return this.#db.prepare('DELETE FROM web_sessions WHERE user_id = ?').run(userId).changes;
  }

  /** Remove expired rows. */
  prune(): number {
    return this.#db.prepare('DELETE FROM web_sessions WHERE expires_at <= ?').run(Date.now()).changes;
  }
}

function expiry(sess: session.SessionData): number {
  const e = sess.cookie?.expires;
  return e ? new Date(e).getTime() : Date.now() + DEFAULT_TTL_MS;
}
