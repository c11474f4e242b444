/**
 * The turn audit's shapes (GET /api/admin/turns/{turnId}): a turn, its tool calls with the upstream
 * requests the in-sandbox proxy decided on, its held mail sends and the feedback on its answer.
 * Each is a zod schema and a type of the same name: the route definition (web/routes/admin.ts)
 * names the schema, domain/chat/turn-audit.ts builds the type, domain/db/schema-egress.ts extends
 * ProxyRequestFields, and web/admin-api.ts re-exports the types to the pages (which import types
 * only, so no zod reaches the page bundle).
 */
import { z } from 'zod';
import { TokenUsage } from './chat-history.js';

/** What is recorded of one request the in-sandbox proxy decided on (the proxy_requests row, domain/db/schema-egress.ts). */
export const ProxyRequestFields = z.strictObject({
  route: z.string().nullable(),
  method: z.string().nullable(),
  /** The allow-list template the path matched, never the path's values. */
  template: z.string().nullable(),
  outcome: z.enum(['forwarded', 'refused', 'upstream_error']),
  status: z.number(),
  code: z.string().nullable(),
  req_bytes: z.number().nullable(),
  res_bytes: z.number().nullable(),
  ms: z.number().nullable(),
  recipients: z.number().nullable(),
  node_id: z.string(),
});
export type ProxyRequestFields = z.infer<typeof ProxyRequestFields>;

/** One request the in-sandbox proxy decided on (GET /api/admin/turns/:turnId). */
export const AuditedRequest = ProxyRequestFields.extend({ id: z.number(), at: z.string() });
export type AuditedRequest = z.infer<typeof AuditedRequest>;

const AuditAccount = z.strictObject({ id: z.number(), username: z.string().nullable() });

/** GET /api/admin/turns/:turnId: one turn, its tool calls with their upstream requests, and its held sends. */
export const TurnAudit = z.strictObject({
  turn_id: z.string(),
  session_id: z.string(),
  title: z.string(),
  user: AuditAccount,
  prompt: z.string(),
  status: z.string(),
  stop_reason: z.string().nullable(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  /** Tokens the turn's model calls used, as the provider reported them (null: none reported). */
  usage: TokenUsage.nullable(),
  tool_calls: z.array(
    z.strictObject({
      call_id: z.string(),
      tool: z.string(),
      status: z.string(),
      duration_ms: z.number().nullable(),
      requests: z.array(AuditedRequest),
    }),
  ),
  /** Requests of no tool call: the model's, and those the child made itself. */
  other_requests: z.array(AuditedRequest),
  mail_holds: z.array(
    z.strictObject({
      id: z.string(),
      call_id: z.string().nullable(),
      recipients: z.array(z.string()),
      /** The recipients by header; absent for sends held before they were kept apart. */
      fields: z.strictObject({ to: z.array(z.string()), cc: z.array(z.string()), bcc: z.array(z.string()) }).optional(),
      asked: z.array(z.string()),
      subject: z.string(),
      attachments: z.array(z.strictObject({ name: z.string(), size: z.number() })),
      state: z.string(),
      scope: z.string().nullable(),
      code: z.string().nullable(),
      at: z.string(),
      decided_at: z.string().nullable(),
    }),
  ),
  /** Feedback users gave the answer (docs/chat.md "Feedback on answers"), oldest change first. */
  feedback: z.array(
    z.strictObject({
      user: AuditAccount,
      rating: z.enum(['up', 'down']),
      note: z.string().nullable(),
      at: z.string(),
    }),
  ),
});
export type TurnAudit = z.infer<typeof TurnAudit>;
