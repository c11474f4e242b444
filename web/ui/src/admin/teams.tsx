// An organisation's teams (linked to a directory group, or with members managed here):
// /api/identity/organisations/:id/teams, /teams/:id. Its agent policies are agent-policies.tsx.
import { useState } from 'preact/hooks';
import type { ExternalGroup, ExternalGroupList, TeamView } from '../../../admin-api.js';
import { api } from '../api.js';
import {
  Clip,
  Field,
  hintFor,
  Section,
  Select,
  Status,
  Table,
  useActions,
  useUserPicker,
  type Actions,
  type Column,
} from './common.js';
import { Form, RowActions, RowButton, Submit } from './forms.js';

const groupLabel = (g: ExternalGroup) => `${g.name || g.email} (${g.email}, ${g.member_count} members)`;
const groupOptions = (groups: ExternalGroup[]): [string, string][] => [
  ['', '— not linked —'],
  ...groups.map((g): [string, string] => [String(g.id), groupLabel(g)]),
];

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
  const searchGroups = async (q: string) => {
    setSearch(q);
    try {
      setFound(
        (await api<ExternalGroupList>('GET', `/api/identity/external-groups?q=${encodeURIComponent(q)}`)).groups,
      );
    } catch (e) {
      status.setNotice({ kind: 'error', error: e });
    }
  };
  const create = () =>
    status.run('create', async () => {
      await api<TeamView>('POST', `/api/identity/organisations/${orgId}/teams`, {
        name: name.trim(),
        external_group_id: group ? Number(group) : null,
      });
      setName('');
      setGroup('');
      await changed();
    });
  return (
    <Section title="Teams">
      <TeamsTable teams={teams} groups={groups} status={status} changed={changed} />
      <h3>New team</h3>
      <Form id="team-form" onSubmit={create}>
        <div class="row">
          <Field id="team-name" label="Team name">
            <input
              type="text"
              id="team-name"
              required
              maxLength={100}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </Field>
          <Field id="team-group-search" label="Search directory groups">
            <input
              type="search"
              id="team-group-search"
              placeholder="filter groups"
              value={search}
              onInput={(e) => void searchGroups(e.currentTarget.value)}
            />
          </Field>
          <Field
            id="team-group"
            label="Directory group"
            hint={groups.length ? `${groups.length} synced groups` : 'No groups synced yet: run the directory sync.'}
          >
            <Select
              id="team-group"
              aria-describedby={hintFor('team-group')}
              value={group}
              onChange={setGroup}
              options={groupOptions(found ?? groups)}
            />
          </Field>
        </div>
        <div class="actions">
          <Submit id="team-create" text="Create team" disabled={status.busy === 'create'} />
        </div>
      </Form>
      <Status id="team-status" notice={status.notice} />
    </Section>
  );
}

/** The teams: name, linked group, members (from the directory, or managed here) and actions. */
function TeamsTable({
  teams,
  groups,
  status,
  changed,
}: {
  teams: TeamView[];
  groups: ExternalGroup[];
  status: Actions;
  changed(): Promise<void>;
}) {
  const groupName = (id: number) => {
    const g = groups.find((x) => x.id === id);
    return g ? `${g.name || g.email} <${g.email}>` : `group ${id}`;
  };
  const cols: Column<TeamView>[] = [
    { title: 'Team', render: (t) => <Clip text={t.name} cls="name" /> },
    {
      title: 'Linked group',
      render: (t) =>
        t.external_group_id ? (
          <Clip text={groupName(t.external_group_id)} cls="name" />
        ) : (
          <span class="muted">none (members managed here)</span>
        ),
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
  ];
  return <Table id="teams-table" rows={teams} rowKey={(t) => t.id} empty="No teams yet." cols={cols} />;
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
              <button
                type="button"
                class="link danger-link"
                aria-label={`Remove ${m.username} from team ${team.name}`}
                onClick={() => void remove(m.id)}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">No members yet.</p>
      )}
      <Form class="row compact add-member" onSubmit={add}>
        {who.field}
        <button
          type="submit"
          class="secondary"
          aria-label={`Add member to team ${team.name}`}
          disabled={status.busy === `add-${team.id}`}
        >
          Add
        </button>
      </Form>
    </div>
  );
}

function TeamActions({
  team,
  groups,
  status,
  changed,
}: {
  team: TeamView;
  groups: ExternalGroup[];
  status: Actions;
  changed(): Promise<void>;
}) {
  const [group, setGroup] = useState(team.external_group_id ? String(team.external_group_id) : '');
  const link = () =>
    status.run(`link-${team.id}`, async () => {
      await api<TeamView>('PATCH', `/api/identity/teams/${team.id}`, {
        external_group_id: group ? Number(group) : null,
      });
      await changed();
    });
  const remove = () =>
    status.run(`delete-${team.id}`, async () => {
      if (!confirm(`Delete team ${team.name}?`)) return;
      await api('DELETE', `/api/identity/teams/${team.id}`);
      await changed();
    });
  return (
    <RowActions>
      <Select
        id={`team-${team.id}-group`}
        aria-label={`Linked group for ${team.name}`}
        value={group}
        onChange={setGroup}
        options={groupOptions(groups)}
      />
      <RowButton
        text="Link"
        label={`Link ${team.name} to the chosen group`}
        disabled={status.busy === `link-${team.id}`}
        onClick={() => void link()}
      />
      <RowButton
        text="Delete"
        cls="danger"
        label={`Delete team ${team.name}`}
        disabled={status.busy === `delete-${team.id}`}
        onClick={() => void remove()}
      />
    </RowActions>
  );
}
