/**
 * The sandbox protocol's chat events (what a turn streams) and the supervisor ⇄ agent child
 * messages (stdin/stdout). Part of core/sandbox-protocol.ts, which re-exports it: a leaf module
 * (core/seams.ts imports it without a cycle).
 */
import { z } from 'zod';
import type { ApprovalRequest, ApprovalScope, ApprovalState, ConnectorApprovalRequest } from './approval-request.js';
import {
  TranscriptSchema,
  TurnItemsSchema,
  TurnUsageSchema,
  type TranscriptItem,
  type TurnUsage,
} from './transcript.js';

// ---------------------------------------------------------------- chat events

export type StopReason = 'end_turn' | 'max_steps' | 'error' | 'cancelled';

export interface ToolStartEvent {
  type: 'tool_start';
  seq: number;
  call_id: string;
  tool: string;
  input: Record<string, unknown>;
}
export interface ToolEndEvent {
  type: 'tool_end';
  seq: number;
  call_id: string;
  tool: string;
  ok: boolean;
  output?: unknown;
  error?: string;
  duration_ms: number;
}
export interface TextDeltaEvent {
  type: 'text_delta';
  seq: number;
  text: string;
}
/**
 * What the turn is waiting on, while it waits: a model call being retried ("The model is not
 * answering, retrying (2 of 3)…"). Shown while the turn runs; not kept in the stored history.
 */
export interface StatusEvent {
  type: 'status';
  seq: number;
  text: string;
  /** This retry (1-based) of `of`. */
  attempt: number;
  of: number;
}
/**
 * Output of a tool while it runs (run_python's stdout and stderr, docs/chat.md#tool-progress):
 * shown under the running call, not kept in the stored history (the call's end carries the result).
 */
export interface ToolProgressEvent {
  type: 'tool_progress';
  seq: number;
  call_id: string;
  tool: string;
  stream: 'stdout' | 'stderr';
  text: string;
}
export interface DoneEvent {
  type: 'done';
  seq: number;
  session_id: string;
  turn_id: string;
  stop_reason: StopReason;
  error?: { code: string; message: string };
  /** A budget of the user is at 80 % or more after this turn (docs/usage.md "Budgets"); absent: none is. */
  budget?: BudgetNotice;
}
/** The warning a turn's `done` carries when a budget of its user is at 80 % or more (docs/usage.md). */
export interface BudgetNotice {
  budget_id: number;
  scope: 'user' | 'team';
  metric: 'tokens' | 'cost';
  period: 'day' | 'month';
  amount: number;
  used: number;
  /** Whole percent used (80 and up; 100 or more: the next turn is refused). */
  percent: number;
  /** One sentence for the user. */
  message: string;
}
/**
 * A mail send held at the proxy until the user decides (docs/chat.md#approvals): who it goes to,
 * its subject and attachment names — never its body. Made by the daemon, never by the agent.
 */
export interface ApprovalRequestEvent extends ApprovalRequest {
  type: 'approval_request';
  seq: number;
  /** When it is refused if nobody decides (ISO 8601). */
  expires_at: string;
  /** The same message (recipients, subject, attachments) was sent from this chat at this time (ISO 8601): a possible repeat. */
  repeat_of?: string;
}
/** A connector tool call marked ask, held by the egress gateway until the user decides (docs/connectors.md). */
export interface ConnectorApprovalRequestEvent extends ConnectorApprovalRequest {
  type: 'approval_request';
  seq: number;
  /** When it is refused if nobody decides (ISO 8601). */
  expires_at: string;
}
export interface ApprovalResultEvent {
  type: 'approval_result';
  seq: number;
  approval_id: string;
  decision: Exclude<ApprovalState, 'pending'>;
  /** For `approved`: this send only, or every send to these recipients in this session. */
  scope?: ApprovalScope;
}
export type ChatEvent =
  | ToolStartEvent
  | ToolEndEvent
  | ToolProgressEvent
  | TextDeltaEvent
  | StatusEvent
  | ApprovalRequestEvent
  | ConnectorApprovalRequestEvent
  | ApprovalResultEvent
  | DoneEvent;
/** Events the daemon itself puts into a turn (the agent cannot make them). */
export type DaemonEvent =
  Omit<ApprovalRequestEvent, 'seq'> | Omit<ConnectorApprovalRequestEvent, 'seq'> | Omit<ApprovalResultEvent, 'seq'>;

