import type { ChatEvent } from '../../core/index.js';

/** How long a finished turn's events stay readable from memory (later reads come from the store). */
export const FINISHED_TURN_RETAIN_MS = 10 * 60 * 1000;

/** One turn running (or recently finished) in this process, with every event it emitted. */
export interface LiveTurn {
  readonly turnId: string;
  readonly sessionId: string;
  readonly userId: number;
  /** Events in order; events[i].seq === i + 1 (the last one is `done` once finished). */
  readonly events: ChatEvent[];
  /** Aborts the runner's turn (the stop API, a deleted chat, shutdown). */
  readonly controller: AbortController;
  finished: boolean;
  /** Set when the runner refused the turn before it began (busy, host full): no event was made. */
  refused?: unknown;
  finishedAt?: number;
}

/**
 * The turns this process runs, decoupled from the HTTP request that started them: a turn keeps
 * running when its browser reloads or loses the network, and any number of readers can replay
 * and follow it by `seq` (GET …/turns/:id/events?after=SEQ). Finished turns stay for
 * FINISHED_TURN_RETAIN_MS so a reader that reconnects just after the end still sees every event.
 */
export class TurnRegistry {
  private readonly turns = new Map<string, LiveTurn & { waiters: Set<() => void> }>();
  private readonly bySession = new Map<string, string>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly retainMs = FINISHED_TURN_RETAIN_MS) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(retainMs, 60_000));
    this.sweeper.unref();
  }

  /** Register a new running turn. Throws when the session already has one (callers check first). */
  start(turnId: string, sessionId: string, userId: number): LiveTurn {
    if (this.runningIn(sessionId)) throw new Error(`session ${sessionId} already has a running turn`);
    const turn = {
      turnId,
      sessionId,
      userId,
      events: [],
      controller: new AbortController(),
      finished: false,
      waiters: new Set<() => void>(),
    };
    this.turns.set(turnId, turn);
    this.bySession.set(sessionId, turnId);
    return turn;
  }

  get(turnId: string): LiveTurn | undefined {
    return this.turns.get(turnId);
  }

  /** The session's running turn, if this process runs one. */
  runningIn(sessionId: string): LiveTurn | undefined {
    const id = this.bySession.get(sessionId);
    const t = id ? this.turns.get(id) : undefined;
    return t && !t.finished ? t : undefined;
  }

  /** Append an event (its seq must be events.length + 1) and wake the readers. */
  push(turn: LiveTurn, e: ChatEvent): void {
    const t = this.turns.get(turn.turnId);
    if (!t || t.finished) return;
    t.events.push(e);
    if (e.type === 'done') this.markFinished(t);
    this.wake(t);
  }

  /** The runner refused the turn before it began: readers end with no event, and it is forgotten. */
  refuse(turn: LiveTurn, err: unknown): void {
    const t = this.turns.get(turn.turnId);
    if (!t) return;
    t.refused = err;
    this.markFinished(t);
    this.wake(t);
    this.forget(t.turnId);
  }

  /** Ask the running turn to stop. False when it is not running here. */
  cancel(turnId: string, why = 'stopped by the user'): boolean {
    const t = this.turns.get(turnId);
    if (!t || t.finished) return false;
    t.controller.abort(new Error(why));
    return true;
  }

  /** Drop a turn's record (its chat was deleted). */
  forget(turnId: string): void {
    const t = this.turns.get(turnId);
    if (!t) return;
    this.turns.delete(turnId);
    if (this.bySession.get(t.sessionId) === turnId) this.bySession.delete(t.sessionId);
    this.wake(t);
  }

  /**
   * The turn's events with seq > after, then each new one as it comes, until `done` (or the turn
   * is refused or forgotten, or the signal aborts: a reader that goes away never stops the turn).
   */
  async *follow(turn: LiveTurn, after: number, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    const t = this.turns.get(turn.turnId) ?? (turn as LiveTurn & { waiters: Set<() => void> });
    let i = Math.max(0, Math.floor(after));
    for (;;) {
      while (i < t.events.length) yield t.events[i++];
      if (t.finished || signal?.aborted || !this.turns.has(t.turnId)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          t.waiters?.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        t.waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Cancel every running turn (shutdown). */
  cancelAll(why: string): void {
    for (const t of this.turns.values()) if (!t.finished) t.controller.abort(new Error(why));
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private markFinished(t: LiveTurn): void {
    t.finished = true;
    t.finishedAt = Date.now();
    if (this.bySession.get(t.sessionId) === t.turnId) this.bySession.delete(t.sessionId);
  }

  private wake(t: { waiters: Set<() => void> }): void {
    for (const w of [...t.waiters]) w();
  }

  private sweep(): void {
    const now = Date.now();
    for (const t of this.turns.values())
      if (t.finished && now - (t.finishedAt ?? now) > this.retainMs) this.turns.delete(t.turnId);
  }
}
