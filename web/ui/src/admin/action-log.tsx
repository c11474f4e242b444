// The action log: GET /api/data-authorization/audit, newest first, with event, severity and subject
// filters; 50 a page in one table, "Older entries" continues the same query with the server's cursor.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LogAccount, LogEntry, LogPage } from '../../../admin-api.js';
import { api } from '../api.js';
import { rendered } from './focus.js';
import {
  Field,
  fmtTime,
  Json,
  LoadFailed,
  PageTitle,
  Section,
  Select,
  Status,
  Table,
  useActions,
  useUserPicker,
  type Actions,
  type Column,
} from './common.js';

const BASE = '/api/data-authorization';
export const PAGE_SIZE = 50;

const SUGGESTED_EVENTS = [
  'identity.*',
  'identity.directory_sync.finished',
  'identity.organisation.created',
  'identity.team.created',
  'identity.agent_policy.created',
  'data.*',
  'data.role.created',
  'data.policy.created',
  'data.assignment.created',
  'bi.*',
  'bi.denied',
  'bi.allowed',
  'bi.entitlement.granted',
  'bi.entitlement.revoked',
  'auth.*',
  'account.*',
  'session.*',
  'chat.*',
];

/** An account in the log: its username (display name and id as a tooltip), or the bare id when it is gone. */
function Who({ person, id }: { person: LogAccount | null; id: number | null }) {
  if (id === null) return <span class="muted">—</span>;
  if (!person?.username) {
    return (
      <span class="muted" title="account deleted">
        #{id}
      </span>
    );
  }
  return (
    <span class="name" title={`${person.display_name ? `${person.display_name} · ` : ''}id ${id}`}>
      {person.username}
    </span>
  );
}

const LOG_COLS: Column<LogEntry>[] = [
  { title: 'When', render: (e) => fmtTime(e.created_at) },
  { title: 'Event', render: (e) => <code>{e.event}</code> },
  { title: 'Severity', render: (e) => <span class={`badge ${e.severity}`}>{e.severity}</span> },
  { title: 'Actor', render: (e) => <Who person={e.actor} id={e.actor_id} /> },
  { title: 'Subject', render: (e) => <Who person={e.subject} id={e.subject_id} /> },
  {
    title: 'Details',
    render: (e) =>
      Object.keys(e.data).length ? (
        <>
          {typeof e.data.turn_id === 'string' && /^[A-Za-z0-9-]{1,64}$/.test(e.data.turn_id) && (
            <a class="turn-link" href={`#/admin/turn/${e.data.turn_id}`}>
              Turn audit
            </a>
          )}
          <details>
            <summary>data</summary>
            <Json value={e.data} />
          </details>
        </>
      ) : (
        ''
      ),
  },
];

export function ActionLogPage() {
  const status = useActions();
  const [event, setEvent] = useState('');
  const [severity, setSeverity] = useState('');
  const subject = useUserPicker('log-subject');
  const [entries, setEntries] = useState<LogEntry[] | null>(null);
  const [before, setBefore] = useState<number | null>(null);
  const [failed, setFailed] = useState<unknown>(null);
  // The filters are fixed when the first page loads: "Older entries" continues that query.
  const query = useRef<URLSearchParams | null>(null);
  const rows = useRef<HTMLDivElement>(null);

  const first = async () => {
    // A new query: what the last one showed does not belong to it, also when it fails.
    setEntries(null);
    setBefore(null);
    query.current = null;
    const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (event.trim()) q.set('event', event.trim());
    if (severity) q.set('severity', severity);
    const subjectId = await subject.resolve();
    if (subjectId !== null) q.set('subject_id', String(subjectId));
    const r = await api<LogPage>('GET', `${BASE}/audit?${q}`);
    query.current = q;
    setEntries(r.events);
    setBefore(r.next_before);
  };
  const older = async () => {
    if (!query.current || before === null) return;
    const q = new URLSearchParams(query.current);
    q.set('before', String(before));
    const r = await api<LogPage>('GET', `${BASE}/audit?${q}`);
    const shown = entries?.length ?? 0;
    setEntries([...(entries ?? []), ...r.events]);
    setBefore(r.next_before);
    await rendered();
    // Keep the keyboard user's place: the first of the rows just added.
    const row = rows.current?.querySelectorAll('#log-table tbody tr')[shown];
    if (row instanceof HTMLElement) {
      row.setAttribute('tabindex', '-1');
      row.focus();
    }
  };
  useEffect(() => {
    first().catch((e: unknown) => setFailed(e));
  }, []);

  if (failed) {
    return (
      <div class="admin access">
        <PageTitle title="Action log" />
        <LoadFailed error={failed} unavailable="Data-access control is not available on this server" />
      </div>
    );
  }
  const count = entries?.length ?? 0;
  return (
    <div class="admin access">
      <PageTitle
        title="Action log"
        intro="Every audited action, newest first: sign-ins, data access, identity and directory changes, sessions and chats. Filter by event (a name, or a prefix like identity.*), severity and subject."
      />
      <Section title="Entries">
        <LogFilters
          status={status}
          apply={first}
          event={event}
          setEvent={setEvent}
          severity={severity}
          setSeverity={setSeverity}
          subjectField={subject.field}
        />
        <Status id="log-status" notice={status.notice} />
        <p class="muted" id="log-count" aria-live="polite">
          {count
            ? `${count} entr${count === 1 ? 'y' : 'ies'} shown${before !== null ? '; older ones remain' : ''}.`
            : ''}
        </p>
        <div id="log-rows" ref={rows}>
          {entries ? (
            <Table id="log-table" rows={entries} cols={LOG_COLS} rowKey={(e) => e.id} empty="No entries match." />
          ) : null}
        </div>
        <button
          type="button"
          class="secondary"
          id="log-more"
          hidden={before === null || !entries}
          disabled={status.busy === 'more'}
          onClick={() => void status.run('more', older)}
        >
          Older entries
        </button>
      </Section>
    </div>
  );
}

function LogFilters(p: {
  status: Actions;
  apply(): Promise<void>;
  event: string;
  setEvent(v: string): void;
  severity: string;
  setSeverity(v: string): void;
  subjectField: ComponentChildren;
}) {
  return (
    <form
      id="log-form"
      class="row"
      onSubmit={(e) => {
        e.preventDefault();
        void p.status.run('apply', p.apply);
      }}
    >
      <Field id="log-event" label="Event">
        <input
          type="text"
          id="log-event"
          list="log-events"
          placeholder="bi.denied or identity.*"
          value={p.event}
          onInput={(e) => p.setEvent(e.currentTarget.value)}
        />
      </Field>
      <datalist id="log-events">
        {SUGGESTED_EVENTS.map((v) => (
          <option key={v} value={v} />
        ))}
      </datalist>
      <Field id="log-severity" label="Severity">
        <Select
          id="log-severity"
          value={p.severity}
          onChange={p.setSeverity}
          options={[
            ['', 'any'],
            ['info', 'info'],
            ['warning', 'warning'],
            ['critical', 'critical'],
          ]}
        />
      </Field>
      <Field id="log-subject" label="Subject user">
        {p.subjectField}
      </Field>
      <button type="submit" id="log-apply" disabled={p.status.busy === 'apply'}>
        Apply filters
      </button>
    </form>
  );
}
