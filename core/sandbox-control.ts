/**
 * The sandbox protocol between the daemon and the in-container supervisor (the control socket):
 * requests, replies and pushed messages, the start spec and the mail policy. Part of
 * core/sandbox-protocol.ts, which re-exports it.
 */
import { z } from 'zod';
import type { MailPolicy } from './api-types-admin.js';
import {
  CodedErrorSchema,
  AgentEventSchema,
  JsonObjectSchema,
  PromptContextFields,
  StringMapSchema,
  TurnEndSchema,
  type StopReason,
  type AgentEvent,
  type PromptContext,
  type TurnEndExtras,
} from './sandbox-events.js';

// ---------------------------------------------------------------- daemon ⇄ supervisor (control socket)

/** The user's effective send policy (core/api-types-admin.ts, shared with the admin API): the proxy applies it to every mail send. */
export type { MailPolicy };
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
  /** The recipients by header (To, Cc, Bcc), each once per header: what the card and the audit show apart. */
  fields?: { to: string[]; cc: string[]; bcc: string[] };
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
  fields: z
    .object({
      to: z.array(z.string()).max(1000),
      cc: z.array(z.string()).max(1000),
      bcc: z.array(z.string()).max(1000),
    })
    .optional(),
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
  z.object({
    id: z.string(),
    type: z.literal('prompt'),
    turn_id: z.string(),
    prompt: z.string(),
    ...PromptContextFields,
  }),
  z.object({ id: z.string(), type: z.literal('cancel'), turn_id: z.string() }),
  z.object({ id: z.string(), type: z.literal('shutdown') }),
  z.object({ id: z.string(), type: z.literal('shell'), cols: z.number().optional(), rows: z.number().optional() }),
]);

export type ControlMessage =
  | { type: 'reply'; id: string; ok: true; data?: Record<string, unknown> }
  | { type: 'reply'; id: string; ok: false; error: { code: string; message: string } }
  | { type: 'event'; turn_id: string; event: AgentEvent }
  | ({
      type: 'turn_end';
      turn_id: string;
      stop_reason: StopReason;
      error?: { code: string; message: string };
    } & TurnEndExtras)
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
  z.object({
    type: z.literal('log'),
    level: z.enum(['info', 'warn', 'error']),
    msg: z.string(),
    data: JsonObjectSchema.optional(),
  }),
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
