/**
 * Node's timers in a process started from a V8 startup snapshot (the agent and the supervisor in
 * the image: docs/runtime.md, "Cold start, step by step").
 *
 * Node's timers keep, in module state, the expiry the event loop's timer is armed for
 * (`nextExpiry`), and arm the loop's timer again only for a new timer that expires EARLIER than
 * that. `clearTimeout` leaves the value as it was. A warm-up that clears a timer before it fires
 * (the agent's demo turn does) leaves in the blob the expiry of the build process's last armed
 * timer, a time on the build process's clock, while the new process's loop timer is not armed at
 * all. Every timer a new process makes once it is older than that stale expiry is then never
 * fired: no stall timer, no retry backoff, no bound (issue 41).
 *
 * Two guards, both needed:
 * - `settleTimersBeforeSnapshot()`, the last step of a warm-up: one timer that fires. Firing
 *   recomputes `nextExpiry` from the (empty) queue, so the blob holds no stale expiry at all.
 *   Without it the stale value was about the build's uptime at its last timer, a second or so: an
 *   agent whose start took longer than that (twenty sandboxes starting at once on two cores) had
 *   no timer ever fire, and a stalled model answer ran into the egress gateway's 120 s bound
 *   instead of the 30 s stall bound (test/integration/agent-snapshot.test.ts reproduces it).
 * - `rearmTimersAfterSnapshot()`, first thing in the deserialize main function: one short timer,
 *   for a blob made without the first guard.
 */
export function rearmTimersAfterSnapshot(): void {
  setTimeout(() => undefined, 1);
}

/** The last step of a snapshot's warm-up: resolves once one timer has fired (see above). */
export function settleTimersBeforeSnapshot(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1));
}
