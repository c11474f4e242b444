// An organisation's teams (linked to a directory group, or with members managed here) and its
// agent policies: /api/identity/organisations/:id/teams, /teams/:id, /agent-policies.
import { useState } from 'preact/hooks';
import type { AgentCatalogView, AgentPolicyRequest, AgentPolicyView, ExternalGroup, ExternalGroupList, TeamView } from '../../../admin-api.js';
import { api } from '../api.js';
import { Checkbox, Clip, Field, hintFor, parseList, Section, Select, Status, Table, useActions, useUserPicker, type Actions } from './common.js';

/** An allow list as text: null is no restriction. */
export const listText = (v: string[] | null) => (v === null ? 'any' : v.length ? v.join(', ') : 'none');

const groupLabel = (g: ExternalGroup) => `${g.name || g.email} (${g.email}, ${g.member_count} members)`;
const groupOptions = (groups: ExternalGroup[]): [string, string][] => [['', '— not linked —'], ...groups.map((g): [string, string] => [String(g.id), groupLabel(g)])];

interface TeamsProps {
  orgId: number;
  teams: TeamView[];
  groups: ExternalGroup[];
  changed(): Promise<void>;
}

export function TeamsSection({ orgId, teams, groups, changed }: TeamsProps) {
  const status = useActions();
  const [name, setName] = useState('');
  const [search, setSearch] = useState('');
  const [found, setFound] = useState<ExternalGroup[] | null>(null);
  const [group, setGroup] = useState('');
  const groupName = (id: number) => {
    const g = groups.find((x) => x.id === id);
    return g ? `${g.name || g.email} <${g.email}>` : `group ${id}`;
  };
  const searchGroups = async (q: string) => {
    setSearch(q);
    try {
      setFound((await api<ExternalGroupList>('GET', `/api/identity/external-groups?q=${encodeURIComponent(q)}`)).groups);
    } catch (e) {
      status.setNotice({ kind: 'error', error: e });
    }
  };
  const create = () =>
    status.run('create', async () => {
      await api<TeamView>('POST', `/api/identity/organisations/${orgId}/teams`, { name: name.trim(), external_group_id: group ? Number(group) : null });
      setName('');
      setGroup('');
      await changed();
    });
  return (
    <Section title="Teams">
      <Table
        id="teams-table"
        rows={teams}
        rowKey={(t) => t.id}
        empty="No teams yet."
        cols={[
          { title: 'Team', render: (t) => <Clip text={t.name} cls="name" /> },
          {
            title: 'Linked group',
            render: (t) => (t.external_group_id ? <Clip text={groupName(t.external_group_id)} cls="name" /> : <span class="muted">none (members managed here)</span>),
          },
          {
            title: 'Members',
            render: (t) =>
              t.external_group_id ? (
                <span>
                  {String(t.member_ids.length)}
                  <span class="muted"> (from the directory)</span>
                </span>
              ) : (
                <TeamMembers team={t} status={status} changed={changed} />
              ),
          },
          { title: 'Actions', render: (t) => <TeamActions team={t} groups={groups} status={status} changed={changed} /> },
        ]}
      />
      <h3>New team</h3>
      <form
        id="team-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <div class="row">
          <Field id="team-name" label="Team name">
            <input type="text" id="team-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field id="team-group-search" label="Search directory groups">
            <input type="search" id="team-group-search" placeholder="filter groups" value={search} onInput={(e) => void searchGroups(e.currentTarget.value)} />
          </Field>
          <Field id="team-group" label="Directory group" hint={groups.length ? `${groups.length} synced groups` : 'No groups synced yet: run the directory sync.'}>
            <Select id="team-group" aria-describedby={hintFor('team-group')} value={group} onChange={setGroup} options={groupOptions(found ?? groups)} />
          </Field>
        </div>
        <div class="actions">
          <button type="submit" id="team-create" disabled={status.busy === 'create'}>
            Create team
          </button>
        </div>
      </form>
      <Status id="team-status" notice={status.notice} />
    </Section>
  );
}

