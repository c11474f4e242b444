import type { AgentEvent } from '../core/sandbox-protocol.js';

/** How long streamed text coalesces after a delta went out (docs/chat.md "Streamed text in batches"). */
export const DELTA_WINDOW_MS = 25;
/** A batch goes out at once when its text reaches this many characters (well under the route's 64 KiB cap). */
export const DELTA_MAX_CHARS = 8 * 1024;

/**
 * Streamed text in batches: each text_delta costs a line, a JSON encode and parse and a socket
 * write in the agent, the supervisor, the daemon and the browser, so a model's token-sized
 * chunks are joined. The first delta after a quiet spell goes out at once (the user's first
 * token is never delayed); later ones within `windowMs` are joined into one text_delta sent
 * when the window closes. Any other event first sends the pending text, so the order of events
 * and the concatenated text are exactly what unbatched streaming gives.
 */
export class DeltaBatcher {
  private pending = '';
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly emit: (e: AgentEvent) => void,
    private readonly windowMs = DELTA_WINDOW_MS,
  ) {}

  /** Pass an event on, joining text_deltas as above. */
  event(e: AgentEvent): void {
    if (e.type === 'text_delta') this.text(e.text);
    else {
      this.flush();
      this.emit(e);
    }
  }

  /** Send the pending text now and end the window: the next delta goes out at once. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.send();
  }

  private text(text: string): void {
    if (!text) return;
    if (this.windowMs <= 0 || !this.timer) {
      this.emit({ type: 'text_delta', text });
      if (this.windowMs > 0) this.timer = setTimeout(() => this.tick(), this.windowMs);
      return;
    }
    this.pending += text;
    if (this.pending.length >= DELTA_MAX_CHARS) this.send();
  }

  /** The window closed: send what it gathered and open another; an empty window ends the batching. */
  private tick(): void {
    this.timer = undefined;
    if (!this.pending) return;
    this.send();
    this.timer = setTimeout(() => this.tick(), this.windowMs);
  }

  private send(): void {
    if (!this.pending) return;
    const text = this.pending;
    this.pending = '';
    this.emit({ type: 'text_delta', text });
  }
}
