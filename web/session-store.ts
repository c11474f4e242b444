import session from 'express-session';
import type { Sql } from '../domain/db/index.js';
import {
  deleteUserWebSessions,
  deleteWebSession,
  pruneWebSessions,
  readWebSession,
  touchWebSession,
  writeWebSession,
} from '../domain/web-sessions.js';

const DEFAULT_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * A rolling session's new expiry is written once it is this much later than the one this store
 * last wrote, not on every request: a 7-day session may end up to a minute early, and a chat turn
 * does not wait for a write that changes nothing that matters (the end of each response waits
 * for the touch).
 */
export const TOUCH_EVERY_MS = 60_000;
/** Sessions whose last written expiry is remembered; past that the memory starts over (a write each, once). */
const REMEMBERED = 50_000;

/**
 * express-session store in Airlock's database (SQLite or PostgreSQL, domain/web-sessions.ts), so
 * login sessions survive a restart and every node of a fleet sees them. The user id is kept in
 * its own column so a user's sessions can be ended at once.
 */
export class DbSessionStore extends session.Store {
  readonly #db: Sql;
  /** sid → the expiry this store last wrote (per process; another node's writes only make it older). */
  readonly #written = new Map<string, number>();
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
    const expiresAt = expiry(sess);
    writeWebSession(this.#db, sid, { userId: sess.userId ?? null, data: JSON.stringify(sess), expiresAt }).then(
      () => {
        this.#wrote(sid, expiresAt);
        cb?.();
      },
      (err: unknown) => cb?.(err),
    );
  }

  override touch(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    const expiresAt = expiry(sess);
    const last = this.#written.get(sid);
    if (last !== undefined && expiresAt - last < TOUCH_EVERY_MS) {
      cb?.();
      return;
    }
    touchWebSession(this.#db, sid, expiresAt).then(
      () => {
        this.#wrote(sid, expiresAt);
        cb?.();
      },
      (err: unknown) => cb?.(err),
    );
  }

  #wrote(sid: string, expiresAt: number): void {
    if (this.#written.size >= REMEMBERED && !this.#written.has(sid)) this.#written.clear();
    this.#written.set(sid, expiresAt);
  }

  override destroy(sid: string, cb?: (err?: unknown) => void): void {
    this.#written.delete(sid);
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
