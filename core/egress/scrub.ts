/** What replaces a real token found in an upstream response. */
export const SCRUBBED = '[airlock:redacted]';

/**
 * Streaming replacement of one secret in a byte stream. It holds back only the end of a chunk
 * that could be the start of the secret (the longest suffix that is a prefix of it), so a
 * token split across chunks is still found while ordinary streamed text (an SSE event ending
 * in a newline) passes at once: a model stream that pauses is not held up by the scrubber.
 */
export class Scrubber {
  readonly #needle: Buffer;
  readonly #replacement = Buffer.from(SCRUBBED);
  #tail: Buffer = Buffer.alloc(0);
  /** How many occurrences were replaced. */
  hits = 0;

  constructor(secret: string) {
    this.#needle = Buffer.from(secret);
  }

  push(chunk: Buffer): Buffer {
    if (this.#needle.length === 0) return chunk;
    const buf = this.#tail.length ? Buffer.concat([this.#tail, chunk]) : chunk;
    const out: Buffer[] = [];
    let from = 0;
    for (let i = buf.indexOf(this.#needle, from); i !== -1; i = buf.indexOf(this.#needle, from)) {
      out.push(buf.subarray(from, i), this.#replacement);
      from = i + this.#needle.length;
      this.hits++;
    }
    let keep = Math.min(this.#needle.length - 1, buf.length - from);
    while (keep > 0 && !buf.subarray(buf.length - keep).equals(this.#needle.subarray(0, keep))) keep--;
    out.push(buf.subarray(from, buf.length - keep));
    this.#tail = Buffer.from(buf.subarray(buf.length - keep));
    return Buffer.concat(out);
  }

  end(): Buffer {
    const t = this.#tail;
    this.#tail = Buffer.alloc(0);
    return t;
  }
}

/** Replace every occurrence of `secret` in a string (header values). */
export function scrubString(s: string, secret: string): string {
  return secret ? s.split(secret).join(SCRUBBED) : s;
}
