/**
 * Re-arm Node's timers in a process started from a V8 startup snapshot (the agent and the
 * supervisor in the image: docs/runtime.md, "Cold start, step by step").
 *
 * Why: Node's timers keep, in module state, the expiry the event loop's timer is armed for
 * (`nextExpiry`), and arm the loop's timer again only for a new timer that expires EARLIER than
 * that. `clearTimeout` leaves the value as it was. The snapshot's warm-up (a demo turn) clears
 * timers, so the blob carries a stale `nextExpiry` of the build process (its uptime plus a
 * bound, some tens of seconds) while the new process's loop timer is not armed at all. Every
 * timer made once the new process is older than that stale expiry was then never fired: an agent
 * that sat idle in the pool for ~30 s before its first turn never woke from its retry backoff nor
 * its stall timer (issue 41: "retrying (1 of 3)…" and then nothing). One short timer at start
 * expires before the stale value, so it is armed; when it fires Node recomputes `nextExpiry`
 * from the (empty) queue and the state is sound again.
 *
 * Call it first thing in the snapshot's deserialize main function; elsewhere it is harmless.
 */
export function rearmTimersAfterSnapshot(): void {
  setTimeout(() => undefined, 1);
}