/** Members of a team not linked to a group: by name, each removable, and a user field to add one. */
function TeamMembers({ team, status, changed }: { team: TeamView; status: Actions; changed(): Promise<void> }) {
  const who = useUserPicker(`team-${team.id}-add`, { label: `User to add to team ${team.name}` });
  const add = () =>
    status.run(`add-${team.id}`, async () => {
      const id = await who.resolve();
      if (id === null) throw new Error('Name a user (username, e-mail or id).');
      await api<TeamView>('PUT', `/api/identity/teams/${team.id}/members/${id}`);
      who.setValue('');
      await changed();
    });
  const remove = (userId: number) =>
    status.run(`remove-${team.id}-${userId}`, async () => {
      await api<TeamView>('DELETE', `/api/identity/teams/${team.id}/members/${userId}`);
      await changed();
    });
  return (
    <div>
      {team.members.length ? (
        <ul class="members" id={`team-${team.id}-members`}>
          {team.members.map((m) => (
            <li key={m.id}>
              <Clip text={m.display_name ? `${m.display_name} (${m.username})` : m.username} cls="name" />{' '}
              <button type="button" class="link danger-link" aria-label={`Remove ${m.username} from team ${team.name}`} onClick={() => void remove(m.id)}>
                remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">No members yet.</p>
      )}
      <form
        class="row compact add-member"
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        {who.field}
        <button type="submit" class="secondary" aria-label={`Add member to team ${team.name}`} disabled={status.busy === `add-${team.id}`}>
          Add
        </button>
      </form>
    </div>
  );
}

function TeamActions({ team, groups, status, changed }: { team: TeamView; groups: ExternalGroup[]; status: Actions; changed(): Promise<void> }) {
  const [group, setGroup] = useState(team.external_group_id ? String(team.external_group_id) : '');
  const link = () =>
    status.run(`link-${team.id}`, async () => {
      await api<TeamView>('PATCH', `/api/identity/teams/${team.id}`, { external_group_id: group ? Number(group) : null });
      await changed();
    });
  const remove = () =>
    status.run(`delete-${team.id}`, async () => {
      if (!confirm(`Delete team ${team.name}?`)) return;
      await api('DELETE', `/api/identity/teams/${team.id}`);
      await changed();
    });
  return (
    <div class="row compact">
      <Select id={`team-${team.id}-group`} aria-label={`Linked group for ${team.name}`} value={group} onChange={setGroup} options={groupOptions(groups)} />
      <button type="button" class="secondary" aria-label={`Link ${team.name} to the chosen group`} disabled={status.busy === `link-${team.id}`} onClick={() => void link()}>
        Link
      </button>
      <button type="button" class="danger" aria-label={`Delete team ${team.name}`} disabled={status.busy === `delete-${team.id}`} onClick={() => void remove()}>
        Delete
      </button>
    </div>
  );
}

interface PoliciesProps {
  orgId: number;
  teams: TeamView[];
  policies: AgentPolicyView[];
  catalog: AgentCatalogView;
  changed(): Promise<void>;
}

const EMPTY_POLICY = { name: '', applies: 'all', tools: '', models: '', deniedTools: '', deniedModels: '', mailAllow: '', mailBlock: '', mailOther: '', mailMaxRecipients: '', mailMaxPerHour: '' };

/** A number field: blank = the server's default (null). */
const optInt = (v: string): number | null => (v.trim() === '' ? null : Number(v));

function mailText(p: AgentPolicyView): string {
  const parts: string[] = [];
  if (p.mail_allow_domains.length) parts.push(`allowed ${p.mail_allow_domains.join(', ')}`);
  if (p.mail_block_domains.length) parts.push(`blocked ${p.mail_block_domains.join(', ')}`);
  if (p.mail_other) parts.push(`others: ${p.mail_other}`);
  if (p.mail_max_recipients !== null) parts.push(`≤ ${p.mail_max_recipients} recipients`);
  if (p.mail_max_per_hour !== null) parts.push(`≤ ${p.mail_max_per_hour}/hour`);
  return parts.join('; ') || "server's default";
}

export function AgentPoliciesSection({ orgId, teams, policies, catalog, changed }: PoliciesProps) {
  const status = useActions();
  const [f, setF] = useState(EMPTY_POLICY);
  const [chosen, setChosen] = useState<number[]>([]);
  const set = (k: keyof typeof EMPTY_POLICY) => (e: { currentTarget: { value: string } }) => setF({ ...f, [k]: e.currentTarget.value });
  const teamName = (id: number) => teams.find((t) => t.id === id)?.name ?? `team ${id}`;
  const create = () =>
    status.run('create', async () => {
      const body: AgentPolicyRequest = {
        name: f.name.trim(),
        applies_to: f.applies === 'teams' ? 'teams' : 'all',
        team_ids: chosen.filter((id) => teams.some((t) => t.id === id)),
        allowed_tools: parseList(f.tools, true),
        allowed_models: parseList(f.models, true),
        denied_tools: parseList(f.deniedTools),
        denied_models: parseList(f.deniedModels),
        mail_allow_domains: parseList(f.mailAllow).map((d) => d.toLowerCase()),
        mail_block_domains: parseList(f.mailBlock).map((d) => d.toLowerCase()),
        mail_other: f.mailOther === 'allow' || f.mailOther === 'ask' || f.mailOther === 'block' ? f.mailOther : null,
        mail_max_recipients: optInt(f.mailMaxRecipients),
        mail_max_per_hour: optInt(f.mailMaxPerHour),
      };
      await api<AgentPolicyView>('POST', `/api/identity/organisations/${orgId}/agent-policies`, body);
      setF(EMPTY_POLICY);
      setChosen([]);
      await changed();
    });
  const remove = (p: AgentPolicyView) =>
    status.run(`delete-${p.id}`, async () => {
      if (!confirm(`Delete agent policy ${p.name}?`)) return;
      await api('DELETE', `/api/identity/agent-policies/${p.id}`);
      await changed();
    });
  const hinted = (id: string) => ({ id, 'aria-describedby': hintFor(id) });
  return (
    <Section title="Agent policies">
      <Table
        id="agent-policies-table"
        rows={policies}
        rowKey={(p) => p.id}
        empty="No agent policies: members may use every tool and model."
        cols={[
          { title: 'Policy', render: (p) => <Clip text={p.name} cls="name" /> },
          { title: 'Applies to', render: (p) => (p.applies_to === 'all' ? 'every member' : p.team_ids.map(teamName).join(', ') || 'no teams') },
          { title: 'Tools allowed', render: (p) => listText(p.allowed_tools) },
          { title: 'Models allowed', render: (p) => listText(p.allowed_models) },
          { title: 'Denied', render: (p) => [...p.denied_tools, ...p.denied_models].join(', ') || 'none' },
          { title: 'Mail', render: (p) => mailText(p) },
          {
            title: 'Actions',
            render: (p) => (
              <button type="button" class="danger" aria-label={`Delete policy ${p.name}`} disabled={status.busy === `delete-${p.id}`} onClick={() => void remove(p)}>
                Delete
              </button>
            ),
          },
        ]}
      />
      <h3>New agent policy</h3>
      <form
        id="ap-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <div class="row">
          <Field id="ap-name" label="Policy name">
            <input type="text" id="ap-name" required maxLength={100} value={f.name} onInput={set('name')} />
          </Field>
          <Field id="ap-applies" label="Applies to">
            <Select
              id="ap-applies"
              value={f.applies}
              onChange={(v) => setF({ ...f, applies: v })}
              options={[
                ['all', 'Every member of the organisation'],
                ['teams', 'Only the chosen teams'],
              ]}
            />
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
                checked={chosen.includes(t.id)}
                onChange={(on) => setChosen(on ? [...chosen, t.id] : chosen.filter((x) => x !== t.id))}
              />
            ))
          ) : (
            <p class="muted">No teams.</p>
          )}
        </fieldset>
        <div class="row">
          <Field id="ap-tools" label="Allowed tools" hint={`Comma-separated; blank = no restriction. Tools: ${catalog.tools.join(', ')}`}>
            <input type="text" {...hinted('ap-tools')} value={f.tools} onInput={set('tools')} />
          </Field>
          <Field id="ap-models" label="Allowed models" hint={`Comma-separated; blank = no restriction. Models: ${catalog.models.join(', ')}`}>
            <input type="text" {...hinted('ap-models')} value={f.models} onInput={set('models')} />
          </Field>
        </div>
        <div class="row">
          <Field id="ap-denied-tools" label="Denied tools" hint="Always removed, even when allowed">
            <input type="text" {...hinted('ap-denied-tools')} value={f.deniedTools} onInput={set('deniedTools')} />
          </Field>
          <Field id="ap-denied-models" label="Denied models" hint="Always removed, even when allowed">
            <input type="text" {...hinted('ap-denied-models')} value={f.deniedModels} onInput={set('deniedModels')} />
          </Field>
        </div>
        <fieldset>
          <legend>Sending mail</legend>
          <div class="row">
            <Field id="ap-mail-allow" label="Always allowed domains" hint="Comma-separated, e.g. your own domain; a domain covers its subdomains">
              <input type="text" {...hinted('ap-mail-allow')} value={f.mailAllow} onInput={set('mailAllow')} />
            </Field>
            <Field id="ap-mail-block" label="Blocked domains" hint="Comma-separated; wins over allowed domains">
              <input type="text" {...hinted('ap-mail-block')} value={f.mailBlock} onInput={set('mailBlock')} />
            </Field>
          </div>
          <div class="row">
            <Field id="ap-mail-other" label="Other recipients">
              <Select
                id="ap-mail-other"
                value={f.mailOther}
                onChange={(v) => setF({ ...f, mailOther: v })}
                options={[
                  ['', "The server's default"],
                  ['allow', 'Send'],
                  ['ask', 'Ask the user in the chat first'],
                  ['block', 'Refuse'],
                ]}
              />
            </Field>
            <Field id="ap-mail-max-recipients" label="Most recipients per message" hint="Blank: the server's limit">
              <input type="number" min={1} max={500} {...hinted('ap-mail-max-recipients')} value={f.mailMaxRecipients} onInput={set('mailMaxRecipients')} />
            </Field>
            <Field id="ap-mail-max-per-hour" label="Most messages per hour" hint="Per user; blank: the server's limit">
              <input type="number" min={1} max={100000} {...hinted('ap-mail-max-per-hour')} value={f.mailMaxPerHour} onInput={set('mailMaxPerHour')} />
            </Field>
          </div>
          <p class="muted">Policies only make sending stricter than the server's settings; blocked domains always win.</p>
        </fieldset>
        <div class="actions">
          <button type="submit" id="ap-create" disabled={status.busy === 'create'}>
            Create policy
          </button>
        </div>
      </form>
      <Status id="policy-status" notice={status.notice} />
    </Section>
  );
}
