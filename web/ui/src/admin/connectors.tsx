// Connectors, remote MCP servers (docs/connectors.md): /api/admin/connectors. List, add (URL,
// label, audience, auth kind and its secret — write-only, stored encrypted, never shown again),
// edit (the same form; an empty secret keeps the stored one; enabled or not), delete, list the
// tools again from the server, and set each tool's mode (enabled, disabled, ask).
import { useState } from 'preact/hooks';
import type {
  ConnectorAudience,
  ConnectorAuthKind,
  ConnectorTool,
  ConnectorToolMode,
  ConnectorView,
} from '../../../admin-api.js';
import { api } from '../api.js';
import {
  Checkbox,
  Clip,
  Field,
  hintFor,
  Section,
  Select,
  Status,
  Table,
  useActions,
  useLoad,
  type Actions,
  type Column,
} from './common.js';
import { Form, NameCell, Page, PageLoading, RowActions, RowButton, SubmitOrCancel } from './forms.js';

const BASE = '/api/admin/connectors';
const AUTH: [ConnectorAuthKind, string][] = [
  ['none', 'None'],
  ['bearer', 'Static secret as a bearer token'],
  ['header', 'Static secret in a header'],
  ['oauth', 'OAuth, each user connects'],
];
const AUDIENCE: [ConnectorAudience['kind'], string][] = [
  ['everyone', 'Everyone'],
  ['teams', 'Teams (by id)'],
  ['users', 'Users (by id)'],
];
const MODES: [ConnectorToolMode, string][] = [
  ['enabled', 'Enabled'],
  ['ask', 'Ask the user each call'],
  ['disabled', 'Disabled'],
];

interface Draft {
  id: string;
  label: string;
  url: string;
  audience: ConnectorAudience['kind'];
  ids: string;
  auth_kind: ConnectorAuthKind;
  auth_header_name: string;
  auth_secret: string;
  enabled: boolean;
}
const EMPTY: Draft = {
  id: '',
  label: '',
  url: '',
  audience: 'everyone',
  ids: '',
  auth_kind: 'none',
  auth_header_name: '',
  auth_secret: '',
  enabled: true,
};

/** The form filled from a connector to edit (the secret is never sent back: empty keeps it). */
function draftOf(c: ConnectorView | null): Draft {
  if (!c) return EMPTY;
  const ids =
    c.audience.kind === 'teams' ? c.audience.team_ids : c.audience.kind === 'users' ? c.audience.user_ids : [];
  return {
    id: c.id,
    label: c.label,
    url: c.url,
    audience: c.audience.kind,
    ids: ids.join(', '),
    auth_kind: c.auth_kind,
    auth_header_name: c.auth_header_name ?? '',
    auth_secret: '',
    enabled: c.enabled,
  };
}

const hasStaticSecret = (c: ConnectorView | null) =>
  !!c?.has_secret && (c.auth_kind === 'bearer' || c.auth_kind === 'header');

/**
 * The POST body of the form (the PATCH body when editing: no id, and whether it is enabled): ids
 * from a comma-separated list; the secret only for the static kinds, and only when typed.
 */
function bodyOf(f: Draft, editing: boolean): Record<string, unknown> {
  const ids = f.ids
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  const audience =
    f.audience === 'teams'
      ? { kind: 'teams', team_ids: ids }
      : f.audience === 'users'
        ? { kind: 'users', user_ids: ids }
        : { kind: 'everyone' };
  const b: Record<string, unknown> = {
    ...(editing ? { enabled: f.enabled } : { id: f.id.trim() }),
    label: f.label.trim(),
    url: f.url.trim(),
    audience,
    auth_kind: f.auth_kind,
  };
  if (f.auth_kind === 'header') b.auth_header_name = f.auth_header_name.trim();
  if ((f.auth_kind === 'header' || f.auth_kind === 'bearer') && f.auth_secret) b.auth_secret = f.auth_secret;
  return b;
}

const audienceText = (a: ConnectorAudience) =>
  a.kind === 'everyone'
    ? 'everyone'
    : a.kind === 'teams'
      ? `teams ${a.team_ids.join(', ')}`
      : `users ${a.user_ids.join(', ')}`;

