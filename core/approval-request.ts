/**
 * A mail send held at the proxy until the user decides (docs/chat.md#approvals), as every view of
 * it names it: the stream's `approval_request` (core/sandbox-events.ts), the stored history's
 * approval (core/chat-history.ts) and the chat page's card (web/ui/src/approval-card.tsx) extend
 * these fields. Who it goes to, its subject and attachment names — never its body. Types only, no
 * imports: the chat page's bundle reads it.
 */
/** A message's recipients by header: lower-cased, in header order, each once per header. */
export interface RecipientFields {
  to: string[];
  cc: string[];
  bcc: string[];
}

export interface ApprovalRequest {
  /** What is held: a mail send. Absent on requests made before connectors had approvals: a mail send too. */
  kind?: 'mail';
  approval_id: string;
  /** The running send_email call the send is bound to (core/turn-calls.ts); null only in histories from before the binding. */
  call_id: string | null;
  recipients: string[];
  /** Each recipient under the header that named it; absent for sends held before it was kept. */
  fields?: RecipientFields;
  /** The recipients the approval is about (outside the always-allowed domains). */
  ask: string[];
  subject: string;
  attachments: { name: string; size: number }[];
}

/** Where a held send stands: `pending` only while the turn runs. */
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'timed_out';

/** For `approved`: this send only, or every send to these recipients in this session. */
export type ApprovalScope = 'once' | 'recipient';

/**
 * A call of a connector's tool marked ask, held by the egress gateway until the user decides
 * (docs/connectors.md "Approval binding"): the connector, the tool and the exact arguments the
 * gateway will forward if approved, bound to the one tool call that made it.
 */
export interface ConnectorApprovalRequest {
  kind: 'connector';
  approval_id: string;
  /** The model's tool call the held call belongs to; null when the agent sent none. */
  call_id: string | null;
  connector: { id: string; label: string };
  /** The tool's name on the connector's server (the model sees `<connector id>__<tool>`). */
  tool: string;
  arguments: Record<string, unknown>;
}
