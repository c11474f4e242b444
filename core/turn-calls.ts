/**
 * The tool calls a turn is really running, as the daemon reads them from the turn's own event
 * stream (tool_start → tool_end), and the held sends bound to them (docs/security.md "A held send
 * is bound to a running call"). The `X-Airlock-Call` header a send carries is only a claim made
 * inside the sandbox: a send is bound to a call only when that call is a running call of the named
 * tool in this turn, and at most one send is bound to one call. Anything else is refused before a
 * card is shown.
 */
import type { AgentEvent } from './sandbox-events.js';
import type { RunningCalls } from './seams.js';

export type CallClaim = Awaited<ReturnType<RunningCalls['claim']>>;

/**
 * How long a send may wait for its call's tool_start (the tool's HTTP request and the agent's
 * event travel different paths, and the request can arrive first). Bounded: a claim on a call
 * that never starts is refused after it.
 */
export const CALL_START_WAIT_MS = 2_000;

export class TurnCalls implements RunningCalls {
  /** Running calls: call id → tool name. */
  private readonly running = new Map<string, string>();
  /** Calls a send was already bound to (for the whole turn: a call binds one send, ever). */
  private readonly bound = new Set<string>();
  private readonly waiters = new Set<() => void>();
  private ended = false;

  /** Feed one event of the turn (the daemon's relay calls this for every agent event). */
  observe(e: AgentEvent): void {
    if (e.type === 'tool_start') this.running.set(e.call_id, e.tool);
    else if (e.type === 'tool_end') this.running.delete(e.call_id);
    else return;
    this.wake();
  }

  /** The turn ended: nothing is running, and nobody waits any longer. */
  end(): void {
    this.ended = true;
    this.running.clear();
    this.wake();
  }

  /** Whether `callId` is a running call of `tool` now. */
  isRunning(callId: string, tool: string): boolean {
    return this.running.get(callId) === tool;
  }

  /**
   * Bind one send to the call `callId` of `tool`: `bound` when it is a running call of that tool
   * and no send was bound to it before; `reused` when one already was; `unbound` when the turn
   * runs no such call (waiting at most `waitMs` for its tool_start).
   */
  async claim(callId: string, tool: string, waitMs = CALL_START_WAIT_MS): Promise<CallClaim> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (this.bound.has(callId)) return 'reused';
      if (this.isRunning(callId, tool)) {
        this.bound.add(callId);
        return 'bound';
      }
      const left = deadline - Date.now();
      // A running call of another tool never becomes this one: no wait.
      if (this.ended || left <= 0 || this.running.has(callId)) return 'unbound';
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        timer.unref();
        this.waiters.add(done);
      });
    }
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
