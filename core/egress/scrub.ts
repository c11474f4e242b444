/** What replaces a real token found in an upstream response. */
export const SCRUBBED = '[airlock:redacted]';

const EMPTY = Buffer.alloc(0);

/**
 * Streaming replacement of one secret in a byte stream. It holds back only the end of a chunk
 * that could be the start of the secret (the longest suffix that is a prefix of it), so a
 * token split across chunks is still found while ordinary streamed text (an SSE event ending
 * in a newline) passes at once: a model stream that pauses is not held up by the scrubber.
 */
export class Scrubber {
  readonly #needle: Buffer;
  readonly #replacement = Buffer.from(SCRUBBED);
  #tail: Buffer = EMPTY;
  /** How many occurrences were replaced. */
  hits = 0;

  constructor(secret: string) {
    this.#needle = Buffer.from(secret);
  }

  /**
   * The chunk without the secret. No copy when the chunk holds no occurrence and nothing was
   * held back: a view of it is returned (issue 43: the scrubber was 8 % of the daemon's work
   * per warm turn, mostly copies of every chunk).
   */
  push(chunk: Buffer): Buffer {
    const n = this.#needle.length;
    if (n === 0) return chunk;
    const buf = this.#tail.length ? Buffer.concat([this.#tail, chunk]) : chunk;
    let out: Buffer[] | undefined;
    let from = 0;
    for (let i = buf.indexOf(this.#needle, from); i !== -1; i = buf.indexOf(this.#needle, from)) {
      (out ??= []).push(buf.subarray(from, i), this.#replacement);
      from = i + n;
      this.hits++;
    }
    const keep = this.#heldBack(buf, from);
    // Held back bytes are copied (few): the chunk's memory is not kept alive by the tail.
    this.#tail = keep ? Buffer.from(buf.subarray(buf.length - keep)) : EMPTY;
    const rest = buf.subarray(from, buf.length - keep);
    if (!out) return rest;
    out.push(rest);
    return Buffer.concat(out);
  }

  /** The longest end of `buf` (after `from`) that is a start of the secret: tried only where its first byte is. */
  #heldBack(buf: Buffer, from: number): number {
    const first = this.#needle[0];
    for (
      let i = buf.indexOf(first, Math.max(from, buf.length - this.#needle.length + 1));
      i !== -1;
      i = buf.indexOf(first, i + 1)
    ) {
      if (this.#needle.compare(buf, i, buf.length, 0, buf.length - i) === 0) return buf.length - i;
    }
    return 0;
  }

  end(): Buffer {
    const t = this.#tail;
    this.#tail = EMPTY;
    return t;
  }
}

/** Replace every occurrence of `secret` in a string (header values). */
export function scrubString(s: string, secret: string): string {
  return secret ? s.split(secret).join(SCRUBBED) : s;
}
