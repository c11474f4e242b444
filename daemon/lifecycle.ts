/**
 * How the composition root (daemon/serve.ts) starts and stops its parts. Each part is registered
 * with how it stops, in one list; `stop()` runs the stops in the reverse order of registration,
 * each once, every one even when another fails (the failure is logged with the part's name), so
 * the shutdown order is the registration order read backwards, written in one place. `run()`
 * builds the parts and, when a start throws, stops the parts already registered before it
 * rethrows: a daemon that fails half-way leaves no database open, no timer and no listener behind.
 */
import type { Logger } from '../core/index.js';

export class Lifecycle {
  readonly #parts: { name: string; stop: () => unknown }[] = [];
  #stopping?: Promise<void>;

  constructor(private readonly log: Logger) {}

  /** Register how `name` stops. A part registered later stops earlier. */
  onStop(name: string, stop: () => unknown): void {
    if (this.#stopping) throw new Error(`${name}: registered while the daemon stops`);
    this.#parts.push({ name, stop });
  }

  /** Start `name` and register its stop with what the start returned. */
  async start<T>(name: string, start: () => Promise<T> | T, stop: (part: T) => unknown): Promise<T> {
    const part = await start();
    this.onStop(name, () => stop(part));
    return part;
  }

  /** Stop every registered part, the last registered first; the same promise for a second call. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      for (const p of [...this.#parts].reverse()) {
        try {
          await p.stop();
        } catch (err) {
          this.log.error({ part: p.name, err: (err as Error).message }, 'a part of the daemon did not stop cleanly');
        }
      }
    })();
    return this.#stopping;
  }

  /** The registered parts' names, in registration order (tests, the startup log). */
  names(): string[] {
    return this.#parts.map((p) => p.name);
  }

  /** Build with `build`; when it throws, stop what it registered, then rethrow. */
  async run<T>(build: (life: this) => Promise<T>): Promise<T> {
    try {
      return await build(this);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }
}
