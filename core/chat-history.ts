import { z } from 'zod';
import { StopReasonSchema } from './sandbox-events.js';
import { ApprovalRequest, ApprovalScope, ApprovalState, ConnectorApprovalRequest } from './approval-request.js';

/**
 * A chat's stored history as the store returns it and the chat API sends it
 * (GET /api/chat/sessions/:id/messages), and a chat's entry of the session list
 * (GET /api/chat/sessions). Zod schemas with types of the same name: the chat page's build
 * imports the types only.
 */

/** Tokens a turn's model calls used (or a chat's turns, summed), as the provider reported them. */
export const TokenUsage = z.strictObject({ input_tokens: z.number(), output_tokens: z.number() });
export type TokenUsage = z.infer<typeof TokenUsage>;

/**
 * One chat of the user's list, as domain/chat/store.ts reads it and web/chat-api.ts sends it
 * (each adds its own `model_id`; the API adds the running turn).
 */
export const ChatSessionEntry = z.strictObject({
  id: z.string(),
  title: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  turn_count: z.number(),
  /** Pinned by the user: listed first. */
  pinned: z.boolean(),
  /** Where the title came from (migration 017): 'message' (the first message, until the first turn ends), 'model', 'fallback', 'user' (renamed). */
  title_source: z.enum(['message', 'model', 'fallback', 'user']),
});
export type ChatSessionEntry = z.infer<typeof ChatSessionEntry>;

export const ToolCallStatus = z.enum(['running', 'ok', 'error', 'cancelled']);
export type ToolCallStatus = z.infer<typeof ToolCallStatus>;

export const StoredToolCall = z.strictObject({
  call_id: z.string(),
  tool: z.string(),
  input: z.unknown(),
  status: ToolCallStatus,
  output: z.unknown().optional(),
  error: z.string().optional(),
  duration_ms: z.number().nullable(),
  started_at: z.string(),
});
export type StoredToolCall = z.infer<typeof StoredToolCall>;

/**
 * A mail send of the turn held for the user's approval, and its decision (from `mail_holds`;
 * docs/chat.md#approvals). Never its body: only the live preview route shows that, while it waits.
 */
export const StoredApproval = ApprovalRequest.extend({
  state: ApprovalState,
  scope: ApprovalScope.optional(),
  created_at: z.string(),
  decided_at: z.string().nullable(),
});
export type StoredApproval = z.infer<typeof StoredApproval>;

/**
 * A connector call of the turn held for the user's approval, and its decision (from
 * `connector_approvals`; docs/connectors.md "Approval binding"): the connector, the tool and the
 * exact arguments, as the card showed them.
 */
export const StoredConnectorApproval = ConnectorApprovalRequest.extend({
  state: ApprovalState,
  created_at: z.string(),
  decided_at: z.string().nullable(),
});
export type StoredConnectorApproval = z.infer<typeof StoredConnectorApproval>;

export const StoredTurn = z.strictObject({
  turn_id: z.string(),
  prompt: z.string(),
  text: z.string(),
  status: z.enum(['running', 'done']),
  stop_reason: StopReasonSchema.nullable(),
  error: z.strictObject({ code: z.string(), message: z.string() }).optional(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  tool_calls: z.array(StoredToolCall),
  /** The turn it continues (null: the chat's first). */
  parent_id: z.string().nullable(),
  /**
   * The turns that continue the same parent, oldest first, itself included: its edits and
   * regenerates. The page shows "< i/n >" when there is more than one.
   */
  siblings: z.array(z.string()),
  /** Tokens its model calls used, as the provider reported them. */
  usage: TokenUsage.optional(),
  /** Its mail sends held for approval, with their decisions, oldest first (absent: none). */
  approvals: z.array(z.union([StoredApproval, StoredConnectorApproval])).optional(),
});
export type StoredTurn = z.infer<typeof StoredTurn>;
