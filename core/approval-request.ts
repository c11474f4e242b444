/**
 * A mail send held at the proxy until the user decides (docs/chat.md#approvals), as every view of
 * it names it: the stream's `approval_request` (core/sandbox-events.ts), the stored history's
 * approval (core/chat-history.ts) and the chat page's card (web/ui/src/approval-card.tsx) extend
 * these fields. Who it goes to, its subject and attachment names — never its body. Each is a zod
 * schema with a type of the same name; the chat page's bundle imports the types only.
 */
import { z } from 'zod';

/** A message's recipients by header: lower-cased, in header order, each once per header. */
export const RecipientFields = z.strictObject({
  to: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
});
export type RecipientFields = z.infer<typeof RecipientFields>;

export const ApprovalRequest = z.strictObject({
  /** What is held: a mail send. Absent on requests made before connectors had approvals: a mail send too. */
  kind: z.literal('mail').optional(),
  approval_id: z.string(),
  /** The running send_email call the send is bound to (core/turn-calls.ts); null only in histories from before the binding. */
  call_id: z.string().nullable(),
  recipients: z.array(z.string()),
  /** Each recipient under the header that named it; absent for sends held before it was kept. */
  fields: RecipientFields.optional(),
  /** The recipients the approval is about (outside the always-allowed domains). */
  ask: z.array(z.string()),
  subject: z.string(),
  attachments: z.array(z.strictObject({ name: z.string(), size: z.number() })),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequest>;

export const ApprovalState = z.enum(['pending', 'approved', 'denied', 'timed_out']);
export type ApprovalState = z.infer<typeof ApprovalState>;

/** For `approved`: this send only, or every send to these recipients in this session. */
export const ApprovalScope = z.enum(['once', 'recipient']);
export type ApprovalScope = z.infer<typeof ApprovalScope>;

/**
 * A call of a connector's tool marked ask, held by the egress gateway until the user decides
 * (docs/connectors.md "Approval binding"): the connector, the tool and the exact arguments the
 * gateway will forward if approved, bound to the one tool call that made it.
 */
export const ConnectorApprovalRequest = z.strictObject({
  kind: z.literal('connector'),
  approval_id: z.string(),
  /** The model's tool call the held call belongs to; null when the agent sent none. */
  call_id: z.string().nullable(),
  connector: z.strictObject({ id: z.string(), label: z.string() }),
  /** The tool's name on the connector's server (the model sees `<connector id>__<tool>`). */
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
});
export type ConnectorApprovalRequest = z.infer<typeof ConnectorApprovalRequest>;