export function ConnectorsPage() {
  const status = useActions();
  const formStatus = useActions();
  const [data, failed, reload] = useLoad(() => api<{ connectors: ConnectorView[] }>('GET', BASE));
  const [editing, setEditing] = useState<ConnectorView | null>(null);
  const page = {
    cls: 'admin connectors',
    title: 'Connectors',
    intro:
      'Remote MCP servers the agent may use (a ticket system, a wiki, an internal API). The sandbox never holds their credentials: the host adds them to each call. A tool set to ask shows the user a card with the exact arguments before each call.',
  };
  if (failed || !data) return <PageLoading {...page} failed={failed} />;
  const run = (key: string, fn: () => Promise<string>) =>
    status.run(key, async () => {
      const msg = await fn();
      await reload();
      status.ok(msg);
    });
  const remove = (c: ConnectorView) =>
    run(`delete-${c.id}`, async () => {
      if (!confirm(`Delete ${c.label}? Sessions lose its tools from their next call.`)) return `${c.label} kept.`;
      await api('DELETE', `${BASE}/${encodeURIComponent(c.id)}`);
      if (editing?.id === c.id) setEditing(null);
      return `${c.label} deleted.`;
    });
  const edit = (c: ConnectorView) => {
    setEditing(c);
    formStatus.setNotice(null);
    // The form remounts with the connector's values; its first field takes the focus.
    requestAnimationFrame(() => document.getElementById('conn-label')?.focus());
  };
  const refresh = (c: ConnectorView) =>
    run(`refresh-${c.id}`, async () => {
      const out = await api<{ connector: ConnectorView; skipped: unknown[] }>(
        'POST',
        `${BASE}/${encodeURIComponent(c.id)}/refresh`,
      );
      return `${c.label}: ${out.connector.tools.length} tool(s) listed${out.skipped.length ? `, ${out.skipped.length} left out` : ''}.`;
    });
  const setMode = (c: ConnectorView, t: ConnectorTool, mode: string) =>
    run(`mode-${c.id}-${t.name}`, async () => {
      await api('PATCH', `${BASE}/${encodeURIComponent(c.id)}/tools`, { modes: { [t.name]: mode } });
      return `${c.label} ${t.name}: ${mode}.`;
    });
  return (
    <Page {...page}>
      <Section title="Connected servers">
        <Status id="conn-status" notice={status.notice} />
        <ConnectorsTable
          connectors={data.connectors}
          busy={status.busy}
          onEdit={edit}
          onDelete={(c) => void remove(c)}
          onRefresh={(c) => void refresh(c)}
        />
      </Section>
      {data.connectors.map((c) => (
        <Section key={c.id} title={`Tools of ${c.label}`} headingId={`conn-tools-${c.id}`}>
          <ToolsTable c={c} onMode={(t, m) => void setMode(c, t, m)} />
        </Section>
      ))}
      <Section title={editing ? `Edit ${editing.label}` : 'Add a connector'} headingId="conn-form-heading">
        <ConnectorForm
          key={editing?.id ?? 'new'}
          editing={editing}
          status={formStatus}
          reload={reload}
          done={() => setEditing(null)}
        />
      </Section>
    </Page>
  );
}

function ConnectorsTable(p: {
  connectors: ConnectorView[];
  busy: string | null;
  onEdit(c: ConnectorView): void;
  onDelete(c: ConnectorView): void;
  onRefresh(c: ConnectorView): void;
}) {
  const cols: Column<ConnectorView>[] = [
    {
      title: 'Connector',
      render: (c) => (
        <NameCell name={c.label} warning={!c.enabled && 'disabled'}>
          <code>{c.id}</code> · {c.transport === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}
        </NameCell>
      ),
    },
    { title: 'URL', render: (c) => <Clip text={c.url} /> },
    { title: 'Who', render: (c) => audienceText(c.audience) },
    {
      title: 'Auth',
      render: (c) =>
        `${c.auth_kind}${c.auth_kind === 'bearer' || c.auth_kind === 'header' ? (c.has_secret ? ' (secret set)' : ' (no secret)') : ''}`,
    },
    { title: 'Tools', render: (c) => String(c.tools.length) },
    {
      title: 'Actions',
      render: (c) => (
        <RowActions>
          <RowButton text="Edit" label={`Edit ${c.label}`} onClick={() => p.onEdit(c)} />
          <RowButton
            text="Refresh tools"
            label={`Refresh tools of ${c.label}`}
            disabled={p.busy === `refresh-${c.id}`}
            onClick={() => p.onRefresh(c)}
          />
          <RowButton
            text="Delete"
            cls="danger"
            label={`Delete ${c.label}`}
            disabled={p.busy === `delete-${c.id}`}
            onClick={() => p.onDelete(c)}
          />
        </RowActions>
      ),
    },
  ];
  return (
    <Table id="connectors-table" rows={p.connectors} rowKey={(c) => c.id} empty="No connectors yet." cols={cols} />
  );
}

function ToolsTable({ c, onMode }: { c: ConnectorView; onMode(t: ConnectorTool, mode: string): void }) {
  const cols: Column<ConnectorTool>[] = [
    { title: 'Tool', render: (t) => <code>{`${c.id}__${t.name}`}</code> },
    { title: 'Description', render: (t) => <Clip text={t.description || '—'} /> },
    {
      title: 'Mode',
      render: (t) => (
        <Select
          aria-label={`Mode of ${c.label} ${t.name}`}
          data-tool={t.name}
          options={MODES}
          value={t.mode}
          onChange={(m) => onMode(t, m)}
        />
      ),
    },
  ];
  return (
    <Table
      id={`connector-tools-${c.id}`}
      rows={c.tools}
      rowKey={(t) => t.name}
      empty={
        c.auth_kind === 'oauth' ? 'No tools listed yet: connect it in Settings, then refresh its tools.' : 'No tools.'
      }
      cols={cols}
    />
  );
}

