/**
 * Fixed-window failure counter (in memory, per process). Used for login: failures are
 * counted per username and per client address; success does not reset the address count.
 */
export class FailureCounter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #hits = new Map<string, { count: number; resetAt: number }>();
  readonly #now: () => number;

  constructor(max: number, windowMs: number, now: () => number = Date.now) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** Seconds until `key` may try again, or 0 when it is under the limit. */
  blockedFor(key: string): number {
    const h = this.#hits.get(key);
    if (!h) return 0;
    const now = this.#now();
    if (h.resetAt <= now) {
      this.#hits.delete(key);
      return 0;
    }
    return h.count >= this.#max ? Math.ceil((h.resetAt - now) / 1000) : 0;
  }

  fail(key: string): void {
    const now = this.#now();
    const h = this.#hits.get(key);
    if (!h || h.resetAt <= now) this.#hits.set(key, { count: 1, resetAt: now + this.#windowMs });
    else h.count++;
    if (this.#hits.size > 100_000) this.#sweep(now);
  }

  reset(key: string): void {
    this.#hits.delete(key);
  }

  #sweep(now: number): void {
    for (const [k, h] of this.#hits) if (h.resetAt <= now) this.#hits.delete(k);
  }
}
