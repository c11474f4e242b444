/**
 * At most `limit` holders at once; the rest wait in arrival order. The session manager starts
 * sandboxes through one gate: a burst of new sessions on a small host then starts a few
 * containers at a time instead of all at once, where every agent child would miss its ready
 * deadline together (measured: 10 cold starts at once on 2 cores all failed).
 */
export class StartGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  }

  /** Resolves with a release function once a place is free; call it exactly once. */
  async enter(): Promise<() => void> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The place passes straight to the next waiter; `active` stays the same.
      if (next) next();
      else this.active--;
    };
  }

  /** Holders now, and callers waiting for a place (for metrics and tests). */
  get stats(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }
}
