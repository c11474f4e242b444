/**
 * At most `limit` holders at once; the rest wait in arrival order. The session manager starts
 * sandboxes through one gate: a burst of new sessions on a small host then starts a few
 * containers at a time instead of all at once, where every agent child would miss its ready
 * deadline together (measured: 10 cold starts at once on 2 cores all failed).
 */
export class StartGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  /** `onChange` hears every change of the counts (the daemon feeds a gauge with it). */
  constructor(
    readonly limit: number,
    private readonly onChange?: (stats: { active: number; waiting: number }) => void,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  }

  /** Resolves with a release function once a place is free; call it exactly once. */
  async enter(): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
      this.changed();
    } else {
      const turn = new Promise<void>((resolve) => this.waiting.push(resolve));
      this.changed();
      await turn;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The place passes straight to the next waiter; `active` stays the same.
      if (next) next();
      else this.active--;
      this.changed();
    };
  }

  private changed(): void {
    this.onChange?.(this.stats);
  }

  /** Holders now, and callers waiting for a place (for metrics and tests). */
  get stats(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }
}
