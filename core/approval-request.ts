/**
 * A mail send held at the proxy until the user decides (docs/chat.md#approvals), as every view of
 * it names it: the stream's `approval_request` (core/sandbox-events.ts), the stored history's
 * approval (core/chat-history.ts) and the chat page's card (web/ui/src/approval-card.tsx) extend
 * these fields. Who it goes to, its subject and attachment names — never its body. Types only, no
 * imports: the chat page's bundle reads it.
 */
export interface ApprovalRequest {
  approval_id: string;
  /** The running send_email call the send is bound to (core/turn-calls.ts); null only in histories from before the binding. */
  call_id: string | null;
  recipients: string[];
  /** The recipients the approval is about (outside the always-allowed domains). */
  ask: string[];
  subject: string;
  attachments: { name: string; size: number }[];
}

/** Where a held send stands: `pending` only while the turn runs. */
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'timed_out';

/** For `approved`: this send only, or every send to these recipients in this session. */
export type ApprovalScope = 'once' | 'recipient';
