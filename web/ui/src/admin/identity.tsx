// SSO connection (Google) and directory sync: /api/identity/connections and /directory-sync
// (docs/identity.md). Secrets are write-only: the fields are always empty, a blank one is not sent.
import { useEffect, useRef, useState } from 'preact/hooks';
import type {
  ConnectionList,
  ConnectionRequest,
  ConnectionView,
  SyncJobStarted,
  SyncJobState,
  SyncJobView,
} from '../../../admin-api.js';
import { api, ApiError } from '../api.js';
import { ErrorText } from '../error-text.js';
import {
  Checkbox,
  Field,
  fmtTime,
  hintFor,
  Section,
  Status,
  Table,
  useActions,
  useLoad,
  type Actions,
} from './common.js';
import { Form, Loaded, Page, Submit } from './forms.js';

export function IdentityPage() {
  const [data, failed, reload] = useLoad(() => api<ConnectionList>('GET', '/api/identity/connections'));
  const conn = data?.connections.find((c) => c.provider === 'google') ?? null;
  // The form's status outlives the form: created, it is built again for the stored connection.
  const status = useActions();
  return (
    <Page
      cls="admin identity"
      title="Single sign-on and directory sync"
      intro='The Google connection used for "Sign in with Google" and for reading users and groups from the directory.'
    >
      <Loaded failed={failed} loading={!data}>
        <ConnectionForm key={conn?.id ?? 'new'} conn={conn} reload={reload} status={status} />
        <SyncPanel conn={conn} />
      </Loaded>
    </Page>
  );
}

/** The form's values; the secrets are blank unless typed (a blank one is kept). */
interface ConnectionFormState {
  display_name: string;
  issuer: string;
  client_id: string;
  client_secret: string;
  service_account_json: string;
  delegated_admin_email: string;
  customer: string;
  is_active: boolean;
}

function initialForm(conn: ConnectionView | null): ConnectionFormState {
  return {
    display_name: conn?.display_name ?? 'Google',
    issuer: conn?.issuer ?? 'https://accounts.google.com',
    client_id: conn?.client_id ?? '',
    client_secret: '',
    service_account_json: '',
    delegated_admin_email: conn?.delegated_admin_email ?? '',
    customer: conn?.customer ?? 'my_customer',
    is_active: conn?.is_active ?? true,
  };
}

/** The connection's fields; secrets are write-only (the stored state shows as a placeholder). */
function ConnectionFields({
  conn,
  f,
  setF,
}: {
  conn: ConnectionView | null;
  f: ConnectionFormState;
  setF(f: ConnectionFormState): void;
}) {
  const set = (k: keyof typeof f) => (e: { currentTarget: { value: string } }) =>
    setF({ ...f, [k]: e.currentTarget.value });
  const hinted = (id: string) => ({ id, 'aria-describedby': hintFor(id) });
  return (
    <>
      <Field id="conn-display-name" label="Display name">
        <input
          type="text"
          id="conn-display-name"
          maxLength={100}
          value={f.display_name}
          onInput={set('display_name')}
        />
      </Field>
      <Field id="conn-issuer" label="Issuer URL" hint="OIDC discovery base, e.g. https://accounts.google.com">
        <input type="url" {...hinted('conn-issuer')} required value={f.issuer} onInput={set('issuer')} />
      </Field>
      <Field id="conn-client-id" label="Client ID">
        <input
          type="text"
          id="conn-client-id"
          required
          autocomplete="off"
          value={f.client_id}
          onInput={set('client_id')}
        />
      </Field>
      <Field id="conn-client-secret" label="Client secret (write-only)" hint="Never shown again once saved.">
        <input
          type="password"
          {...hinted('conn-client-secret')}
          autocomplete="new-password"
          placeholder={conn?.has_client_secret ? 'stored; leave blank to keep' : ''}
          value={f.client_secret}
          onInput={set('client_secret')}
        />
      </Field>
      <Field id="conn-service-account" label="Service-account key JSON (write-only)" hint="Needed for directory sync.">
        <textarea
          {...hinted('conn-service-account')}
          rows={4}
          spellcheck={false}
          placeholder={conn?.has_service_account ? 'stored; leave blank to keep' : '{"type":"service_account", …}'}
          value={f.service_account_json}
          onInput={set('service_account_json')}
        />
      </Field>
      <Field id="conn-admin-email" label="Delegated admin e-mail" hint="A Workspace admin the service account acts as.">
        <input
          type="email"
          {...hinted('conn-admin-email')}
          autocomplete="off"
          value={f.delegated_admin_email}
          onInput={set('delegated_admin_email')}
        />
      </Field>
      <Field id="conn-customer" label="Customer">
        <input type="text" id="conn-customer" value={f.customer} onInput={set('customer')} />
      </Field>
      <Checkbox
        id="conn-active"
        label='Active (offer "Sign in with …" on the login page)'
        checked={f.is_active}
        onChange={(v) => setF({ ...f, is_active: v })}
      />
    </>
  );
}

