import type { Clock } from '../../core/index.js';

/**
 * A clock a test moves forward by hand (core/clock.ts): the real time plus what the test advanced
 * it by, so ages pass at once instead of after a sleep, and the order of events stays real.
 */
export class TestClock implements Clock {
  #offset = 0;

  now(): number {
    return Date.now() + this.#offset;
  }

  advance(ms: number): void {
    this.#offset += ms;
  }
}
