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
      const min = ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
      // The turn's items stay (the service stores them); its end is an error, not the user's stop.
      const items = r.items.map((it, i) => (i === r.items.length - 1 && it.role === 'assistant' && it.interrupted === 'stopped' ? { ...it, interrupted: 'error' as const } : it));
      return { ...r, items, stop_reason: 'error', error: { code: 'ERR_TURN_TIMEOUT', message: `the turn ran longer than ${min} and was stopped` } };
    },
  };
}
