/**
 * Contracts between the daemon, the in-container supervisor and the agent child.
 * Types and their zod schemas, side by side: no I/O here. Every reader of a sandbox boundary
 * checks each line against the schema below (core/ndjson.ts), so nothing read from a socket or a
 * child's stdout is cast. Object schemas accept (and drop) fields they do not know, so a newer
 * peer that adds a field still talks to an older one; a missing or mistyped field is refused.
 *
 * Wire format everywhere: newline-delimited JSON (one object per line, UTF-8).
 *
 *   daemon ──(control socket /run/airlock/control.sock, supervisor listens)──▶ supervisor
 *   supervisor ──(child stdin/stdout)──▶ agent child (uid 1001)
 *   proxy (in supervisor) ──(egress socket /run/airlock/egress.sock, daemon listens; HTTP CONNECT)──▶ upstreams
 */
import { z } from 'zod';
import { TranscriptSchema, TurnItemsSchema, TurnUsageSchema, type TranscriptItem, type TurnUsage } from './transcript.js';

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
export interface DoneEvent {
  type: 'done';
  seq: number;
  session_id: string;
  turn_id: string;
  stop_reason: StopReason;
  error?: { code: string; message: string };
}
/**
 * A mail send held at the proxy until the user decides (docs/chat.md#approvals): who it goes to,
 * its subject and attachment names — never its body. Made by the daemon, never by the agent.
 */
export interface ApprovalRequestEvent {
  type: 'approval_request';
  seq: number;
  approval_id: string;
  /** The send_email call that sent it; null when the child posted to the proxy itself. */
  call_id: string | null;
  recipients: string[];
  /** The recipients the approval is about (outside the always-allowed domains). */
  ask: string[];
  subject: string;
  attachments: { name: string; size: number }[];
  /** When it is refused if nobody decides (ISO 8601). */
  expires_at: string;
  /** The same message (recipients, subject, attachments) was sent from this chat at this time (ISO 8601): a possible repeat. */
  repeat_of?: string;
}
export interface ApprovalResultEvent {
  type: 'approval_result';
  seq: number;
  approval_id: string;
  decision: 'approved' | 'denied' | 'timed_out';
  /** For `approved`: this send only, or every send to these recipients in this session. */
  scope?: 'once' | 'recipient';
}
export type ChatEvent = ToolStartEvent | ToolEndEvent | TextDeltaEvent | StatusEvent | ApprovalRequestEvent | ApprovalResultEvent | DoneEvent;
/** Events the daemon itself puts into a turn (the agent cannot make them). */
export type DaemonEvent = Omit<ApprovalRequestEvent, 'seq'> | Omit<ApprovalResultEvent, 'seq'>;

export const StopReasonSchema: z.ZodType<StopReason> = z.enum(['end_turn', 'max_steps', 'error', 'cancelled']);
export const CodedErrorSchema: z.ZodType<{ code: string; message: string }> = z.object({ code: z.string(), message: z.string() });
const JsonObjectSchema: z.ZodType<Record<string, unknown>> = z.record(z.string(), z.unknown());
const StringMapSchema: z.ZodType<Record<string, string>> = z.record(z.string(), z.string());

/** An event as the agent emits it: the daemon assigns `seq` (per turn) and writes `done` itself. */
export type AgentEvent =
  | Omit<ToolStartEvent, 'seq'>
  | Omit<ToolEndEvent, 'seq'>
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
  z.object({ type: z.literal('text_delta'), text: z.string() }),
  z.object({ type: z.literal('status'), text: z.string().max(500), attempt: z.number().int().min(0).max(100), of: z.number().int().min(0).max(100) }),
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
  | ({ type: 'turn_end'; turn_id: string; stop_reason: StopReason; error?: { code: string; message: string } } & TurnEndExtras);

const PromptContextFields = { base: z.string().max(64).nullable().optional(), context: TranscriptSchema.optional() };

export const ChildInboundSchema: z.ZodType<ChildInbound> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('configure'), env: StringMapSchema, cwd: z.string().optional() }),
  z.object({ type: z.literal('prompt'), turn_id: z.string(), prompt: z.string(), ...PromptContextFields }),
  z.object({ type: z.literal('cancel'), turn_id: z.string() }),
]);

