import type { Db } from '../core/index.js';

/** First progressive delay after a failed login of one username from one address. */
export const LOGIN_DELAY_BASE_MS = 200;
/** Longest progressive delay. */
export const LOGIN_DELAY_MAX_MS = 10_000;
/** An address may fail this many times the per-username limit (a shared NAT carries many users). */
export const ADDRESS_FACTOR = 4;

export interface LoginLimitOptions {
  /** Failures of one username (from addresses that failed) before that username is locked for them. */
  maxFailures: number;
  windowMs: number;
  now?: () => number;
}

/** A login attempt's verdict: go on, or wait `retryAfterS` (429). */
export type LoginVerdict = { ok: true } | { ok: false; retryAfterS: number; reason: 'delay' | 'username' | 'address' };

/**
 * Login limits that an attacker can neither dodge nor turn against a user (OWASP
 * Authentication Cheat Sheet: protect against automated attacks without letting anyone lock
 * an account out). State lives in the database, so every node of a fleet shares it and a
 * restart forgets nothing. Three rules, all counted over the window:
 *
 * 1. Progressive delay per username + address: after the n-th failure the pair may try again
 *    only after min(BASE · 2^(n-1), MAX) ms, counted from its last attempt. The failed answer
 *    itself waits that long, so a client trying one password after another never sees a 429;
 *    parallel guesses do (each attempt is recorded before the password is checked).
 * 2. Username lock: after `maxFailures` failures of a username, further attempts for it are
 *    refused, but only from addresses that have failed recently. An address with no recent
 *    failure is never refused by this rule: the owner typing the right password elsewhere gets in
 *    even while someone hammers their name. (Each new address an attacker uses gets one guess
 *    per username and window before rule 3 and rule 1 apply to it.)
 * 3. Address lock: an address with `maxFailures · ADDRESS_FACTOR` failures (any usernames)
 *    is refused for every username until its failures age out of the window.
 *
 * `begin` checks and records in one synchronous step, which is atomic on SQLite; on a shared
 * PostgreSQL the same two statements belong in one transaction holding a lock on the pair.
 */
export class LoginLimiter {
  readonly #db: Db;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  #lastPrune = 0;

  constructor(db: Db, opts: LoginLimitOptions) {
    this.#db = db;
    this.#max = opts.maxFailures;
    this.#windowMs = opts.windowMs;
    this.#now = opts.now ?? Date.now;
    // Kept out of the migrations on purpose: plain SQL both engines take, and the table is
    // disposable (losing it only forgets recent failures).
    db.exec(`CREATE TABLE IF NOT EXISTS login_failures (
      id INTEGER PRIMARY KEY,
      username TEXT NOT NULL,
      address TEXT NOT NULL,
      at_ms INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS login_failures_user ON login_failures (username, at_ms);
    CREATE INDEX IF NOT EXISTS login_failures_addr ON login_failures (address, at_ms);`);
  }

  /**
   * May `username` try to log in from `address` now? When it may, the attempt is recorded at
   * once as a failure (in the same synchronous step as the check, so guesses sent in parallel
   * see each other): `succeed` removes it again, `fail` keeps it.
   */
  begin(username: string, address: string): LoginVerdict {
    const now = this.#now();
    const since = now - this.#windowMs;
    const u = username.toLowerCase();
    const pair = this.#db
      .prepare('SELECT COUNT(*) AS n, MAX(at_ms) AS last FROM login_failures WHERE username = ? AND address = ? AND at_ms > ?')
      .get(u, address, since) as { n: number; last: number | null };
    const addr = this.#db.prepare('SELECT COUNT(*) AS n, MIN(at_ms) AS first FROM login_failures WHERE address = ? AND at_ms > ?').get(address, since) as {
      n: number;
      first: number | null;
    };
    if (addr.n >= this.#max * ADDRESS_FACTOR) return { ok: false, reason: 'address', retryAfterS: secondsUntil(now, (addr.first ?? now) + this.#windowMs) };
    if (addr.n > 0) {
      const user = this.#db.prepare('SELECT COUNT(*) AS n, MIN(at_ms) AS first FROM login_failures WHERE username = ? AND at_ms > ?').get(u, since) as {
        n: number;
        first: number | null;
      };
      if (user.n >= this.#max) return { ok: false, reason: 'username', retryAfterS: secondsUntil(now, (user.first ?? now) + this.#windowMs) };
    }
    if (pair.n > 0 && pair.last !== null) {
      const until = pair.last + delayMs(pair.n);
      if (until > now) return { ok: false, reason: 'delay', retryAfterS: secondsUntil(now, until) };
    }
    this.#db.prepare('INSERT INTO login_failures (username, address, at_ms) VALUES (?, ?, ?)').run(u, address, now);
    return { ok: true };
  }

  /** The attempt `begin` recorded failed: returns how long the failed answer should wait (the pair's new delay). */
  fail(username: string, address: string): number {
    const now = this.#now();
    const n = (this.#db.prepare('SELECT COUNT(*) AS n FROM login_failures WHERE username = ? AND address = ? AND at_ms > ?').get(username.toLowerCase(), address, now - this.#windowMs) as { n: number }).n;
    this.#prune(now);
    return delayMs(n);
  }

  /** A successful login clears this pair's failures (the username's other failures stay). */
  succeed(username: string, address: string): void {
    this.#db.prepare('DELETE FROM login_failures WHERE username = ? AND address = ?').run(username.toLowerCase(), address);
  }

  #prune(now: number): void {
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    this.#db.prepare('DELETE FROM login_failures WHERE at_ms <= ?').run(now - this.#windowMs);
  }
}

/** The delay after the n-th failure of one username from one address. */
export function delayMs(n: number): number {
  if (n <= 0) return 0;
  return Math.min(LOGIN_DELAY_BASE_MS * 2 ** Math.min(n - 1, 30), LOGIN_DELAY_MAX_MS);
}

function secondsUntil(now: number, at: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}
