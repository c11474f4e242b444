// The models on offer for chats (docs/chat.md "A model per chat"): /api/admin/chat-models. List,
// add, edit (the key is write-only: the page never gets it, an empty field keeps it), disable and
// delete (not the default; a deleted model's chats fall back to the default).
import { useState } from 'preact/hooks';
import type { ChatModelAdminInput, ChatModelAdminList, ChatModelAdminView } from '../../../admin-api.js';
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

const BASE = '/api/admin/chat-models';
const PROVIDERS: [string, string][] = [
  ['openai', 'OpenAI-compatible (Chat Completions)'],
  ['anthropic', 'Anthropic (Messages)'],
  ['demo', 'Offline demo model'],
];

interface Form {
  id: string;
  label: string;
  provider: ChatModelAdminInput['provider'];
  model: string;
  base_url: string;
  api_key: string;
  remove_key: boolean;
  context_tokens: string;
  images: boolean;
}
const EMPTY: Form = {
  id: '',
  label: '',
  provider: 'openai',
  model: '',
  base_url: '',
  api_key: '',
  remove_key: false,
  context_tokens: '100000',
  images: false,
};

/** The request body of the form: on an edit, an empty key field keeps the key. */
function bodyOf(f: Form, editing: boolean): Partial<ChatModelAdminInput> {
  const b: Partial<ChatModelAdminInput> = {
    label: f.label.trim(),
    provider: f.provider,
    model: f.provider === 'demo' ? 'demo' : f.model.trim(),
    base_url: f.base_url.trim() || null,
    context_tokens: Number(f.context_tokens),
    images: f.images,
  };
  if (!editing) b.id = f.id.trim();
  if (f.remove_key) b.api_key = null;
  else if (f.api_key) b.api_key = f.api_key;
  return b;
}

export function ChatModelsPage() {
  const status = useActions();
  const formStatus = useActions();
  const [data, failed, reload] = useLoad(() => api<ChatModelAdminList>('GET', BASE));
  const [form, setForm] = useState<Form>(EMPTY);
  const [editing, setEditing] = useState<string | null>(null);

  const page = {
    cls: 'admin chat-models',
    title: 'Chat models',
    intro:
      'The models people can pick for a chat. The default comes from AIRLOCK_MODEL_* and follows it until you change it here. Keys are stored encrypted and never shown again.',
  };
  if (failed || !data) return <PageLoading {...page} failed={failed} />;
  const edit = (m: ChatModelAdminView) => {
    setEditing(m.id);
    setForm({
      id: m.id,
      label: m.label,
      provider: m.provider,
      model: m.model,
      base_url: m.base_url ?? '',
      api_key: '',
      remove_key: false,
      context_tokens: String(m.context_tokens),
      images: m.images,
    });
    formStatus.setNotice(null);
    document.getElementById('cm-label')?.focus();
  };
  const toggle = (m: ChatModelAdminView) =>
    status.run(`toggle-${m.id}`, async () => {
      await api('PATCH', `${BASE}/${encodeURIComponent(m.id)}`, { enabled: !m.enabled });
      await reload();
      status.ok(`${m.label} ${m.enabled ? 'disabled: its chats run with the default model' : 'enabled'}.`);
    });
  const remove = (m: ChatModelAdminView) =>
    status.run(`delete-${m.id}`, async () => {
      if (!confirm(`Delete ${m.label}? ${m.chats} chat(s) use it; they go on with the default model.`)) return;
      await api('DELETE', `${BASE}/${encodeURIComponent(m.id)}`);
      await reload();
      status.ok(`${m.label} deleted.`);
    });
  const done = () => {
    setForm(EMPTY);
    setEditing(null);
  };
  return (
    <Page {...page}>
      <Section title="Models on offer">
        <Status id="cm-status" notice={status.notice} />
        <ModelsTable
          models={data.models}
          busy={status.busy}
          onEdit={edit}
          onToggle={(m) => void toggle(m)}
          onDelete={(m) => void remove(m)}
        />
      </Section>
      <Section title={editing ? `Edit ${editing}` : 'Add a model'} headingId="cm-form-heading">
        <ModelForm form={form} setForm={setForm} editing={editing} status={formStatus} done={done} reload={reload} />
      </Section>
    </Page>
  );
}

function ModelsTable(p: {
  models: ChatModelAdminView[];
  busy: string | null;
  onEdit(m: ChatModelAdminView): void;
  onToggle(m: ChatModelAdminView): void;
  onDelete(m: ChatModelAdminView): void;
}) {
  const cols: Column<ChatModelAdminView>[] = [
    {
      title: 'Model',
      render: (m) => (
        <NameCell name={m.label} badge={m.default && 'default'} warning={!m.enabled && 'disabled'}>
          <code>{m.id}</code> · {m.provider} · <code>{m.model}</code>
        </NameCell>
      ),
    },
    { title: 'Base URL', render: (m) => <Clip text={m.base_url ?? '—'} /> },
    { title: 'Key', render: (m) => (m.has_key ? 'set' : 'none') },
    { title: 'Context (tokens)', render: (m) => m.context_tokens.toLocaleString() },
    { title: 'Images', render: (m) => (m.images ? 'yes' : 'no') },
    { title: 'Chats', render: (m) => String(m.chats) },
    {
      title: 'Actions',
      render: (m) => (
        <RowActions>
          <RowButton text="Edit" label={`Edit ${m.label}`} onClick={() => p.onEdit(m)} />
          {m.default ? null : (
            <>
              <RowButton
                text={m.enabled ? 'Disable' : 'Enable'}
                label={`${m.enabled ? 'Disable' : 'Enable'} ${m.label}`}
                disabled={p.busy === `toggle-${m.id}`}
                onClick={() => p.onToggle(m)}
              />
              <RowButton
                text="Delete"
                cls="danger"
                label={`Delete ${m.label}`}
                disabled={p.busy === `delete-${m.id}`}
                onClick={() => p.onDelete(m)}
              />
            </>
          )}
        </RowActions>
      ),
    },
  ];
  return <Table id="chat-models-table" rows={p.models} rowKey={(m) => m.id} empty="No models." cols={cols} />;
}