function ConnectionForm({
  conn,
  reload,
  status,
}: {
  conn: ConnectionView | null;
  reload(): Promise<void>;
  status: Actions;
}) {
  const [f, setF] = useState<ConnectionFormState>(() => initialForm(conn));
  const save = () =>
    status.run('save', async () => {
      const body: ConnectionRequest = {
        display_name: f.display_name.trim() || 'Google',
        issuer: f.issuer.trim(),
        client_id: f.client_id.trim(),
        customer: f.customer.trim() || 'my_customer',
        delegated_admin_email: f.delegated_admin_email.trim() || null,
        is_active: f.is_active,
      };
      if (f.client_secret) body.client_secret = f.client_secret;
      if (f.service_account_json.trim()) body.service_account_json = f.service_account_json.trim();
      const saved = conn
        ? await api<ConnectionView>('PATCH', `/api/identity/connections/${conn.id}`, body)
        : await api<ConnectionView>('POST', '/api/identity/connections', { provider: 'google', ...body });
      setF({ ...f, client_secret: '', service_account_json: '' });
      await reload();
      status.ok(`Connection ${conn ? 'saved' : 'created'} (id ${saved.id}).`);
    });
  const remove = () =>
    status.run('delete', async () => {
      if (!conn || !confirm('Delete the Google connection? Users can no longer sign in with it.')) return;
      await api('DELETE', `/api/identity/connections/${conn.id}`);
      await reload();
    });
  const summary = conn
    ? `Client secret: ${conn.has_client_secret ? 'stored' : 'not set'} · Service account: ${conn.has_service_account ? `stored (${conn.service_account_email || 'unknown'})` : 'not set'} · Group sync: ${conn.has_group_sync ? 'configured' : 'not configured'}`
    : 'No connection yet.';
  return (
    <Section title="SSO connection (Google)">
      <p class="muted" id="conn-summary">
        {summary}
      </p>
      <Form id="conn-form" class="grid2" onSubmit={save}>
        <ConnectionFields conn={conn} f={f} setF={setF} />
        <div class="actions">
          <Submit
            id="conn-save"
            text={conn ? 'Save connection' : 'Create connection'}
            disabled={status.busy === 'save'}
          />
        </div>
      </Form>
      <Status id="conn-status" notice={status.notice} />
      {conn ? (
        <div class="actions">
          <button
            type="button"
            class="danger"
            id="conn-delete"
            disabled={status.busy === 'delete'}
            onClick={() => void remove()}
          >
            Delete connection
          </button>
        </div>
      ) : null}
    </Section>
  );
}

/** What a sync changed (the result's counts of changes); everything else in the result is how it went. */
const CHANGE_KEYS = [
  'users_created',
  'users_updated',
  'users_linked',
  'users_deactivated',
  'users_reactivated',
  'groups_created',
  'groups_updated',
  'groups_deleted',
  'memberships_added',
  'memberships_removed',
  'teams_updated',
  'team_members_added',
  'team_members_removed',
  'policies_rewritten',
  'sessions_ended',
];

/** The changes of a result that are not zero, as [what, count]. */
export function changesOf(result: Record<string, unknown>): [string, number][] {
  return CHANGE_KEYS.flatMap((k): [string, number][] =>
    typeof result[k] === 'number' && result[k] !== 0 ? [[k.replace(/_/g, ' '), result[k] as number]] : [],
  );
}

/** One line for the status area once a job started from this page has ended. */
function outcome(job: SyncJobView): string {
  if (job.status !== 'succeeded')
    return `Sync job ${job.id} ${job.status}${job.error?.message ? `: ${job.error.message}` : '.'}`;
  const changes = job.result ? changesOf(job.result) : [];
  return changes.length
    ? `Sync job ${job.id} succeeded: ${changes.map(([k, v]) => `${v} ${k}`).join(', ')}.`
    : `Sync job ${job.id} succeeded: nothing changed.`;
}

const running = (job: SyncJobView | null) => job?.status === 'running' || job?.status === 'pending';
const show = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
const num = (v: unknown) => (typeof v === 'number' ? v : 0);

