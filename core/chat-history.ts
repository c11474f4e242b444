import type { StopReason } from './sandbox-protocol.js';
import type { TurnUsage } from './transcript.js';
import type { ApprovalRequest, ApprovalScope, ApprovalState, ConnectorApprovalRequest } from './approval-request.js';

/**
 * A chat's stored history as the store returns it and the chat API sends it
 * (GET /api/chat/sessions/:id/messages), and a chat's entry of the session list
 * (GET /api/chat/sessions). Types only: the chat page's build reads them too.
 */

/**
 * One chat of the user's list, as domain/chat/store.ts reads it and web/chat-api.ts sends it
 * (each adds its own `model_id`; the API adds the running turn).
 */
export interface ChatSessionEntry {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
  turn_count: number;
  /** Pinned by the user: listed first. */
  pinned: boolean;
  /** Where the title came from (migration 017): 'message' (the first message, until the first turn ends), 'model', 'fallback', 'user' (renamed). */
  title_source: 'message' | 'model' | 'fallback' | 'user';
}

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
export interface StoredApproval extends ApprovalRequest {
  state: ApprovalState;
  scope?: ApprovalScope;
  created_at: string;
  decided_at: string | null;
}

/**
 * A connector call of the turn held for the user's approval, and its decision (from
 * `connector_approvals`; docs/connectors.md "Approval binding"): the connector, the tool and the
 * exact arguments, as the card showed them.
 */
export interface StoredConnectorApproval extends ConnectorApprovalRequest {
  state: ApprovalState;
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
  approvals?: (StoredApproval | StoredConnectorApproval)[];
}
