/**
 * The one clock of the session runtime and the fleet membership: whatever decides by age (idle
 * reap, staleness, a sandbox's last use, heartbeats, lost nodes, nonce expiry) reads it, never
 * `Date.now()` directly, so a test advances it instead of sleeping (test/helpers/clock.ts).
 * Deadlines of real I/O (a socket connect, an exec's exit) stay on the real clock.
 */
export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
}

/** The real clock (the default everywhere). */
export const systemClock: Clock = { now: () => Date.now() };
