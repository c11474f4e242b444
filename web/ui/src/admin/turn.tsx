// One chat turn's audit trail: GET /api/admin/turns/:turnId, shown at #/admin/turn/<turn id>
// (linked from the action log). The prompt, each tool call with the upstream requests the
// sandbox's proxy made for it, the requests of no tool call (the model's), and the mail sends
// held for approval with their outcome. Never a body or a token: the server keeps none.
import type { AuditedRequest, TurnAudit } from '../../../admin-api.js';
import { api } from '../api.js';
import { Clip, ErrorBox, fmtTime, Loading, PageTitle, Section, Table, useLoad, type Column } from './common.js';

const REQ_COLS: Column<AuditedRequest>[] = [
  { title: 'When', render: (q) => fmtTime(q.at) },
  { title: 'Route', render: (q) => q.route ?? '—' },
  { title: 'Request', render: (q) => <code>{`${q.method ?? '?'} ${q.template ?? '(no route)'}`}</code> },
  {
    title: 'Outcome',
    render: (q) => (
      <>
        <span class={`badge ${q.outcome === 'forwarded' ? 'info' : 'warning'}`}>{q.outcome}</span>
        {q.code && (
          <details class="error-details">
            <summary>Code</summary>
            <code>{q.code}</code>
          </details>
        )}
      </>
    ),
  },
  { title: 'Status', render: (q) => String(q.status) },
  { title: 'Bytes', render: (q) => `${q.req_bytes ?? 0} → ${q.res_bytes ?? 0}` },
  { title: 'Time', render: (q) => (q.ms === null ? '' : `${q.ms} ms`) },
  { title: 'Recipients', render: (q) => (q.recipients === null ? '' : String(q.recipients)) },
];

type Hold = TurnAudit['mail_holds'][number];
/** To, Cc and Bcc apart when the hold kept them (older holds: one list). */
function recipientsText(h: Hold): string {
  if (!h.fields) return h.recipients.join(', ');
  return (
    [
      ['To', h.fields.to],
      ['Cc', h.fields.cc],
      ['Bcc', h.fields.bcc],
    ] as const
  )
    .filter(([, v]) => v.length)
    .map(([k, v]) => `${k}: ${v.join(', ')}`)
    .join(' · ');
}
const HOLD_COLS: Column<Hold>[] = [
  { title: 'When', render: (h) => fmtTime(h.at) },
  { title: 'Recipients', render: (h) => <Clip text={recipientsText(h)} /> },
  { title: 'Subject', render: (h) => <Clip text={h.subject} /> },
  { title: 'Attachments', render: (h) => h.attachments.map((a) => a.name).join(', ') },
  {
    title: 'Outcome',
    render: (h) => (
      <span class={`badge ${h.state === 'sent' || h.state === 'approved' ? 'info' : 'warning'}`}>
        {h.scope ? `${h.state} (${h.scope})` : h.state}
      </span>
    ),
  },
  { title: 'Decided', render: (h) => fmtTime(h.decided_at) },
];

type Given = TurnAudit['feedback'][number];
const FEEDBACK_COLS: Column<Given>[] = [
  { title: 'When', render: (f) => fmtTime(f.at) },
  { title: 'User', render: (f) => f.user.username ?? `user ${f.user.id}` },
  {
    title: 'Rating',
    render: (f) => (
      <span class={`badge ${f.rating === 'up' ? 'info' : 'warning'}`}>
        {f.rating === 'up' ? 'Thumbs up' : 'Thumbs down'}
      </span>
    ),
  },
  { title: 'Note', render: (f) => (f.note ? <Clip text={f.note} /> : '—') },
];

export function TurnPage() {
  const turnId = decodeURIComponent(location.hash.split('/')[3] ?? '');
  const [audit, failed] = useLoad(
    () => api<TurnAudit>('GET', `/api/admin/turns/${encodeURIComponent(turnId)}`),
    [turnId],
  );
  if (failed) return <ErrorBox error={failed} />;
  if (!audit) return <Loading />;
  return (
    <>
      <PageTitle
        title={`Turn of ${audit.user.username ?? `user ${audit.user.id}`}`}
        intro={`In "${audit.title}", ${fmtTime(audit.started_at)}: the tool calls of this turn and every request its sandbox sent out.`}
      />
      <Section title="Prompt">
        <p class="prompt">{audit.prompt}</p>
        <p class="muted">
          {audit.stop_reason ? `Ended: ${audit.stop_reason}` : audit.status}
          {audit.usage
            ? ` · ${audit.usage.input_tokens.toLocaleString()} input and ${audit.usage.output_tokens.toLocaleString()} output tokens`
            : ''}{' '}
          · session <code>{audit.session_id}</code> · turn <code>{audit.turn_id}</code>
        </p>
      </Section>
      {audit.tool_calls.map((c) => (
        <Section
          key={c.call_id}
          title={`Tool call ${c.tool} (${c.status}${c.duration_ms === null ? '' : `, ${c.duration_ms} ms`})`}
        >
          <Table rows={c.requests} cols={REQ_COLS} rowKey={(q) => q.id} empty="No upstream request." />
        </Section>
      ))}
      <Section title="Other requests (model calls, and requests of no tool call)">
        <Table rows={audit.other_requests} cols={REQ_COLS} rowKey={(q) => q.id} empty="None." />
      </Section>
      <Section title="Mail sends held for the send policy">
        <Table rows={audit.mail_holds} cols={HOLD_COLS} rowKey={(h) => h.id} empty="None." />
      </Section>
      <Section title="Feedback on the answer">
        <Table rows={audit.feedback} cols={FEEDBACK_COLS} rowKey={(f) => f.user.id} empty="No feedback." />
      </Section>
    </>
  );
}
