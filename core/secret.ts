import { inspect } from 'node:util';
import { timingSafeEqual, createHash } from 'node:crypto';

const REDACTED = '[redacted]';

/**
 * A secret value that prints as `[redacted]` everywhere (string coercion, JSON,
 * util.inspect, pino). Call `reveal()` only at the point of use.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  /** Constant-time comparison against a candidate string. */
  equals(candidate: string | undefined | null): boolean {
    return safeEqual(this.#value, candidate ?? '');
  }
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return REDACTED;
  }
}

/** Constant-time string comparison that does not leak the length through early exit. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
