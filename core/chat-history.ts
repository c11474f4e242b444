import type { StopReason } from './sandbox-protocol.js';
import type { TurnUsage } from './transcript.js';

/**
 * A chat's stored history as the store returns it and the chat API sends it
 * (GET /api/chat/sessions/:id/messages). Types only: the chat page's build reads them too.
 */

export type ToolCallStatus = 'running' | 'ok' | 'error' | 'cancelled';

export interface StoredToolCall {
  call_id: string;
  tool: string;
  input: unknown;
  status: ToolCallStatus;
  output?: unknown;
  error?: string;
  duration_ms: number | null;
  started_at: string;
}

export interface StoredTurn {
  turn_id: string;
  prompt: string;
  text: string;
  status: 'running' | 'done';
  stop_reason: StopReason | null;
  error?: { code: string; message: string };
  started_at: string;
  ended_at: string | null;
  tool_calls: StoredToolCall[];
  /** The turn it continues (null: the chat's first). */
  parent_id: string | null;
  /**
   * The turns that continue the same parent, oldest first, itself included: its edits and
   * regenerates. The page shows "< i/n >" when there is more than one.
   */
  siblings: string[];
  /** Tokens its model calls used, as the provider reported them. */
  usage?: TurnUsage;
}
