/**
 * The model failures every path must end as documented (docs/chat.md, "Bounds"), as steps of the
 * scripted model servers (emulator/model-script.ts) and what the chat stream must show for each.
 * Used through the chat route with the local runner (test/integration/chat-model-faults.test.ts)
 * and through `airlock demo`'s own wiring with real sandboxes (test/docker/demo-faults.test.ts).
 */
import type { ModelStep } from '../../emulator/model-script.js';

/** Short bounds for tests, as the host sets them (AIRLOCK_*) and as the agent reads them (AGENT_*). */
export const FAULT_BOUNDS = { FIRST_BYTE_TIMEOUT_S: '2', TIMEOUT_S: '2', RETRIES: '3', RETRY_AFTER_MAX_S: '5' };

export const FAULT_AGENT_ENV: Record<string, string> = {
  AGENT_MODEL_FIRST_BYTE_TIMEOUT_S: FAULT_BOUNDS.FIRST_BYTE_TIMEOUT_S,
  AGENT_MODEL_TIMEOUT_S: FAULT_BOUNDS.TIMEOUT_S,
  AGENT_MODEL_RETRIES: FAULT_BOUNDS.RETRIES,
  AGENT_MODEL_RETRY_AFTER_MAX_S: FAULT_BOUNDS.RETRY_AFTER_MAX_S,
};

export const FAULT_HOST_ENV: Record<string, string> = {
  AIRLOCK_MODEL_FIRST_BYTE_TIMEOUT_S: FAULT_BOUNDS.FIRST_BYTE_TIMEOUT_S,
  AIRLOCK_MODEL_TIMEOUT_S: FAULT_BOUNDS.TIMEOUT_S,
  AIRLOCK_MODEL_RETRIES: FAULT_BOUNDS.RETRIES,
  AIRLOCK_MODEL_RETRY_AFTER_MAX_S: FAULT_BOUNDS.RETRY_AFTER_MAX_S,
};

export interface FaultCase {
  name: string;
  steps: ModelStep[];
  /** Model requests the turn makes. */
  requests: number;
  /** The retries shown in the stream, as "(n of 3)" sentences. */
  statuses: string[];
  stop_reason: 'end_turn' | 'error';
  code?: string;
  /** The text the chat shows (all of it). */
  text?: string;
  /** The least time the turn must take (a Retry-After waited out). */
  atLeastMs?: number;
}

const busy = (n: number) => Array.from({ length: n }, (_, i) => `The model is busy, retrying (${i + 1} of 3)…`);
const silent = (n: number) =>
  Array.from({ length: n }, (_, i) => `The model is not answering, retrying (${i + 1} of 3)…`);

/** The faults a server at a listening port can play (a refused port is its own case: `closedPortUrl`). */
export function faultCases(provider: 'openai' | 'anthropic'): FaultCase[] {
  return [
    {
      name: 'accept and stay silent',
      steps: [{ kind: 'silent' }],
      requests: 1,
      statuses: [],
      stop_reason: 'error',
      code: 'ERR_MODEL_TIMEOUT',
    },
    {
      name: 'one chunk, then silence',
      steps: [{ kind: 'stall', text: 'one chunk' }],
      requests: 1,
      statuses: [],
      stop_reason: 'error',
      code: 'ERR_MODEL_TIMEOUT',
      text: 'one chunk',
    },
    {
      name: '429 with Retry-After: 1, then an answer',
      steps: [
        { kind: 'error', status: 429, retry_after: 1 },
        { kind: 'reply', text: 'after the wait' },
      ],
      requests: 2,
      statuses: busy(1),
      stop_reason: 'end_turn',
      text: 'after the wait',
      atLeastMs: 950,
    },
    {
      name: '429 with a Retry-After past the cap',
      steps: [{ kind: 'error', status: 429, retry_after: 60 }],
      requests: 1,
      statuses: [],
      stop_reason: 'error',
      code: 'ERR_MODEL_HTTP',
    },
    {
      name: '503 once, then an answer',
      steps: [
        { kind: 'error', status: 503 },
        { kind: 'reply', text: 'back' },
      ],
      requests: 2,
      statuses: silent(1),
      stop_reason: 'end_turn',
      text: 'back',
    },
    {
      name: '503 that persists',
      steps: [{ kind: 'error', status: 503, times: 4 }],
      requests: 4,
      statuses: silent(3),
      stop_reason: 'error',
      code: 'ERR_MODEL_HTTP',
    },
    {
      name: 'reset before any answer, then an answer',
      steps: [{ kind: 'reset' }, { kind: 'reply', text: 'reconnected' }],
      requests: 2,
      statuses: silent(1),
      stop_reason: 'end_turn',
      text: 'reconnected',
    },
    {
      name:
        provider === 'anthropic'
          ? 'overloaded_error in the stream, then an answer'
          : 'an error chunk in the stream, then an answer',
      steps: [{ kind: 'stream_error' }, { kind: 'reply', text: 'less busy now' }],
      requests: 2,
      statuses: provider === 'anthropic' ? busy(1) : silent(1),
      stop_reason: 'end_turn',
      text: 'less busy now',
    },
    {
      name: '529 overloaded that persists',
      steps: [{ kind: 'error', status: 529, times: 4 }],
      requests: 4,
      statuses: busy(3),
      stop_reason: 'error',
      code: 'ERR_MODEL_HTTP',
    },
  ];
}

/** The refused port's case (base URL on a closed port): three retries shown, then unreachable. */
export const REFUSED_CASE: Omit<FaultCase, 'steps'> = {
  name: 'refused port',
  requests: 0,
  statuses: silent(3),
  stop_reason: 'error',
  code: 'ERR_MODEL_UNREACHABLE',
};