const TurnEndSchema = z.object({
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

// ---------------------------------------------------------------- daemon ⇄ supervisor (control socket)

/**
 * The user's effective send policy (agent policies and the server's defaults): the proxy applies
 * it to every mail send (docs/proxy.md#send-policy). Not secret; the child never sees it.
 */
export interface MailPolicy {
  /** Recipient domains always allowed (a domain covers its subdomains). */
  allow_domains: string[];
  /** Recipient domains refused (wins over allow_domains). */
  block_domains: string[];
  /** A recipient in neither list: send, ask the user in the chat first, or refuse. */
  other: 'allow' | 'ask' | 'block';
  /** Most recipients (To + Cc + Bcc) per message. */
  max_recipients: number;
  /** Most messages per hour per user (counted by the daemon over all the user's sessions). */
  max_per_hour: number;
  /** How long a held send waits for the user's decision before it is refused. */
  approval_timeout_s: number;
}
export const MailPolicySchema: z.ZodType<MailPolicy> = z.object({
  allow_domains: z.array(z.string()),
  block_domains: z.array(z.string()),
  other: z.enum(['allow', 'ask', 'block']),
  max_recipients: z.number().int().min(1),
  max_per_hour: z.number().int().min(1),
  approval_timeout_s: z.number().int().min(1),
});

/** What the policy, the approval and the audit see of one sent message. Never its body. */
export interface MailSummary {
  /** Every recipient address (To, Cc, Bcc, Resent-*), lower-cased, each once. */
  recipients: string[];
  to: number;
  cc: number;
  bcc: number;
  subject: string;
  attachments: { name: string; size: number }[];
  /** Size of the decoded message in bytes. */
  bytes: number;
}
export const MailSummarySchema: z.ZodType<MailSummary> = z.object({
  recipients: z.array(z.string()).max(1000),
  to: z.number().int(),
  cc: z.number().int(),
  bcc: z.number().int(),
  subject: z.string().max(1000),
  attachments: z.array(z.object({ name: z.string().max(300), size: z.number().int() })).max(200),
  bytes: z.number().int(),
});

/**
 * Handed over at claim time. It carries no real token: the daemon's egress gateway holds them and
 * injects them on the host (docs/proxy.md); the sandbox gets placeholders only.
 */
export interface StartSpec {
  session_id: string;
  user_id: number;
  /** Placeholder values by env name, e.g. { MAIL_API_KEY: '…' }; given to the child. */
  placeholders: Record<string, string>;
  /** Short-lived HMAC token bound to user and session (host route). */
  agent_user_token?: string;
  /** Agent settings the child reads from its env (provider, model, max steps, allowed tools…). */
  agent_env: Record<string, string>;
  /** The send policy the proxy reads mail against (its first wall; the gateway decides again on the host). */
  mail_policy?: MailPolicy;
}

/**
 * `warm` waits until the agent child and its MCP servers, started idle at boot, are ready, and
 * answers with the status: a pool member is kept only after it (docs/runtime.md#pool).
 */
export type ControlRequest =
  | { id: string; type: 'ping' }
  | { id: string; type: 'warm' }
  | { id: string; type: 'start'; spec: StartSpec }
  | ({ id: string; type: 'prompt'; turn_id: string; prompt: string } & PromptContext)
  | { id: string; type: 'cancel'; turn_id: string }
  | { id: string; type: 'shutdown' }
  | { id: string; type: 'shell'; cols?: number; rows?: number };

export const StartSpecSchema: z.ZodType<StartSpec> = z.object({
  session_id: z.string(),
  user_id: z.number(),
  placeholders: StringMapSchema,
  agent_user_token: z.string().optional(),
  agent_env: StringMapSchema,
  mail_policy: MailPolicySchema.optional(),
});

export const ControlRequestSchema: z.ZodType<ControlRequest> = z.discriminatedUnion('type', [
  z.object({ id: z.string(), type: z.literal('ping') }),
  z.object({ id: z.string(), type: z.literal('warm') }),
  z.object({ id: z.string(), type: z.literal('start'), spec: StartSpecSchema }),
  z.object({ id: z.string(), type: z.literal('prompt'), turn_id: z.string(), prompt: z.string(), ...PromptContextFields }),
  z.object({ id: z.string(), type: z.literal('cancel'), turn_id: z.string() }),
  z.object({ id: z.string(), type: z.literal('shutdown') }),
  z.object({ id: z.string(), type: z.literal('shell'), cols: z.number().optional(), rows: z.number().optional() }),
]);

export type ControlMessage =
  | { type: 'reply'; id: string; ok: true; data?: Record<string, unknown> }
  | { type: 'reply'; id: string; ok: false; error: { code: string; message: string } }
  | { type: 'event'; turn_id: string; event: AgentEvent }
  | ({ type: 'turn_end'; turn_id: string; stop_reason: StopReason; error?: { code: string; message: string } } & TurnEndExtras)
  | { type: 'log'; level: 'info' | 'warn' | 'error'; msg: string; data?: Record<string, unknown> }
  /**
   * One credential-proxy request's outcome (no path values, query, body or token): the daemon
   * counts them in /metrics and records them in the audit trail.
   */
  | ({ type: 'proxy_decision' } & ProxyDecisionRecord);

/** What the audit trail keeps of one proxied request. */
export interface ProxyDecisionRecord {
  /** The route's name; null when no route matched. */
  route: string | null;
  outcome: 'forwarded' | 'refused' | 'upstream_error';
  status: number;
  code?: string;
  method?: string;
  /** The allow-list template the path matched (never the path's values). */
  template?: string;
  /** The turn the request belongs to (the supervisor's running turn), and the tool call that made it. */
  turn_id?: string | null;
  call_id?: string | null;
  req_bytes?: number;
  res_bytes?: number;
  ms?: number;
  /** Mail sends: how many recipients (To + Cc + Bcc). */
  recipients?: number;
  /** Request headers dropped because they are not on the route's allow-list. */
  dropped_headers?: number;
}

/** The data of the supervisor's reply to `ping` and `start`. */
export interface SupervisorStatus {
  /** 'hello' until `start`; then 'started' (bound to `session_id`). */
  state: 'hello' | 'started';
  session_id: string | null;
  child_pid: number | null;
  child_restarts: number;
  turn_id: string | null;
  proxy_port: number | null;
  uptime_ms: number;
  /** The agent child (and its MCP servers) answered `ready`; absent from supervisors older than the field. */
  agent_ready?: boolean;
}
export const SupervisorStatusSchema: z.ZodType<SupervisorStatus> = z.object({
  state: z.enum(['hello', 'started']),
  session_id: z.string().nullable(),
  child_pid: z.number().nullable(),
  child_restarts: z.number(),
  turn_id: z.string().nullable(),
  proxy_port: z.number().nullable(),
  uptime_ms: z.number(),
  agent_ready: z.boolean().optional(),
});

export const ControlMessageSchema: z.ZodType<ControlMessage> = z.union([
  z.object({ type: z.literal('reply'), id: z.string(), ok: z.literal(true), data: JsonObjectSchema.optional() }),
  z.object({ type: z.literal('reply'), id: z.string(), ok: z.literal(false), error: CodedErrorSchema }),
  z.object({ type: z.literal('event'), turn_id: z.string(), event: AgentEventSchema }),
  TurnEndSchema,
  z.object({ type: z.literal('log'), level: z.enum(['info', 'warn', 'error']), msg: z.string(), data: JsonObjectSchema.optional() }),
  z.object({
    type: z.literal('proxy_decision'),
    route: z.string().nullable(),
    outcome: z.enum(['forwarded', 'refused', 'upstream_error']),
    status: z.number(),
    code: z.string().optional(),
    method: z.string().max(16).optional(),
    template: z.string().max(300).optional(),
    turn_id: z.string().max(64).nullable().optional(),
    call_id: z.string().max(128).nullable().optional(),
    req_bytes: z.number().optional(),
    res_bytes: z.number().optional(),
    ms: z.number().optional(),
    recipients: z.number().optional(),
    dropped_headers: z.number().optional(),
  }),
]);

// ---------------------------------------------------------------- agent child ⇄ MCP tool servers (stdio)
// The MCP SDK checks the JSON-RPC envelope; these are the parts of a tools/call result the
// agent reads, checked again where they enter our code.

export interface McpContentItem {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
}
export interface McpToolResult {
  content: McpContentItem[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
export const McpToolResultSchema: z.ZodType<McpToolResult> = z.object({
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional(), mimeType: z.string().optional(), data: z.string().optional() })).default([]),
  structuredContent: JsonObjectSchema.optional(),
  isError: z.boolean().optional(),
});

/**
 * agent child → each of its MCP servers, once at claim: the tool env (TOOL_ENV_NAMES) and the
 * working folder. A JSON-RPC request of our own beside MCP's; a server that does not know it
 * answers "method not found" and keeps the env it was started with.
 */
export const MCP_CONFIGURE_METHOD = 'airlock/configure';
/**
 * agent child → MCP server, in a tools/call's `_meta`: the id of the model's tool call. A tool
 * sends it on as the `X-Airlock-Call` header of its upstream requests, so the proxy's audit trail
 * ties each request to its call (the proxy strips it before the upstream).
 */
export const CALL_ID_META = 'airlock/call_id';
export const CALL_ID_HEADER = 'x-airlock-call';
export interface McpConfigureParams {
  env: Record<string, string>;
  cwd?: string;
}
export const McpConfigureRequestSchema = z.object({
  method: z.literal(MCP_CONFIGURE_METHOD),
  params: z.object({ env: StringMapSchema, cwd: z.string().optional() }),
});

// ---------------------------------------------------------------- session profile (/run/airlock/profile.json)

export interface ProfileRoute {
  /** 'mail' | 'sheets' | 'search' | 'model' | 'host' */
  name: string;
  /** Listen path prefix on the proxy, e.g. '/mail'. */
  prefix: string;
  /**
   * Allowed method + path templates (after the prefix is matched), e.g. { method: 'POST', path: '/mail/v1/users/me/messages/send' }.
   * A `{name}` matches one non-empty segment. `opaque` names the parameters whose segment is one
   * opaque value (a Sheets A1 range): only there may an encoded `/` or `\` (`%2F`, `%5C`) appear.
   */
  allow: { method: string; path: string; opaque?: string[] }[];
  /** Upstream base URL, e.g. https://gmail.googleapis.com */
  upstream: string;
  /** Optional path rewrite applied to the matched path, e.g. '/mail/v1/' → '/gmail/v1/'. */
  rewrite?: { from: string; to: string };
  /** Env name of the placeholder the child sends, e.g. 'MAIL_API_KEY'. */
  placeholder_env: string;
  /** Reference to the real token, written as '${MAIL_ACCESS_TOKEN}', never its value; null for no injection. */
  token_ref: string | null;
  /**
   * How the real token is sent: 'bearer' (Authorization) or 'x-api-key' (Anthropic); 'none'
   * sends no credential at all (a keyless local model server; the placeholder is still checked).
   */
  inject?: 'bearer' | 'x-api-key' | 'none';
  /** Child env name that receives the proxy base URL for this route, e.g. 'MAIL_BASE_URL'. */
  base_url_env: string;
}

export interface SessionProfile {
  version: 1;
  session_id: string;
  proxy: { host: '127.0.0.1'; port: number };
  routes: ProfileRoute[];
}

export const ProfileRouteSchema: z.ZodType<ProfileRoute> = z.object({
  name: z.string(),
  prefix: z.string(),
  allow: z.array(z.object({ method: z.string(), path: z.string(), opaque: z.array(z.string()).optional() })),
  upstream: z.string(),
  rewrite: z.object({ from: z.string(), to: z.string() }).optional(),
  placeholder_env: z.string(),
  token_ref: z.string().nullable(),
  inject: z.enum(['bearer', 'x-api-key', 'none']).optional(),
  base_url_env: z.string(),
});

export const SessionProfileSchema: z.ZodType<SessionProfile> = z.object({
  version: z.literal(1),
  session_id: z.string(),
  proxy: z.object({ host: z.literal('127.0.0.1'), port: z.number() }),
  routes: z.array(ProfileRouteSchema),
});

/** Paths inside the sandbox. */
export const SANDBOX_RUN_DIR = '/run/airlock';
export const SANDBOX_PROFILE = '/run/airlock/profile.json';
export const SANDBOX_CONTROL_SOCKET = '/run/airlock/control.sock';
export const SANDBOX_EGRESS_SOCKET = '/run/airlock/egress.sock';
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_ATTACHMENTS = '/workspace/.agent-attachments';
export const SANDBOX_PROXY_PORT = 8700;
export { AGENT_SETTING_ENVS, CHILD_UID, CHILD_GID } from './sandbox-ids.js';

// The daemon-internal seams (turn runner, preparer, auditor, egress) live in core/seams.ts.
export * from './seams.js';
