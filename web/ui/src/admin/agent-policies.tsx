// An organisation's agent policies: the table (each one editable and deletable) and the form that
// creates or edits one: /api/identity/organisations/:id/agent-policies, /agent-policies/:id.
// Tools and models are checkbox groups from the catalogue (GET /api/identity/agent-catalog); the
// mail rules are shown as sentences, not as one joined string.
import { useEffect, useState } from 'preact/hooks';
import type { AgentCatalogView, AgentPolicyRequest, AgentPolicyView, TeamView } from '../../../admin-api.js';
import { api } from '../api.js';
import {
  Checkbox,
  Clip,
  Field,
  hintFor,
  parseList,
  Section,
  Select,
  Status,
  Table,
  useActions,
  type Actions,
  type Column,
} from './common.js';
import { Form, RowActions, RowButton, Submit } from './forms.js';

/** An allow list as text: null is no restriction. */
export const listText = (v: string[] | null) => (v === null ? 'any' : v.length ? v.join(', ') : 'none');
const OTHER_TEXT = { allow: 'sent', ask: 'the user is asked in the chat first', block: 'refused' } as const;

/** Mail rules as short sentences; a null limit or handling is the server's. */
export function MailRules(p: {
  id?: string;
  allow: string[];
  block: string[];
  other: 'allow' | 'ask' | 'block' | null;
  maxRecipients: number | null;
  maxPerHour: number | null;
}) {
  return (
    <ul class="rules" id={p.id}>
      <li>Always allowed: {p.allow.length ? p.allow.join(', ') : 'no domains'}</li>
      <li>Blocked: {p.block.length ? p.block.join(', ') : 'no domains'}</li>
      <li>Other recipients: {p.other ? OTHER_TEXT[p.other] : "the server's default"}</li>
      <li>Most recipients per message: {p.maxRecipients ?? "the server's limit"}</li>
      <li>Most messages per hour: {p.maxPerHour ?? "the server's limit"}</li>
    </ul>
  );
}

const policyMail = (p: AgentPolicyView) => ({
  allow: p.mail_allow_domains,
  block: p.mail_block_domains,
  other: p.mail_other,
  maxRecipients: p.mail_max_recipients,
  maxPerHour: p.mail_max_per_hour,
});

interface PoliciesProps {
  orgId: number;
  teams: TeamView[];
  policies: AgentPolicyView[];
  catalog: AgentCatalogView;
  /** A policy to show (a link from the effective-policy view): scrolled to and marked. */
  target?: number | null;
  changed(): Promise<void>;
}

export function AgentPoliciesSection({ orgId, teams, policies, catalog, target, changed }: PoliciesProps) {
  const status = useActions();
  const [editing, setEditing] = useState<AgentPolicyView | null>(null);
  const teamName = (id: number) => teams.find((t) => t.id === id)?.name ?? `team ${id}`;
  useEffect(() => {
    if (target) document.getElementById(`policy-${target}`)?.scrollIntoView({ block: 'center' });
  }, [target]);
  const remove = (p: AgentPolicyView) =>
    status.run(`delete-${p.id}`, async () => {
      if (!confirm(`Delete agent policy ${p.name}?`)) return;
      await api('DELETE', `/api/identity/agent-policies/${p.id}`);
      if (editing?.id === p.id) setEditing(null);
      await changed();
    });
  const edit = (p: AgentPolicyView) => {
    setEditing(p);
    status.setNotice(null);
    // The form is below the table: bring it into view with its first field focused.
    requestAnimationFrame(() => {
      document.getElementById('ap-form')?.scrollIntoView({ block: 'start' });
      document.getElementById('ap-name')?.focus({ preventScroll: true });
    });
  };
  const cols: Column<AgentPolicyView>[] = [
    {
      title: 'Policy',
      render: (p) => (
        <span
          id={`policy-${p.id}`}
          class={p.id === target ? 'target' : undefined}
          aria-current={p.id === target ? 'true' : undefined}
        >
          <Clip text={p.name} cls="name" />
        </span>
      ),
    },
    {
      title: 'Applies to',
      render: (p) => (p.applies_to === 'all' ? 'every member' : p.team_ids.map(teamName).join(', ') || 'no teams'),
    },
    { title: 'Tools allowed', render: (p) => listText(p.allowed_tools) },
    { title: 'Models allowed', render: (p) => listText(p.allowed_models) },
    { title: 'Denied', render: (p) => [...p.denied_tools, ...p.denied_models].join(', ') || 'none' },
    { title: 'Mail', render: (p) => <MailRules {...policyMail(p)} /> },
    {
      title: 'Actions',
      render: (p) => (
        <RowActions>
          <RowButton text="Edit" label={`Edit policy ${p.name}`} onClick={() => edit(p)} />
          <RowButton
            text="Delete"
            cls="danger"
            label={`Delete policy ${p.name}`}
            disabled={status.busy === `delete-${p.id}`}
            onClick={() => void remove(p)}
          />
        </RowActions>
      ),
    },
  ];
  return (
    <Section title="Agent policies">
      <Table
        id="agent-policies-table"
        rows={policies}
        rowKey={(p) => p.id}
        empty="No agent policies: members may use every tool and model."
        cols={cols}
      />
      <PolicyForm
        key={editing?.id ?? 'new'}
        orgId={orgId}
        teams={teams}
        catalog={catalog}
        editing={editing}
        status={status}
        done={() => setEditing(null)}
        changed={changed}
      />
      <Status id="policy-status" notice={status.notice} />
    </Section>
  );
}