function ModelForm({
  form,
  setForm,
  editing,
  status,
  done,
  reload,
}: {
  form: Form;
  setForm(f: (f: Form) => Form): void;
  editing: string | null;
  status: Actions;
  done(): void;
  reload(): Promise<void>;
}) {
  const save = () =>
    status.run('save', async () => {
      const body = bodyOf(form, !!editing);
      const m = editing
        ? await api<ChatModelAdminView>('PATCH', `${BASE}/${encodeURIComponent(editing)}`, body)
        : await api<ChatModelAdminView>('POST', BASE, body);
      done();
      await reload();
      status.ok(`${m.label} saved.`);
    });
  return (
    <Form id="chat-model-form" onSubmit={save}>
      <ModelFields form={form} setForm={setForm} editing={editing} />
      <Status id="cm-form-status" notice={status.notice} />
      <SubmitOrCancel
        id="cm-save"
        text={editing ? 'Save changes' : 'Add model'}
        disabled={status.busy === 'save'}
        editing={!!editing}
        onCancel={done}
      />
    </Form>
  );
}

type FieldsProps = { form: Form; setForm(f: (f: Form) => Form): void; editing: string | null };

/** Setters of a form field from a value or an input event. */
function fieldSetters(setForm: FieldsProps['setForm']) {
  const set = (k: keyof Form) => (v: string | boolean) => setForm((f) => ({ ...f, [k]: v }));
  return { set, text: (k: keyof Form) => (e: Event) => set(k)((e.currentTarget as HTMLInputElement).value) };
}

/** The model form's fields: what the model is (id, fixed once made; label; provider; model name) and how it is reached. */
function ModelFields(p: FieldsProps) {
  return (
    <>
      <ModelNameFields {...p} />
      <ModelAccessFields {...p} />
    </>
  );
}

function ModelNameFields({ form, setForm, editing }: FieldsProps) {
  const { set, text } = fieldSetters(setForm);
  return (
    <>
      <Field id="cm-id" label="Id" hint="A short name: lower-case letters, digits and dashes. It cannot change.">
        <input
          id="cm-id"
          value={form.id}
          onInput={text('id')}
          disabled={!!editing}
          required
          aria-describedby={hintFor('cm-id')}
        />
      </Field>
      <Field id="cm-label" label="Label (what people see in the picker)">
        <input id="cm-label" value={form.label} onInput={text('label')} required />
      </Field>
      <Field id="cm-provider" label="Provider">
        <Select id="cm-provider" options={PROVIDERS} value={form.provider} onChange={(v) => set('provider')(v)} />
      </Field>
      <Field id="cm-model" label="Model name" hint="As the provider names it, e.g. gpt-4o or claude-sonnet-4.">
        <input
          id="cm-model"
          value={form.provider === 'demo' ? 'demo' : form.model}
          disabled={form.provider === 'demo'}
          onInput={text('model')}
          aria-describedby={hintFor('cm-model')}
        />
      </Field>
    </>
  );
}

/** Base URL, API key (write-only), context budget, image input. */
function ModelAccessFields({ form, setForm, editing }: FieldsProps) {
  const { set, text } = fieldSetters(setForm);
  return (
    <>
      <Field
        id="cm-base"
        label="Base URL"
        hint="OpenAI-compatible: the versioned base (…/v1). Anthropic: the API root. Not used by the demo model."
      >
        <input
          id="cm-base"
          type="url"
          value={form.base_url}
          onInput={text('base_url')}
          aria-describedby={hintFor('cm-base')}
        />
      </Field>
      <Field
        id="cm-key"
        label="API key"
        hint={
          editing
            ? 'Write-only: leave empty to keep the stored key.'
            : 'Write-only: stored encrypted, never shown again. Leave empty for a server that needs none.'
        }
      >
        <input
          id="cm-key"
          type="password"
          autocomplete="off"
          value={form.api_key}
          onInput={text('api_key')}
          disabled={form.remove_key}
          aria-describedby={hintFor('cm-key')}
        />
      </Field>
      {editing ? (
        <Checkbox
          id="cm-remove-key"
          label="Remove the stored key"
          checked={form.remove_key}
          onChange={set('remove_key')}
        />
      ) : null}
      <Field
        id="cm-context"
        label="Context budget (tokens)"
        hint="Past it the oldest whole turns of a chat are left out of the request."
      >
        <input
          id="cm-context"
          type="number"
          min={1000}
          max={10000000}
          value={form.context_tokens}
          onInput={text('context_tokens')}
          aria-describedby={hintFor('cm-context')}
        />
      </Field>
      <Checkbox
        id="cm-images"
        label="Takes images: a message's PNG and JPEG uploads go to the model with it (only for a model that accepts image input)"
        checked={form.images}
        onChange={set('images')}
      />
    </>
  );
}
