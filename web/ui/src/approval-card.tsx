// A mail send held at the proxy until the user decides (docs/chat.md#approvals): From, To, Cc,
// Bcc, Subject, the plain-text part and the HTML part side by side (the HTML sanitised in a
// sandboxed frame: approval-html.tsx) with a warning when they say different things, and each
// attachment by name, type and size (images as thumbnails), with Approve / Deny. The message comes
// from the preview route while the send waits and stays on the card after the decision while the
// page is open; it is never part of the stream or the stored history, so after a reload a decided
// card shows who and what, not the body.
import { useEffect, useState } from 'preact/hooks';
import type { ApprovalPreview, ApprovalRequestEvent, ApprovalScope, ApprovalState } from '../../chat-api.js';
import { api, ApiError } from './api.js';
import { shownOf, ShownText, type Shown } from './error-text.js';
import { HtmlPart } from './approval-html.js';

/** A held send as the card shows it: the stream's request (core/approval-request.ts), with where it stands. */
export interface ApprovalPart extends Omit<ApprovalRequestEvent, 'type' | 'seq' | 'kind'> {
  kind: 'approval';
  state: ApprovalState;
  scope?: ApprovalScope;
}

const APPROVAL_STATE = {
  pending: 'Waiting for your approval',
  approved: 'Approved',
  denied: 'Not sent',
  timed_out: 'Not sent: nobody approved in time',
} as const;
/** The card's heading: a question while the send waits, then what became of it (never "held" once decided). */
const HEADING = {
  pending: 'Send this e-mail?',
  approved: 'E-mail approved',
  denied: 'E-mail denied',
  timed_out: 'E-mail not approved in time',
} as const;

