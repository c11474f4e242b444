// Live sessions (restart, kill): GET /api/admin/sessions, POST /api/admin/sessions/:id/restart|kill.
// Without a Docker engine the server answers 503 and the page says so. The list re-reads itself
// every REFRESH_MS while the page is shown (not while an operation runs).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LiveSession, LiveSessionList } from '../../../admin-api.js';
import { api, ApiError } from '../api.js';
import {
  Clip,
  ErrorBox,
  fmtTime,
  Loading,
  PageTitle,
  Section,
  Status,
  Table,
  useActions,
  type Actions,
  type Column,
} from './common.js';

/** How often the list re-reads the server while the page is open. */
export const REFRESH_MS = 5000;

/**
 * A session id as its first 8 characters on one line; the whole id is the tooltip, the copy
 * button's name, and what it copies (a whole UUID wrapped over three lines in a narrow column).
 */
function ShortId({ id, status }: { id: string; status: Actions }) {
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(id);
      status.ok(`Session id ${id} copied.`);
    } catch {
      status.ok(`Session id: ${id}`);
    }
  };
  return (
    <>
      <code class="sid" title={id}>
        {id.slice(0, 8)}
      </code>{' '}
      <button
        type="button"
        class="link small"
        aria-label={`Copy id ${id}`}
        title="Copy the whole id"
        onClick={() => void copy()}
      >
        Copy id
      </button>
    </>
  );
}

const nameOf = (s: LiveSession) => (s.title ? `"${s.title}"${s.username ? ` of ${s.username}` : ''}` : (s.id ?? ''));

const INTRO =
  "Running agent sandboxes: what each does now (a running turn's phase and time, or how long it has been idle), its memory and CPU time. Restart starts a fresh sandbox for the session; kill ends it. The list refreshes itself every few seconds.";

export function SessionsPage() {
  const [sessions, setSessions] = useState<LiveSession[] | null>(null);
  const [failed, setFailed] = useState<unknown>(null);
  const [updated, setUpdated] = useState('');
  const status = useActions();
  const busy = useRef(false);
  const read = async () => {
    const r = await api<LiveSessionList>('GET', '/api/admin/sessions');
    setSessions(r.sessions);
    setUpdated(`Updated ${new Date().toLocaleTimeString()}.`);
  };
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const tick = async () => {
      if (!busy.current) {
        try {
          await read();
        } catch (e) {
          if (live) status.setNotice({ kind: 'error', error: e });
        }
      }
      if (live) timer = setTimeout(() => void tick(), REFRESH_MS);
    };
    read()
      .then(() => {
        if (live) timer = setTimeout(() => void tick(), REFRESH_MS);
      })
      .catch((e: unknown) => live && setFailed(e));
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);

  const op = (s: LiveSession, what: 'restart' | 'kill') =>
    status.run(`${what}-${s.id}`, async () => {
      const name = nameOf(s);
      const question =
        what === 'kill'
          ? `Kill session ${name}? Its sandbox ends now; the chat stays and starts a new sandbox on the next message.`
          : `Restart session ${name}? A turn that is running is cut off; the chat goes on in a fresh sandbox.`;
      if (!confirm(question)) return;
      busy.current = true;
      try {
        await api('POST', `/api/admin/sessions/${encodeURIComponent(s.id ?? '')}/${what}`);
        await read();
        status.ok(what === 'kill' ? `Session ${name} killed.` : `Session ${name} restarted.`);
      } finally {
        busy.current = false;
      }
    });

  let body;
  if (failed) {
    body =
      failed instanceof ApiError && (failed.status === 404 || failed.status === 503) ? (
        <div class="banner info" role="status" id="sessions-unavailable">
          Live session management is not available on this server: {failed.message}
        </div>
      ) : (
        <ErrorBox error={failed} />
      );
  } else if (!sessions) body = <Loading />;
  else
    body = (
      <Section title="Sessions">
        <Status id="sess-status" notice={status.notice} />
        <div id="sessions-holder">
          <Table
            id="sessions-table"
            rows={sessions}
            rowKey={(s) => s.id ?? s.container_id}
            empty="No live sessions."
            cols={sessionColumns(status, op)}
          />
        </div>
        <p class="muted small" id="sessions-updated">
          {updated}
        </p>
      </Section>
    );
  return (
    <div class="admin sessions">
      <PageTitle title="Live sessions" intro={INTRO} />
      {body}
    </div>
  );
}

/** Seconds as "45 s" or "3 min". */
const dur = (s: number) => (s < 120 ? `${s} s` : `${Math.floor(s / 60)} min`);

/** What the sandbox does now: the running turn's phase and how long (a stuck turn shows as such), or how long it has been idle. */
function activity(s: LiveSession): string {
  if (s.turn) return `${s.turn.phase} ${dur(s.turn.phase_s)} (turn ${dur(s.turn.running_s)})`;
  return s.idle_s === null ? '' : `idle ${dur(s.idle_s)}`;
}

/** The list's columns; `op` restarts or kills a session (asking first). */
function sessionColumns(
  status: Actions,
  op: (s: LiveSession, what: 'restart' | 'kill') => Promise<boolean>,
): Column<LiveSession>[] {
  return [
    {
      title: 'Chat',
      render: (s) => (
        <div>
          <Clip text={s.title || '(untitled chat)'} cls="name" />
          <div class="muted small sid-line">
            <ShortId id={s.id ?? ''} status={status} />
          </div>
        </div>
      ),
    },
    {
      title: 'User',
      render: (s) =>
        s.username ? (
          <Clip text={s.display_name ? `${s.display_name} (${s.username})` : s.username} cls="name" />
        ) : (
          <span class="muted">{s.user_id === null ? '—' : `#${s.user_id}`}</span>
        ),
    },
    { title: 'Container', render: (s) => <code class="container-id">{s.container_id}</code> },
    {
      title: 'Status',
      render: (s) => (
        <div>
          {s.status}
          <div class="muted small activity">{activity(s)}</div>
        </div>
      ),
    },
    {
      title: 'Memory, CPU',
      render: (s) => (
        <span class="usage">
          {s.memory_bytes === null
            ? '—'
            : `${Math.round(s.memory_bytes / 1048576)} MiB · ${s.cpu_seconds?.toFixed(1)} s CPU`}
        </span>
      ),
    },
    { title: 'Turns', render: (s) => String(s.turns) },
    { title: 'Started', render: (s) => fmtTime(s.started_at) },
    {
      title: 'Actions',
      render: (s) => (
        <div class="row compact">
          <button
            type="button"
            class="secondary"
            aria-label={`Restart session ${s.id}`}
            disabled={status.busy === `restart-${s.id}`}
            onClick={() => void op(s, 'restart')}
          >
            Restart
          </button>
          <button
            type="button"
            class="danger"
            aria-label={`Kill session ${s.id}`}
            disabled={status.busy === `kill-${s.id}`}
            onClick={() => void op(s, 'kill')}
          >
            Kill
          </button>
        </div>
      ),
    },
  ];
}
