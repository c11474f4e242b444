// Connectors, remote MCP servers (docs/connectors.md): /api/admin/connectors. List, add (URL,
// label, audience, auth kind and its secret — write-only, stored encrypted, never shown again),
// delete, list the tools again from the server, and set each tool's mode (enabled, disabled, ask).
import { useState } from 'preact/hooks';
import type { ConnectorAudience, ConnectorAuthKind, ConnectorTool, ConnectorToolMode, ConnectorView } from '../../../admin-api.js';
import { api } from '../api.js';
import { Clip, Field, hintFor, Section, Select, Status, Table, useActions, useLoad, type Actions, type Column } from './common.js';
import { Form, NameCell, Page, PageLoading, RowActions, RowButton, Submit } from './forms.js';

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
}
const EMPTY: Draft = { id: '', label: '', url: '', audience: 'everyone', ids: '', auth_kind: 'none', auth_header_name: '', auth_secret: '' };

/** The POST body of the form: ids from a comma-separated list; the secret only for the static kinds. */
function bodyOf(f: Draft): Record<string, unknown> {
  const ids = f.ids
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  const audience = f.audience === 'teams' ? { kind: 'teams', team_ids: ids } : f.audience === 'users' ? { kind: 'users', user_ids: ids } : { kind: 'everyone' };
  const b: Record<string, unknown> = { id: f.id.trim(), label: f.label.trim(), url: f.url.trim(), audience, auth_kind: f.auth_kind };
  if (f.auth_kind === 'header') b.auth_header_name = f.auth_header_name.trim();
  if ((f.auth_kind === 'header' || f.auth_kind === 'bearer') && f.auth_secret) b.auth_secret = f.auth_secret;
  return b;
}

const audienceText = (a: ConnectorAudience) => (a.kind === 'everyone' ? 'everyone' : a.kind === 'teams' ? `teams ${a.team_ids.join(', ')}` : `users ${a.user_ids.join(', ')}`);

export function ConnectorsPage() {
  const status = useActions();
  const formStatus = useActions();
  const [data, failed, reload] = useLoad(() => api<{ connectors: ConnectorView[] }>('GET', BASE));
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
      return `${c.label} deleted.`;
    });
  const refresh = (c: ConnectorView) =>
    run(`refresh-${c.id}`, async () => {
      const out = await api<{ connector: ConnectorView; skipped: unknown[] }>('POST', `${BASE}/${encodeURIComponent(c.id)}/refresh`);
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
        <ConnectorsTable connectors={data.connectors} busy={status.busy} onDelete={(c) => void remove(c)} onRefresh={(c) => void refresh(c)} />
      </Section>
      {data.connectors.map((c) => (
        <Section key={c.id} title={`Tools of ${c.label}`} headingId={`conn-tools-${c.id}`}>
          <ToolsTable c={c} onMode={(t, m) => void setMode(c, t, m)} />
        </Section>
      ))}
      <Section title="Add a connector" headingId="conn-form-heading">
        <ConnectorForm status={formStatus} reload={reload} />
      </Section>
    </Page>
  );
}

function ConnectorsTable(p: { connectors: ConnectorView[]; busy: string | null; onDelete(c: ConnectorView): void; onRefresh(c: ConnectorView): void }) {
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
    { title: 'Auth', render: (c) => `${c.auth_kind}${c.auth_kind === 'bearer' || c.auth_kind === 'header' ? (c.has_secret ? ' (secret set)' : ' (no secret)') : ''}` },
    { title: 'Tools', render: (c) => String(c.tools.length) },
    {
      title: 'Actions',
      render: (c) => (
        <RowActions>
          <RowButton text="Refresh tools" label={`Refresh tools of ${c.label}`} disabled={p.busy === `refresh-${c.id}`} onClick={() => p.onRefresh(c)} />
          <RowButton text="Delete" cls="danger" label={`Delete ${c.label}`} disabled={p.busy === `delete-${c.id}`} onClick={() => p.onDelete(c)} />
        </RowActions>
      ),
    },
  ];
  return <Table id="connectors-table" rows={p.connectors} rowKey={(c) => c.id} empty="No connectors yet." cols={cols} />;
}