const size = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / (1024 * 1024)).toFixed(1)} MB`;

function Addresses({ list, ask }: { list: string[]; ask: string[] }) {
  return (
    <>
      {list.map((r) => (
        <span key={r} class={ask.includes(r) ? 'asked' : undefined}>
          {r}
        </span>
      ))}
    </>
  );
}

/** The preview of a pending send: fetched once while it waits; a decided one has none (410). */
function usePreview(
  sessionId: string | null | undefined,
  p: ApprovalPart,
): { preview: ApprovalPreview | null; gone: boolean } {
  const [preview, setPreview] = useState<ApprovalPreview | null>(null);
  const [gone, setGone] = useState(false);
  const pending = p.state === 'pending';
  useEffect(() => {
    if (!pending || !sessionId) return;
    let live = true;
    api<ApprovalPreview>('GET', `${base(sessionId, p.approval_id)}/preview`).then(
      (v) => live && setPreview(v),
      () => live && setGone(true),
    );
    return () => {
      live = false;
    };
  }, [pending, sessionId, p.approval_id]);
  // Once read, the message stays on the card after the decision (the page's memory only).
  return { preview, gone: gone || !pending };
}

const base = (sessionId: string, id: string) =>
  `/api/chat/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(id)}`;

function Attachments({
  p,
  preview,
  sessionId,
}: {
  p: ApprovalPart;
  preview: ApprovalPreview | null;
  sessionId?: string | null;
}) {
  if (preview && preview.attachments.length)
    return (
      <ul class="approval-files">
        {preview.attachments.map((a) => (
          <li key={a.n} data-attachment-name={a.name}>
            {a.thumbnail && sessionId ? (
              <img src={`${base(sessionId, p.approval_id)}/attachments/${a.n}`} alt={`Attachment ${a.name}`} />
            ) : null}
            <span>
              {a.name}{' '}
              <span class="muted">
                ({a.content_type}, {size(a.size)})
              </span>
            </span>
          </li>
        ))}
      </ul>
    );
  return <>{p.attachments.map((a) => `${a.name} (${size(a.size)})`).join(', ')}</>;
}

function Fields({
  p,
  preview,
  sessionId,
}: {
  p: ApprovalPart;
  preview: ApprovalPreview | null;
  sessionId?: string | null;
}) {
  const rows: [string, string[]][] = preview
    ? (
        [
          ['From', preview.from],
          ['To', preview.to],
          ['Cc', preview.cc],
          ['Bcc', preview.bcc],
        ] as [string, string[]][]
      ).filter(([k, v]) => v.length || k === 'To')
    : p.fields
      ? (
          [
            ['To', p.fields.to],
            ['Cc', p.fields.cc],
            ['Bcc', p.fields.bcc],
          ] as [string, string[]][]
        ).filter(([k, v]) => v.length || k === 'To')
      : [['To', p.recipients]];
  return (
    <dl>
      {rows.map(([k, v]) => (
        <>
          <dt key={`k${k}`}>{k}</dt>
          <dd key={`v${k}`} class={`recipients ${k.toLowerCase()}`}>
            <Addresses list={v} ask={p.ask} />
          </dd>
        </>
      ))}
      <dt>Subject</dt>
      <dd class="subject">{p.subject || <span class="muted">(no subject)</span>}</dd>
      {(preview?.attachments.length ?? p.attachments.length) > 0 && (
        <>
          <dt>Attachments</dt>
          <dd class="attachments">
            <Attachments p={p} preview={preview} sessionId={sessionId} />
          </dd>
        </>
      )}
    </dl>
  );
}

function Body({ preview, pending, gone }: { preview: ApprovalPreview | null; pending: boolean; gone: boolean }) {
  if (preview)
    return (
      <div class="approval-body-wrap">
        {preview.parts_differ && (
          <p class="banner warn approval-differ" role="alert">
            The plain-text part and the HTML part of this e-mail say different things. Most mail programs show the HTML
            part: read both before approving.
          </p>
        )}
        <div class="approval-parts">
          <div class="approval-part">
            <div class="muted">Plain-text part</div>
            {preview.text_from === 'plain' ? (
              <pre class="approval-body" tabIndex={0} aria-label="Plain-text part">
                {preview.text || '(empty)'}
              </pre>
            ) : (
              <p class="muted approval-no-text">None: recipients see the HTML part.</p>
            )}
          </div>
          {preview.html !== null ? (
            <HtmlPart html={preview.html} />
          ) : (
            <div class="approval-part">
              <div class="muted">HTML part</div>
              <p class="muted">None: recipients see the plain text.</p>
            </div>
          )}
        </div>
      </div>
    );
  if (pending && !gone) return <p class="muted">Loading the message…</p>;
  return pending ? <p class="muted">The message could not be shown.</p> : null;
}

export function ApprovalCard({
  p,
  sessionId,
  onDecide,
}: {
  p: ApprovalPart;
  sessionId?: string | null;
  onDecide(id: string, decision: 'approve' | 'deny', scope: 'once' | 'recipient'): Promise<void>;
}) {
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<Shown | null>(null);
  const pending = p.state === 'pending';
  const { preview, gone } = usePreview(sessionId, p);
  const decide = (decision: 'approve' | 'deny', scope: 'once' | 'recipient' = 'once') => {
    setSending(true);
    setProblem(null);
    onDecide(p.approval_id, decision, scope).then(
      () => setSending(false),
      (err: unknown) => {
        setSending(false);
        setProblem(err instanceof ApiError ? shownOf(err) : 'The decision could not be sent; try again.');
      },
    );
  };
  return (
    <section
      class={`approval ${p.state}`}
      data-approval={p.approval_id}
      data-state={p.state}
      aria-label={HEADING[p.state]}
    >
      <h3>{HEADING[p.state]}</h3>
      <Fields p={p} preview={preview} sessionId={sessionId} />
      <Body preview={preview} pending={pending} gone={gone} />
      {p.repeat_of && pending ? (
        <p class="banner info" role="note">
          The same message (recipients, subject and attachments) was already sent from this chat at{' '}
          {new Date(p.repeat_of).toLocaleTimeString()}. Approve only if it should go again.
        </p>
      ) : (
        p.ask.length > 0 &&
        pending && (
          <p class="muted">Not on the domains your organisation always allows, so it asks first: {p.ask.join(', ')}</p>
        )
      )}
      {pending ? (
        <div class="approval-actions">
          <button type="button" disabled={sending} onClick={() => decide('approve')}>
            Approve
          </button>
          {!p.repeat_of && (
            <button type="button" class="secondary" disabled={sending} onClick={() => decide('approve', 'recipient')}>
              Approve for {p.ask.length === 1 ? 'this recipient' : 'these recipients'} in this chat
            </button>
          )}
          <button type="button" class="danger" disabled={sending} onClick={() => decide('deny')}>
            Deny
          </button>
          <span class="muted">until {new Date(p.expires_at).toLocaleTimeString()}</span>
        </div>
      ) : (
        <p class="approval-state" role="status">
          {APPROVAL_STATE[p.state]}
          {p.state === 'approved' && p.scope === 'recipient' ? ' for these recipients in this chat' : ''}
        </p>
      )}
      {problem && (
        <div class="banner error" role="alert">
          <ShownText s={problem} />
        </div>
      )}
    </section>
  );
}
