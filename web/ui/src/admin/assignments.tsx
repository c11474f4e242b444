// Who holds which data role, and what a user may read as a result (the effective policy with its
// explanation): /api/data-authorization/assignments and /users/:id/effective-policy.
import { useState } from 'preact/hooks';
import type { AssignmentList, AssignmentView, DataRoleList, EffectivePolicyView } from '../../../admin-api.js';
import { api } from '../api.js';
import { FilterView } from './row-filter.js';
import { BASE, UNAVAILABLE } from './roles.js';
import {
  Clip,
  Field,
  fmtTime,
  Section,
  Select,
  Status,
  Table,
  useActions,
  useLoad,
  useUserPicker,
  type Column,
} from './common.js';
import { Form, Page, PageLoading, RowActions, RowButton, Submit, UserQuery } from './forms.js';

export function AssignmentsPage() {
  const status = useActions();
  const [data, failed, reload] = useLoad(async () => {
    const [roles, list] = await Promise.all([
      api<DataRoleList>('GET', `${BASE}/roles`),
      api<AssignmentList>('GET', `${BASE}/assignments?limit=200`),
    ]);
    return { roles: roles.roles, list };
  });
  const who = useUserPicker('assign-user', { required: true });
  const [roleId, setRoleId] = useState('');
  const eff = useEffective();

  const page = {
    cls: 'admin access',
    title: 'Assignments and effective policy',
    intro: 'Who holds which data role, and what a user may read as a result.',
  };
  if (failed || !data) return <PageLoading {...page} failed={failed} unavailable={UNAVAILABLE} />;
  const chosenRole = roleId || String(data.roles[0]?.id ?? '');
  const assign = () =>
    status.run('assign', async () => {
      await api<AssignmentView>('POST', `${BASE}/assignments`, {
        user_id: await who.resolve(),
        role_id: Number(chosenRole),
      });
      await reload();
    });
  const remove = (a: AssignmentView) =>
    status.run(`remove-${a.id}`, async () => {
      if (!confirm(`Remove role ${a.role} from ${a.username}?`)) return;
      await api('DELETE', `${BASE}/assignments/${a.id}`);
      await reload();
    });
  const { assignments, total } = data.list;
  return (
    <Page {...page}>
      <Section title="Assignments">
        <AssignmentsTable
          assignments={assignments}
          busy={status.busy}
          onEffective={(a) => void eff.show(String(a.user_id))}
          onRemove={(a) => void remove(a)}
        />
        {total > assignments.length ? (
          <p class="muted">
            Showing {assignments.length} of {total}.
          </p>
        ) : null}
        <h3>New assignment</h3>
        <Form id="assign-form" class="row" onSubmit={assign}>
          <Field id="assign-user" label="User">
            {who.field}
          </Field>
          <Field id="assign-role" label="Role">
            <Select
              id="assign-role"
              value={chosenRole}
              onChange={setRoleId}
              options={data.roles.map((r) => [String(r.id), r.name])}
            />
          </Field>
          <Submit id="assign-create" text="Assign" disabled={status.busy === 'assign'} />
        </Form>
        <Status id="assign-status" notice={status.notice} />
      </Section>
      {eff.section}
    </Page>
  );
}

function AssignmentsTable(p: {
  assignments: AssignmentView[];
  busy: string | null;
  onEffective(a: AssignmentView): void;
  onRemove(a: AssignmentView): void;
}) {
  const cols: Column<AssignmentView>[] = [
    { title: 'User', render: (a) => <Clip text={`${a.username} (id ${a.user_id})`} cls="name" /> },
    { title: 'Role', render: (a) => a.role },
    { title: 'Since', render: (a) => fmtTime(a.created_at) },
    {
      title: 'Actions',
      render: (a) => (
        <RowActions>
          <RowButton
            text="Effective policy"
            label={`Effective policy of ${a.username}`}
            onClick={() => p.onEffective(a)}
          />
          <RowButton
            text="Remove"
            cls="danger"
            label={`Remove ${a.role} from ${a.username}`}
            disabled={p.busy === `remove-${a.id}`}
            onClick={() => p.onRemove(a)}
          />
        </RowActions>
      ),
    },
  ];
  return <Table id="assignments-table" rows={p.assignments} rowKey={(a) => a.id} empty="No assignments." cols={cols} />;
}

/** The "Effective policy" section; show(text) asks for a user (a row's button fills the field). */
function useEffective() {
  const status = useActions();
  const picker = useUserPicker('eff-user', { required: true });
  const [policy, setPolicy] = useState<EffectivePolicyView | null>(null);
  const show = (text?: string) => {
    if (text !== undefined) picker.setValue(text);
    // A new query: the last answer does not belong to it, also when it fails.
    setPolicy(null);
    return status.run('show', async () => {
      setPolicy(await api<EffectivePolicyView>('GET', `${BASE}/users/${await picker.resolve(text)}/effective-policy`));
    });
  };
  const section = (
    <Section title="Effective policy">
      <UserQuery id="eff" picker={picker} button="Show effective policy" status={status} show={() => show()}>
        {policy ? <EffectiveView p={policy} /> : null}
      </UserQuery>
    </Section>
  );
  return { show, section };
}

function EffectiveView({ p }: { p: EffectivePolicyView }) {
  const tables = [...p.tables, ...(p.any_table ? [{ ...p.any_table, table: '* (any other table)' }] : [])];
  const cols: Column<(typeof tables)[number]>[] = [
    { title: 'Table', render: (t) => <code>{t.table}</code> },
    { title: 'Columns', render: (t) => t.columns.join(', ') },
    { title: 'Rows', render: (t) => (t.all_rows ? 'all rows' : <FilterView filter={t.row_filter} />) },
    {
      title: 'Why',
      render: (t) => (
        <div>
          {t.explanation}
          <ul>
            {t.grants.map((g, i) => (
              <li key={i}>
                {g.role} on {g.granted_on}: {g.gives}
              </li>
            ))}
          </ul>
        </div>
      ),
    },
  ];
  return (
    <div class="effective">
      <p>
        <strong>{p.user.username}</strong> (id {p.user.id}
        {p.user.is_active ? '' : ', inactive'}) · bi: <strong id="eff-bi">{p.bi ? 'yes' : 'no'}</strong> · roles:{' '}
        {p.roles.length ? p.roles.map((r) => r.name).join(', ') : 'none'}
      </p>
      <ul id="eff-explanation">
        {p.explanation.map((x, i) => (
          <li key={i}>{x}</li>
        ))}
      </ul>
      <Table
        id="eff-tables"
        rows={tables}
        rowKey={(t) => t.table}
        empty="No table: this user reads nothing."
        cols={cols}
      />
    </div>
  );
}