/** Start a sync; while a job runs it is read every 0.7 s (only while the page is shown). */
function SyncPanel({ conn }: { conn: ConnectionView | null }) {
  const status = useActions();
  const [job, setJob] = useState<SyncJobView | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout>>();
  const live = useRef(true);
  /** The job this page started, until its outcome is shown. */
  const started = useRef<number | null>(null);
  const poll = async () => {
    timer.current = undefined;
    try {
      const r = await api<SyncJobState>('GET', '/api/identity/directory-sync?provider=google');
      if (!live.current) return;
      setJob(r.job);
      if (running(r.job)) timer.current = setTimeout(() => void poll(), 700);
      else if (r.job && r.job.id === started.current) {
        // "Sync job N started." would stay after the job ended: it becomes the outcome.
        started.current = null;
        status.ok(outcome(r.job));
      }
    } catch (e) {
      if (!live.current) return;
      if (e instanceof ApiError && e.status === 404) setJob(null);
      else status.setNotice({ kind: 'error', error: e });
    }
  };
  useEffect(() => {
    live.current = true;
    if (conn) void poll();
    return () => {
      live.current = false;
      clearTimeout(timer.current);
    };
  }, [conn?.id]);
  if (!conn) {
    return (
      <Section title="Directory sync">
        <p class="muted">Create the connection first.</p>
      </Section>
    );
  }
  const start = () =>
    status.run('start', async () => {
      const r = await api<SyncJobStarted>('POST', '/api/identity/directory-sync', { provider: 'google' });
      status.ok(r.created ? `Sync job ${r.job.id} started.` : `A sync is already running (job ${r.job.id}).`);
      started.current = r.job.id;
      setJob(r.job);
      clearTimeout(timer.current);
      timer.current = setTimeout(() => void poll(), 300);
    });
  return (
    <Section title="Directory sync">
      {conn.has_group_sync ? null : (
        <p class="muted">Group sync needs the service-account key and the delegated admin e-mail.</p>
      )}
      <div class="actions">
        <button
          type="button"
          id="sync-start"
          disabled={status.busy === 'start' || running(job)}
          onClick={() => void start()}
        >
          Start directory sync
        </button>
      </div>
      <Status id="sync-status" notice={status.notice} />
      <div id="sync-job" aria-live="polite">
        {job ? <JobView job={job} /> : <p class="muted">No sync has run yet.</p>}
      </div>
    </Section>
  );
}

function JobView({ job }: { job: SyncJobView }) {
  const s = job.status;
  return (
    <>
      <p>
        Status:{' '}
        <strong id="sync-job-status" class={`job-${s}`}>
          {s}
        </strong>
        {` · job ${job.id} · ${job.trigger}`}
        {job.started_at ? ` · started ${fmtTime(job.started_at)}` : ''}
        {job.finished_at ? ` · finished ${fmtTime(job.finished_at)}` : ''}
      </p>
      {job.progress && running(job) ? (
        <p class="muted" id="sync-progress">
          Progress:{' '}
          {Object.entries(job.progress)
            .map(([k, v]) => `${k} ${show(v)}`)
            .join(', ')}
        </p>
      ) : null}
      {job.error ? (
        <div class="banner error" role="alert" id="sync-error">
          <strong>
            <ErrorText
              code={job.error.code ?? undefined}
              message={job.error.message || 'the directory sync failed'}
              extra={
                job.error.upstream_status
                  ? ` (upstream HTTP ${job.error.upstream_status}${job.error.reason ? `, ${job.error.reason}` : ''})`
                  : null
              }
            />
          </strong>
        </div>
      ) : null}
      {job.result ? <SyncResult result={job.result} /> : null}
    </>
  );
}

/** The last result: only what changed (a table), or one line when nothing did; warnings; one line of how it went. */
function SyncResult({ result }: { result: Record<string, unknown> }) {
  const changes = changesOf(result);
  const fetched =
    result.fetched && typeof result.fetched === 'object' ? (result.fetched as Record<string, unknown>) : null;
  const warnings = Array.isArray(result.warnings) ? (result.warnings as { message?: string }[]) : [];
  const how = [
    fetched
      ? `read ${Object.entries(fetched)
          .map(([k, v]) => `${show(v)} ${k}`)
          .join(', ')}`
      : null,
    `${num(result.requests)} requests`,
    result.retries ? `${num(result.retries)} retries` : null,
    `${num(result.rows_written)} rows written`,
    `${num(result.duration_ms)} ms`,
  ].filter(Boolean);
  return (
    <>
      <h3>Last result</h3>
      {changes.length ? (
        <Table
          id="sync-result"
          rows={changes}
          rowKey={(r) => r[0]}
          cols={[
            { title: 'What changed', render: (r) => r[0] },
            { title: 'Count', render: (r) => String(r[1]) },
          ]}
        />
      ) : (
        <p id="sync-result">Nothing changed: Airlock already matched the directory.</p>
      )}
      {result.kept_last_superuser ? <p>The last superuser was kept active.</p> : null}
      {warnings.length ? (
        <ul id="sync-warnings">
          {warnings.map((w, i) => (
            <li key={i}>{w.message ?? show(w)}</li>
          ))}
        </ul>
      ) : null}
      <p class="muted small" id="sync-stats">
        {how.join(' · ')}
      </p>
    </>
  );
}
