import type { Sql } from './db/index.js';

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
 * `begin` checks and records in one serializable transaction, so guesses sent in parallel see each
 * other on every node: on SQLite transactions run one at a time; on PostgreSQL two attempts
 * that read and write the same failures conflict, one is rolled back and tried again, then sees
 * the other's row.
 */
export class LoginLimiter {
  readonly #db: Sql;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  #lastPrune = 0;

  constructor(db: Sql, opts: LoginLimitOptions) {
    this.#db = db;
    this.#max = opts.maxFailures;
    this.#windowMs = opts.windowMs;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * May `username` try to log in from `address` now? When it may, the attempt is recorded at
   * once as a failure (in the transaction of the check, so guesses sent in parallel see each
   * other): `succeed` removes it again, `fail` keeps it.
   */
  async begin(username: string, address: string): Promise<LoginVerdict> {
    const u = username.toLowerCase();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#db
          .transaction()
          .setIsolationLevel('serializable')
          .execute((trx) => this.#admit(trx, u, address, this.#now()));
      } catch (err) {
        if (!isSerializationFailure(err) || attempt >= MAX_TRIES) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
      }
    }
  }

  async #admit(trx: Sql, u: string, address: string, now: number): Promise<LoginVerdict> {
    const since = now - this.#windowMs;
    const recent = trx.selectFrom('login_failures').where('at_ms', '>', since);
    const addr = await recent
      .where('address', '=', address)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('at_ms').as('first')])
      .executeTakeFirstOrThrow();
    const addrN = Number(addr.n);
    if (addrN >= this.#max * ADDRESS_FACTOR)
      return refuse('address', now, nullableNumber(addr.first) ?? now, this.#windowMs);
    if (addrN > 0) {
      const user = await recent
        .where('username', '=', u)
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('at_ms').as('first')])
        .executeTakeFirstOrThrow();
      if (Number(user.n) >= this.#max)
        return refuse('username', now, nullableNumber(user.first) ?? now, this.#windowMs);
    }
    const pair = await recent
      .where('username', '=', u)
      .where('address', '=', address)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('at_ms').as('last')])
      .executeTakeFirstOrThrow();
    const pairN = Number(pair.n);
    const last = nullableNumber(pair.last);
    if (pairN > 0 && last !== undefined) {
      const until = last + delayMs(pairN);
      if (until > now) return { ok: false, reason: 'delay', retryAfterS: secondsUntil(now, until) };
    }
    await trx.insertInto('login_failures').values({ username: u, address, at_ms: now }).execute();
    return { ok: true };
  }

  /** The attempt `begin` recorded failed: returns how long the failed answer should wait (the pair's new delay). */
  async fail(username: string, address: string): Promise<number> {
    const now = this.#now();
    const r = await this.#db
      .selectFrom('login_failures')
      .where('username', '=', username.toLowerCase())
      .where('address', '=', address)
      .where('at_ms', '>', now - this.#windowMs)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    await this.#prune(now);
    return delayMs(Number(r.n));
  }

  /** A successful login clears this pair's failures (the username's other failures stay). */
  async succeed(username: string, address: string): Promise<void> {
    await this.#db
      .deleteFrom('login_failures')
      .where('username', '=', username.toLowerCase())
      .where('address', '=', address)
      .execute();
  }

  async #prune(now: number): Promise<void> {
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    await this.#db
      .deleteFrom('login_failures')
      .where('at_ms', '<=', now - this.#windowMs)
      .execute();
  }
}

/** Serialization conflicts retried before the error goes up (each costs one short transaction). */
const MAX_TRIES = 10;

/** PostgreSQL's serialization_failure / deadlock_detected: the transaction may simply run again. */
function isSerializationFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '40001' || code === '40P01';
}

function nullableNumber(v: unknown): number | undefined {
  return v === null || v === undefined ? undefined : Number(v);
}

function refuse(reason: 'username' | 'address', now: number, first: number, windowMs: number): LoginVerdict {
  return { ok: false, reason, retryAfterS: secondsUntil(now, first + windowMs) };
}

/** The delay after the n-th failure of one username from one address. */
export function delayMs(n: number): number {
  if (n <= 0) return 0;
  return Math.min(LOGIN_DELAY_BASE_MS * 2 ** Math.min(n - 1, 30), LOGIN_DELAY_MAX_MS);
}

function secondsUntil(now: number, at: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}