interface Draft {
  name: string;
  applies: string;
  teams: number[];
  anyTool: boolean;
  tools: string[];
  deniedTools: string[];
  anyModel: boolean;
  models: string[];
  deniedModels: string[];
  mailAllow: string;
  mailBlock: string;
  mailOther: string;
  mailMaxRecipients: string;
  mailMaxPerHour: string;
}

const EMPTY: Draft = {
  name: '',
  applies: 'all',
  teams: [],
  anyTool: true,
  tools: [],
  deniedTools: [],
  anyModel: true,
  models: [],
  deniedModels: [],
  mailAllow: '',
  mailBlock: '',
  mailOther: '',
  mailMaxRecipients: '',
  mailMaxPerHour: '',
};

function draftOf(p: AgentPolicyView | null): Draft {
  if (!p) return EMPTY;
  return {
    name: p.name,
    applies: p.applies_to,
    teams: p.team_ids,
    anyTool: p.allowed_tools === null,
    tools: p.allowed_tools ?? [],
    deniedTools: p.denied_tools,
    anyModel: p.allowed_models === null,
    models: p.allowed_models ?? [],
    deniedModels: p.denied_models,
    mailAllow: p.mail_allow_domains.join(', '),
    mailBlock: p.mail_block_domains.join(', '),
    mailOther: p.mail_other ?? '',
    mailMaxRecipients: p.mail_max_recipients === null ? '' : String(p.mail_max_recipients),
    mailMaxPerHour: p.mail_max_per_hour === null ? '' : String(p.mail_max_per_hour),
  };
}

/** A number field: blank = the server's default (null). */
const optInt = (v: string): number | null => (v.trim() === '' ? null : Number(v));

function requestOf(f: Draft, teams: TeamView[]): AgentPolicyRequest {
  return {
    name: f.name.trim(),
    applies_to: f.applies === 'teams' ? 'teams' : 'all',
    team_ids: f.teams.filter((id) => teams.some((t) => t.id === id)),
    allowed_tools: f.anyTool ? null : f.tools,
    allowed_models: f.anyModel ? null : f.models,
    denied_tools: f.deniedTools,
    denied_models: f.deniedModels,
    mail_allow_domains: parseList(f.mailAllow).map((d) => d.toLowerCase()),
    mail_block_domains: parseList(f.mailBlock).map((d) => d.toLowerCase()),
    mail_other: f.mailOther === 'allow' || f.mailOther === 'ask' || f.mailOther === 'block' ? f.mailOther : null,
    mail_max_recipients: optInt(f.mailMaxRecipients),
    mail_max_per_hour: optInt(f.mailMaxPerHour),
  };
}

