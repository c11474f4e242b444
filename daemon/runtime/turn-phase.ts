/**
 * What a running turn is doing now, for Live sessions (docs/runtime.md, "Live sessions"): the
 * phase follows the agent's events, so a turn stuck on a silent model reads "waiting for model"
 * with how long it has been so, instead of a bare "busy".
 */
import type { AgentEvent } from '../../core/sandbox-protocol.js';

/** A running turn's start and its current phase with the time it entered it (ms, the runtime's clock). */
export interface TurnPhase {
  startedAt: number;
  phase: string;
  phaseSince: number;
}

/** A turn that just started: its prompt is with the model. */
export function turnStarted(now: number): TurnPhase {
  return { startedAt: now, phase: 'waiting for model', phaseSince: now };
}

/** The phase after `e`; the same object when the phase did not change (a stream of deltas keeps its start). */
export function nextPhase(p: TurnPhase, e: AgentEvent, now: number): TurnPhase {
  const phase =
    e.type === 'text_delta'
      ? 'model answering'
      : e.type === 'status'
        ? `model retrying (${e.attempt} of ${e.of})`
        : e.type === 'tool_start' || e.type === 'tool_progress'
          ? `running ${e.tool}`
          : 'waiting for model'; // tool_end: the result goes back to the model
  return phase === p.phase ? p : { startedAt: p.startedAt, phase, phaseSince: now };
}
