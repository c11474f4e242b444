import type { StopReason } from './sandbox-protocol.js';

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
}