function ConnectorForm({
  editing,
  status,
  reload,
  done,
}: {
  editing: ConnectorView | null;
  status: Actions;
  reload(): Promise<void>;
  done(): void;
}) {
  const [form, setForm] = useState<Draft>(() => draftOf(editing));
  const set = (k: keyof Draft) => (v: string | boolean) => setForm((f) => ({ ...f, [k]: v }));
  const text = (k: keyof Draft) => (e: Event) => set(k)((e.currentTarget as HTMLInputElement).value);
  const save = () =>
    status.run('save', async () => {
      if (editing) {
        const c = await api<ConnectorView>('PATCH', `${BASE}/${encodeURIComponent(editing.id)}`, bodyOf(form, true));
        done();
        await reload();
        status.ok(`${c.label} saved${c.enabled ? '' : ' (disabled: its tools are gone from the next call)'}.`);
        return;
      }
      const out = await api<{ connector: ConnectorView; skipped: unknown[] }>('POST', BASE, bodyOf(form, false));
      setForm(EMPTY);
      await reload();
      status.ok(`${out.connector.label} added with ${out.connector.tools.length} tool(s).`);
    });
  return (
    <Form id="connector-form" onSubmit={save}>
      <Field
        id="conn-id"
        label="Id"
        hint="2–32 lower-case letters, digits or single underscores; it prefixes the tool names (acme → acme__create_ticket)."
      >
        <input
          id="conn-id"
          value={form.id}
          onInput={text('id')}
          disabled={!!editing}
          required
          aria-describedby={hintFor('conn-id')}
        />
      </Field>
      <Field id="conn-label" label="Label (what users see)">
        <input id="conn-label" value={form.label} onInput={text('label')} required />
      </Field>
      <Field id="conn-url" label="Server URL" hint="The MCP endpoint, https.">
        <input
          id="conn-url"
          type="url"
          value={form.url}
          onInput={text('url')}
          required
          aria-describedby={hintFor('conn-url')}
        />
      </Field>
      <Field id="conn-audience" label="Who may use it">
        <Select id="conn-audience" options={AUDIENCE} value={form.audience} onChange={set('audience')} />
      </Field>
      {form.audience !== 'everyone' ? (
        <Field id="conn-ids" label={form.audience === 'teams' ? 'Team ids' : 'User ids'} hint="Comma-separated.">
          <input id="conn-ids" value={form.ids} onInput={text('ids')} required aria-describedby={hintFor('conn-ids')} />
        </Field>
      ) : null}
      <ConnectorAuthFields form={form} set={set} text={text} keeps={hasStaticSecret(editing)} />
      {editing ? (
        <Checkbox
          id="conn-enabled"
          label="Enabled (off: its tools are gone from every chat until it is on again)"
          checked={form.enabled}
          onChange={set('enabled')}
        />
      ) : null}
      <Status id="conn-form-status" notice={status.notice} />
      <SubmitOrCancel
        id="conn-save"
        text={editing ? 'Save changes' : 'Add connector'}
        disabled={status.busy === 'save'}
        editing={!!editing}
        onCancel={done}
      />
    </Form>
  );
}

/**
 * How the gateway authenticates to the server: none, OAuth per user, a bearer token or a header
 * (its name); a static secret is write-only, and when editing one that has it (`keeps`) an empty
 * field keeps it.
 */
function ConnectorAuthFields({
  form,
  set,
  text,
  keeps,
}: {
  form: Draft;
  set(k: keyof Draft): (v: string | boolean) => void;
  text(k: keyof Draft): (e: Event) => void;
  keeps: boolean;
}) {
  const secret = form.auth_kind === 'bearer' || form.auth_kind === 'header';
  return (
    <>
      <Field id="conn-auth" label="Authentication">
        <Select id="conn-auth" options={AUTH} value={form.auth_kind} onChange={set('auth_kind')} />
      </Field>
      {form.auth_kind === 'header' ? (
        <Field id="conn-header" label="Header name">
          <input id="conn-header" value={form.auth_header_name} onInput={text('auth_header_name')} required />
        </Field>
      ) : null}
      {secret ? (
        <Field
          id="conn-secret"
          label="Secret"
          hint={
            keeps
              ? 'Write-only: leave empty to keep the stored secret.'
              : 'Write-only: stored encrypted, never shown again.'
          }
        >
          <input
            id="conn-secret"
            type="password"
            autocomplete="off"
            value={form.auth_secret}
            onInput={text('auth_secret')}
            required={!keeps}
            aria-describedby={hintFor('conn-secret')}
          />
        </Field>
      ) : null}
    </>
  );
}
