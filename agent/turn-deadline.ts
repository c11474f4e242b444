import { turnTimedOut } from '../core/transcript.js';
import type { TurnOutcome } from './loop.js';

/**
 * The whole-turn bound (AGENT_TURN_TIMEOUT_S, docs/chat.md "Bounds"): past it the turn is aborted
 * like a cancel, and its outcome becomes the error ERR_TURN_TIMEOUT instead of `cancelled`. The
 * per-call timeouts end a failing model or tool call long before; this ends a turn whose calls
 * each succeed but never stop (a model that keeps asking for slow tools, a slow endless stream).
 */
export function turnDeadline(ac: AbortController, ms: number): { outcome(r: TurnOutcome): TurnOutcome } {
  let fired = false;
  const timer =
    ms > 0
      ? setTimeout(() => {
          fired = true;
          ac.abort(new Error('turn timeout'));
        }, ms)
      : undefined;
  return {
    outcome(r) {
      clearTimeout(timer);
      if (!fired || r.stop_reason !== 'cancelled') return r;
      // The turn's items stay (the service stores them); its end is an error, not the user's stop.
      const { error, items } = turnTimedOut(ms, r.items);
      return { ...r, items: items ?? r.items, stop_reason: 'error', error };
    },
  };
}