/** Checkboxes for a set of names; names already chosen but no longer offered are listed too, so they can be unticked. */
function CheckGroup(p: {
  id: string;
  legend: string;
  names: string[];
  chosen: string[];
  disabled?: boolean;
  hint?: string;
  set(v: string[]): void;
}) {
  const names = [...p.names, ...p.chosen.filter((n) => !p.names.includes(n))];
  return (
    <fieldset id={p.id} aria-describedby={p.hint ? hintFor(p.id) : undefined}>
      <legend>{p.legend}</legend>
      {p.hint ? (
        <div class="hint muted" id={hintFor(p.id)}>
          {p.hint}
        </div>
      ) : null}
      <div class="checks">
        {names.map((n, i) => (
          <CheckboxOff
            key={n}
            id={`${p.id}-${i}`}
            label={n}
            disabled={p.disabled}
            checked={p.chosen.includes(n)}
            onChange={(on) => p.set(on ? [...p.chosen, n] : p.chosen.filter((x) => x !== n))}
          />
        ))}
      </div>
    </fieldset>
  );
}

/** A Checkbox that can be disabled (the allowed list while "any" is ticked). */
function CheckboxOff({
  disabled,
  ...rest
}: {
  id: string;
  label: string;
  checked: boolean;
  disabled?: boolean;
  onChange(v: boolean): void;
}) {
  return (
    <div class={disabled ? 'check disabled' : 'check'}>
      <input
        type="checkbox"
        id={rest.id}
        value={rest.label}
        disabled={disabled}
        checked={rest.checked}
        onChange={(e) => rest.onChange(e.currentTarget.checked)}
      />
      <label for={rest.id}>{rest.label}</label>
    </div>
  );
}

interface FormProps {
  orgId: number;
  teams: TeamView[];
  catalog: AgentCatalogView;
  editing: AgentPolicyView | null;
  status: Actions;
  done(): void;
  changed(): Promise<void>;
}

function PolicyForm({ orgId, teams, catalog, editing, status, done, changed }: FormProps) {
  const [f, setF] = useState<Draft>(() => draftOf(editing));
  const put = (patch: Partial<Draft>) => setF({ ...f, ...patch });
  const save = () =>
    status.run('save', async () => {
      const body = requestOf(f, teams);
      // The list is read again before the sentence says so: "saved" never stands beside the old row.
      if (editing) {
        const p = await api<AgentPolicyView>('PATCH', `/api/identity/agent-policies/${editing.id}`, body);
        done();
        await changed();
        status.ok(`Policy ${p.name} saved.`);
      } else {
        const p = await api<AgentPolicyView>('POST', `/api/identity/organisations/${orgId}/agent-policies`, body);
        setF(EMPTY);
        await changed();
        status.ok(`Policy ${p.name} created.`);
      }
    });
  return (
    <>
      <h3 id="ap-form-title">{editing ? `Edit agent policy ${editing.name}` : 'New agent policy'}</h3>
      <Form id="ap-form" aria-labelledby="ap-form-title" onSubmit={save}>
        <PolicyWho f={f} put={put} teams={teams} />
        <PolicyTools f={f} put={put} catalog={catalog} />
        <PolicyMail f={f} put={put} />
        <div class="actions">
          <Submit
            id={editing ? 'ap-save' : 'ap-create'}
            text={editing ? 'Save policy' : 'Create policy'}
            disabled={status.busy === 'save'}
          />
          {editing ? (
            <button type="button" class="secondary" id="ap-cancel" onClick={done}>
              Cancel editing
            </button>
          ) : null}
        </div>
      </Form>
    </>
  );
}

type Part = { f: Draft; put(p: Partial<Draft>): void };

const APPLIES: [string, string][] = [
  ['all', 'Every member of the organisation'],
  ['teams', 'Only the chosen teams'],
];
const MAIL_OTHER: [string, string][] = [
  ['', "The server's default"],
  ['allow', 'Send'],
  ['ask', 'Ask the user in the chat first'],
  ['block', 'Refuse'],
];

