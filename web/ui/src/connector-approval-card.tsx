// A connector tool call marked ask, held by the egress gateway until the user decides
// (docs/connectors.md "Approval binding"): the connector's label, the tool and the exact
// arguments the gateway will send if approved, as pretty-printed JSON (text only: never HTML),
// cut past a bound with a note, with Approve / Deny. An approval is for this one call.
import { useState } from 'preact/hooks';
import type { ApprovalState, ChatEvent, ConnectorApprovalRequestEvent } from '../../chat-api.js';
import { ApiError } from './api.js';
import { ApprovalCard, type ApprovalPart } from './approval-card.js';
import { shownOf, ShownText, type Shown } from './error-text.js';

/** A held connector call as the card shows it: the stream's request, with where it stands. */
export interface ConnectorApprovalPart extends Omit<ConnectorApprovalRequestEvent, 'type' | 'seq' | 'kind'> {
  kind: 'connector_approval';
  state: ApprovalState;
}

/** The card's part for a stream's connector `approval_request`. */
export function connectorApprovalPart(e: ConnectorApprovalRequestEvent): ConnectorApprovalPart {
  return {
    kind: 'connector_approval',
    approval_id: e.approval_id,
    call_id: e.call_id,
    connector: e.connector,
    tool: e.tool,
    arguments: e.arguments,
    expires_at: e.expires_at,
    state: 'pending',
  };
}

/** At most this many characters of the arguments are shown; the rest is named, not hidden silently. */
export const ARGS_SHOWN = 20_000;

const DECISIONS: ['approve' | 'deny', string, string | undefined][] = [
  ['approve', 'Approve', undefined],
  ['deny', 'Deny', 'danger'],
];

const STATE = {
  pending: 'Waiting for your approval',
  approved: 'Approved',
  denied: 'Not run',
  timed_out: 'Not run: nobody approved in time',
} as const;

/** The arguments as the card shows them: pretty JSON, cut at ARGS_SHOWN characters. */
export function shownArguments(args: unknown): { text: string; cut: number } {
  const text = JSON.stringify(args ?? {}, null, 2) ?? '{}';
  return text.length > ARGS_SHOWN
    ? { text: text.slice(0, ARGS_SHOWN), cut: text.length - ARGS_SHOWN }
    : { text, cut: 0 };
}

export function ConnectorApprovalCard({
  p,
  onDecide,
}: {
  p: ConnectorApprovalPart;
  onDecide(id: string, decision: 'approve' | 'deny', scope: 'once'): Promise<void>;
}) {
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<Shown | null>(null);
  const pending = p.state === 'pending';
  const args = shownArguments(p.arguments);
  const decide = (decision: 'approve' | 'deny') => {
    setSending(true);
    setProblem(null);
    onDecide(p.approval_id, decision, 'once').then(
      () => setSending(false),
      (err: unknown) => {
        setSending(false);
        setProblem(err instanceof ApiError ? shownOf(err) : 'The decision could not be sent; try again.');
      },
    );
  };
  const title = pending ? `Run this ${p.connector.label} tool?` : `${p.connector.label} tool held for your approval`;
  return (
    <section
      class={`approval connector-approval ${p.state}`}
      data-approval={p.approval_id}
      data-state={p.state}
      data-kind="connector"
      aria-label={title}
    >
      <h3>{title}</h3>
      <dl>
        <dt>Connector</dt>
        <dd class="connector">{p.connector.label}</dd>
        <dt>Tool</dt>
        <dd class="tool">
          <code>{p.tool}</code>
        </dd>
      </dl>
      <div class="muted">Arguments{pending ? ' (exactly what will be sent)' : ''}</div>
      <pre class="approval-body approval-args" tabIndex={0} aria-label="Arguments">
        {args.text}
      </pre>
      {args.cut > 0 && (
        <p class="muted">
          {args.cut.toLocaleString()} more characters are not shown; deny if you cannot judge the call.
        </p>
      )}
      {pending ? (
        <div class="approval-actions">
          {DECISIONS.map(([d, label, cls]) => (
            <button key={d} type="button" class={cls} disabled={sending} onClick={() => decide(d)}>
              {label}
            </button>
          ))}
          <span class="muted">until {new Date(p.expires_at).toLocaleTimeString()}</span>
        </div>
      ) : (
        <p class="approval-state" role="status" children={STATE[p.state]} />
      )}
      {problem ? <div class="banner error" role="alert" children={<ShownText s={problem} />} /> : null}
    </section>
  );
}

/** A part held for the user's approval: a mail send or a connector call. */
export type AskPart = ApprovalPart | ConnectorApprovalPart;

export const isAsk = (p: { kind: string }): p is AskPart => p.kind === 'approval' || p.kind === 'connector_approval';

/** The part after its `approval_result`. */
export function decided(p: AskPart, e: Extract<ChatEvent, { type: 'approval_result' }>): AskPart {
  return p.kind === 'approval' ? { ...p, state: e.decision, scope: e.scope } : { ...p, state: e.decision };
}

/** The one place that picks the card: a connector call's, else a mail send's (approval-card.tsx). */
export function AskCard({
  p,
  sessionId,
  onDecide,
}: {
  p: AskPart;
  sessionId?: string | null;
  onDecide(id: string, decision: 'approve' | 'deny', scope: 'once' | 'recipient'): Promise<void>;
}) {
  return p.kind === 'connector_approval' ? (
    <ConnectorApprovalCard p={p} onDecide={onDecide} />
  ) : (
    <ApprovalCard p={p} sessionId={sessionId} onDecide={onDecide} />
  );
}