function ToolsTable({ c, onMode }: { c: ConnectorView; onMode(t: ConnectorTool, mode: string): void }) {
  const cols: Column<ConnectorTool>[] = [
    { title: 'Tool', render: (t) => <code>{`${c.id}__${t.name}`}</code> },
    { title: 'Description', render: (t) => <Clip text={t.description || '—'} /> },
    {
      title: 'Mode',
      render: (t) => <Select aria-label={`Mode of ${c.label} ${t.name}`} data-tool={t.name} options={MODES} value={t.mode} onChange={(m) => onMode(t, m)} />,
    },
  ];
  return <Table id={`connector-tools-${c.id}`} rows={c.tools} rowKey={(t) => t.name} empty={c.auth_kind === 'oauth' ? 'No tools listed yet: connect it in Settings, then refresh its tools.' : 'No tools.'} cols={cols} />;
}

function ConnectorForm({ status, reload }: { status: Actions; reload(): Promise<void> }) {
  const [form, setForm] = useState<Draft>(EMPTY);
  const set = (k: keyof Draft) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const text = (k: keyof Draft) => (e: Event) => set(k)((e.currentTarget as HTMLInputElement).value);
  const save = () =>
    status.run('save', async () => {
      const out = await api<{ connector: ConnectorView; skipped: unknown[] }>('POST', BASE, bodyOf(form));
      setForm(EMPTY);
      await reload();
      status.ok(`${out.connector.label} added with ${out.connector.tools.length} tool(s).`);
    });
  const secret = form.auth_kind === 'bearer' || form.auth_kind === 'header';
  return (
    <Form id="connector-form" onSubmit={save}>
      <Field id="conn-id" label="Id" hint="2–32 lower-case letters, digits or single underscores; it prefixes the tool names (acme → acme__create_ticket).">
        <input id="conn-id" value={form.id} onInput={text('id')} required aria-describedby={hintFor('conn-id')} />
      </Field>
      <Field id="conn-label" label="Label (what users see)">
        <input id="conn-label" value={form.label} onInput={text('label')} required />
      </Field>
      <Field id="conn-url" label="Server URL" hint="The MCP endpoint, https.">
        <input id="conn-url" type="url" value={form.url} onInput={text('url')} required aria-describedby={hintFor('conn-url')} />
      </Field>
      <Field id="conn-audience" label="Who may use it">
        <Select id="conn-audience" options={AUDIENCE} value={form.audience} onChange={set('audience')} />
      </Field>
      {form.audience !== 'everyone' ? (
        <Field id="conn-ids" label={form.audience === 'teams' ? 'Team ids' : 'User ids'} hint="Comma-separated.">
          <input id="conn-ids" value={form.ids} onInput={text('ids')} required aria-describedby={hintFor('conn-ids')} />
        </Field>
      ) : null}
      <Field id="conn-auth" label="Authentication">
        <Select id="conn-auth" options={AUTH} value={form.auth_kind} onChange={set('auth_kind')} />
      </Field>
      {form.auth_kind === 'header' ? (
        <Field id="conn-header" label="Header name">
          <input id="conn-header" value={form.auth_header_name} onInput={text('auth_header_name')} required />
        </Field>
      ) : null}
      {secret ? (
        <Field id="conn-secret" label="Secret" hint="Write-only: stored encrypted, never shown again.">
          <input id="conn-secret" type="password" autocomplete="off" value={form.auth_secret} onInput={text('auth_secret')} required aria-describedby={hintFor('conn-secret')} />
        </Field>
      ) : null}
      <Status id="conn-form-status" notice={status.notice} />
      <Submit id="conn-save" text="Add connector" disabled={status.busy === 'save'} />
    </Form>
  );
}
