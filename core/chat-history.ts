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

/**
 * A mail send of the turn held for the user's approval, and its decision (from `mail_holds`;
 * docs/chat.md#approvals). Never its body: only the live preview route shows that, while it waits.
 */
export interface StoredApproval {
  approval_id: string;
  /** The send_email call that sent it (null: the child posted to the proxy itself). */
  call_id: string | null;
  recipients: string[];
  ask: string[];
  subject: string;
  attachments: { name: string; size: number }[];
  /** `pending` only while the turn runs. */
  state: 'pending' | 'approved' | 'denied' | 'timed_out';
  scope?: 'once' | 'recipient';
  created_at: string;
  decided_at: string | null;
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
  /** Its mail sends held for approval, with their decisions, oldest first (absent: none). */
  approvals?: StoredApproval[];
}