export const StopReasonSchema: z.ZodType<StopReason> = z.enum(['end_turn', 'max_steps', 'error', 'cancelled']);
export const CodedErrorSchema: z.ZodType<{ code: string; message: string }> = z.object({
  code: z.string(),
  message: z.string(),
});
/** Shared parts of the schemas (sandbox-control.ts, sandbox-mcp.ts use them too). */
export const JsonObjectSchema: z.ZodType<Record<string, unknown>> = z.record(z.string(), z.unknown());
export const StringMapSchema: z.ZodType<Record<string, string>> = z.record(z.string(), z.string());

/** An event as the agent emits it: the daemon assigns `seq` (per turn) and writes `done` itself. */
export type AgentEvent =
  | Omit<ToolStartEvent, 'seq'>
  | Omit<ToolEndEvent, 'seq'>
  | Omit<ToolProgressEvent, 'seq'>
  | Omit<TextDeltaEvent, 'seq'>
  | Omit<StatusEvent, 'seq'>;

export const AgentEventSchema: z.ZodType<AgentEvent> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('tool_start'), call_id: z.string(), tool: z.string(), input: JsonObjectSchema }),
  z.object({
    type: z.literal('tool_end'),
    call_id: z.string(),
    tool: z.string(),
    ok: z.boolean(),
    output: z.unknown().optional(),
    error: z.string().optional(),
    duration_ms: z.number(),
  }),
  z.object({
    type: z.literal('tool_progress'),
    call_id: z.string(),
    tool: z.string(),
    stream: z.enum(['stdout', 'stderr']),
    text: z.string().max(64 * 1024),
  }),
  z.object({ type: z.literal('text_delta'), text: z.string() }),
  z.object({
    type: z.literal('status'),
    text: z.string().max(500),
    attempt: z.number().int().min(0).max(100),
    of: z.number().int().min(0).max(100),
  }),
]);

// ---------------------------------------------------------------- supervisor ⇄ agent child (stdin/stdout)

/**
 * The child starts idle: its MCP servers are up, but it knows no user. `configure` hands it the
 * session's settings (the supervisor's allow-listed env: agent settings, placeholders, base URLs)
 * and the working folder; it answers `configured` (with `error` when the settings are refused).
 * A prompt is taken only once configured.
 */
export type ChildInbound =
  | { type: 'configure'; env: Record<string, string>; cwd?: string }
  | ({ type: 'prompt'; turn_id: string; prompt: string } & PromptContext)
  | { type: 'cancel'; turn_id: string };

/**
 * The conversation a prompt continues (docs/chat.md "The conversation belongs to the service").
 * `base` names the turn the agent must hold as its last (null: a new chat); `context` is the
 * whole branch up to `base`, sent when the daemon does not know the agent holds it. A prompt with
 * a `base` the agent does not hold and no `context` ends at once with ERR_AGENT_CONTEXT_STALE,
 * and the daemon sends it again with the context. Absent `base`: the agent keeps what it has.
 */
export interface PromptContext {
  base?: string | null;
  context?: TranscriptItem[];
}

/** What a turn's end carries besides its outcome: the items it added to the transcript, and its token usage. */
export interface TurnEndExtras {
  items?: TranscriptItem[];
  usage?: TurnUsage;
}

export type ChildOutbound =
  | { type: 'ready' }
  | { type: 'configured'; error?: { code: string; message: string } }
  | { type: 'event'; turn_id: string; event: AgentEvent }
  | ({
      type: 'turn_end';
      turn_id: string;
      stop_reason: StopReason;
      error?: { code: string; message: string };
    } & TurnEndExtras);

export const PromptContextFields = {
  base: z.string().max(64).nullable().optional(),
  context: TranscriptSchema.optional(),
};

export const ChildInboundSchema: z.ZodType<ChildInbound> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('configure'), env: StringMapSchema, cwd: z.string().optional() }),
  z.object({ type: z.literal('prompt'), turn_id: z.string(), prompt: z.string(), ...PromptContextFields }),
  z.object({ type: z.literal('cancel'), turn_id: z.string() }),
]);

export const TurnEndSchema = z.object({
  type: z.literal('turn_end'),
  turn_id: z.string(),
  stop_reason: StopReasonSchema,
  error: CodedErrorSchema.optional(),
  items: TurnItemsSchema.optional(),
  usage: TurnUsageSchema.optional(),
});

export const ChildOutboundSchema: z.ZodType<ChildOutbound> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('configured'), error: CodedErrorSchema.optional() }),
  z.object({ type: z.literal('event'), turn_id: z.string(), event: AgentEventSchema }),
  TurnEndSchema,
]);