function PolicyWho({ f, put, teams }: Part & { teams: TeamView[] }) {
  return (
    <>
      <div class="row">
        <Field id="ap-name" label="Policy name">
          <input
            type="text"
            id="ap-name"
            required
            maxLength={100}
            value={f.name}
            onInput={(e) => put({ name: e.currentTarget.value })}
          />
        </Field>
        <Field id="ap-applies" label="Applies to">
          <Select id="ap-applies" value={f.applies} onChange={(v) => put({ applies: v })} options={APPLIES} />
        </Field>
      </div>
      <fieldset>
        <legend>Teams</legend>
        {teams.length ? (
          teams.map((t) => (
            <Checkbox
              key={t.id}
              id={`ap-team-${t.id}`}
              label={t.name}
              value={String(t.id)}
              checked={f.teams.includes(t.id)}
              onChange={(on) => put({ teams: on ? [...f.teams, t.id] : f.teams.filter((x) => x !== t.id) })}
            />
          ))
        ) : (
          <p class="muted">No teams.</p>
        )}
      </fieldset>
    </>
  );
}

function PolicyTools({ f, put, catalog }: Part & { catalog: AgentCatalogView }) {
  return (
    <div class="grid2">
      <div>
        <Checkbox
          id="ap-any-tool"
          label="Any tool (no restriction)"
          checked={f.anyTool}
          onChange={(v) => put({ anyTool: v })}
        />
        <CheckGroup
          id="ap-tools"
          legend="Allowed tools"
          names={catalog.tools}
          chosen={f.tools}
          disabled={f.anyTool}
          set={(v) => put({ tools: v })}
        />
        <CheckGroup
          id="ap-denied-tools"
          legend="Denied tools"
          hint="Always removed, even when allowed."
          names={catalog.tools}
          chosen={f.deniedTools}
          set={(v) => put({ deniedTools: v })}
        />
      </div>
      <div>
        <Checkbox
          id="ap-any-model"
          label="Any model (no restriction)"
          checked={f.anyModel}
          onChange={(v) => put({ anyModel: v })}
        />
        <CheckGroup
          id="ap-models"
          legend="Allowed models"
          names={catalog.models}
          chosen={f.models}
          disabled={f.anyModel}
          set={(v) => put({ models: v })}
        />
        <CheckGroup
          id="ap-denied-models"
          legend="Denied models"
          hint="Always removed, even when allowed."
          names={catalog.models}
          chosen={f.deniedModels}
          set={(v) => put({ deniedModels: v })}
        />
      </div>
    </div>
  );
}

function PolicyMail({ f, put }: Part) {
  const hinted = (id: string) => ({ id, 'aria-describedby': hintFor(id) });
  return (
    <fieldset>
      <legend>Sending mail</legend>
      <div class="row">
        <Field
          id="ap-mail-allow"
          label="Always allowed domains"
          hint="Comma-separated, e.g. your own domain; a domain covers its subdomains"
        >
          <input
            type="text"
            {...hinted('ap-mail-allow')}
            value={f.mailAllow}
            onInput={(e) => put({ mailAllow: e.currentTarget.value })}
          />
        </Field>
        <Field id="ap-mail-block" label="Blocked domains" hint="Comma-separated; wins over allowed domains">
          <input
            type="text"
            {...hinted('ap-mail-block')}
            value={f.mailBlock}
            onInput={(e) => put({ mailBlock: e.currentTarget.value })}
          />
        </Field>
      </div>
      <div class="row">
        <Field id="ap-mail-other" label="Other recipients">
          <Select id="ap-mail-other" value={f.mailOther} onChange={(v) => put({ mailOther: v })} options={MAIL_OTHER} />
        </Field>
        <Field id="ap-mail-max-recipients" label="Most recipients per message" hint="Blank: the server's limit">
          <input
            type="number"
            min={1}
            max={500}
            {...hinted('ap-mail-max-recipients')}
            value={f.mailMaxRecipients}
            onInput={(e) => put({ mailMaxRecipients: e.currentTarget.value })}
          />
        </Field>
        <Field id="ap-mail-max-per-hour" label="Most messages per hour" hint="Per user; blank: the server's limit">
          <input
            type="number"
            min={1}
            max={100000}
            {...hinted('ap-mail-max-per-hour')}
            value={f.mailMaxPerHour}
            onInput={(e) => put({ mailMaxPerHour: e.currentTarget.value })}
          />
        </Field>
      </div>
      <p class="muted">Policies only make sending stricter than the server's settings; blocked domains always win.</p>
    </fieldset>
  );
}
