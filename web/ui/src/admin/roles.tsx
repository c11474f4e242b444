// Data roles and their per-table policies (row-filter editor and builder):
// /api/data-authorization/roles (docs/data-access.md).
import { useState } from 'preact/hooks';
import type {
  DataPolicyList,
  DataPolicyView,
  DataRoleList,
  DataRoleSummaryView,
  DataRoleView,
} from '../../../admin-api.js';
import { api } from '../api.js';
import { rendered } from './focus.js';
import { andLeaf, FilterView, leafOf, OPERATORS, parseFilter, type Operator } from './row-filter.js';
import {
  Clip,
  Field,
  hintFor,
  parseList,
  Section,
  Select,
  Status,
  Table,
  useActions,
  useLoad,
  type Actions,
  type Column,
} from './common.js';
import { Form, Loaded, Page, PageLoading, RowActions, RowButton, Submit } from './forms.js';

export const BASE = '/api/data-authorization';
export const UNAVAILABLE = 'Data-access control is not available on this server';

const FILTER_HELP =
  'JSON: {} for all rows; a leaf {"column":"region","op":"eq","value":"EU"}; or {"all":[…]} / {"any":[…]}. ' +
  'Operators: eq neq lt lte gt gte in not_in is_null. Values "$user_id" and "$username" stand for the user.';

export function RolesPage() {
  const status = useActions();
  const policyStatus = useActions();
  const [data, failed, reload] = useLoad(() => api<DataRoleList>('GET', `${BASE}/roles`));
  const [openId, setOpenId] = useState<number | null>(null);

  const page = {
    cls: 'admin access',
    title: 'Data roles and policies',
    intro:
      'A user reads a table only through a data role that grants it. Policies are per table: allowed columns and a row filter.',
  };
  if (failed || !data) return <PageLoading {...page} failed={failed} unavailable={UNAVAILABLE} />;
  const open = data.roles.find((r) => r.id === openId) ?? null;
  const remove = (r: DataRoleSummaryView) =>
    status.run(`delete-${r.id}`, async () => {
      if (!confirm(`Delete role ${r.name}? Its policies and assignments go too.`)) return;
      await api('DELETE', `${BASE}/roles/${r.id}`);
      if (openId === r.id) setOpenId(null);
      await reload();
    });
  const showPolicies = async (r: DataRoleSummaryView) => {
    policyStatus.setNotice(null);
    setOpenId(r.id);
    await rendered();
    document.querySelector<HTMLElement>('#role-detail h2')?.focus();
  };
  const created = async (role: DataRoleView) => {
    await reload();
    setOpenId(role.id);
    policyStatus.ok(`Role ${role.name} created.`);
  };
  return (
    <Page {...page}>
      <Section title="Roles">
        <RolesTable
          roles={data.roles}
          busy={status.busy}
          onPolicies={(r) => void showPolicies(r)}
          onDelete={(r) => void remove(r)}
        />
        <NewRoleForm status={status} created={created} />
        <Status id="role-status" notice={status.notice} />
      </Section>
      <div id="role-detail">
        {open ? <PoliciesSection key={open.id} role={open} status={policyStatus} changed={reload} /> : null}
      </div>
    </Page>
  );
}

function RolesTable({
  roles,
  busy,
  onPolicies,
  onDelete,
}: {
  roles: DataRoleSummaryView[];
  busy: string | null;
  onPolicies(r: DataRoleSummaryView): void;
  onDelete(r: DataRoleSummaryView): void;
}) {
  const cols: Column<DataRoleSummaryView>[] = [
    {
      title: 'Role',
      render: (r) => (
        <>
          <Clip text={r.name} cls="name" />
          {r.builtin ? (
            <>
              {' '}
              <span class="badge">built-in</span>
            </>
          ) : null}
        </>
      ),
    },
    { title: 'Description', render: (r) => <Clip text={r.description} /> },
    { title: 'Policies', render: (r) => String(r.policy_count) },
    { title: 'Assigned', render: (r) => String(r.assignment_count) },
    {
      title: 'Actions',
      render: (r) => (
        <RowActions>
          <RowButton
            text="Policies"
            data-role-policies={String(r.id)}
            label={`Policies of ${r.name}`}
            onClick={() => onPolicies(r)}
          />
          <RowButton
            text="Delete"
            cls="danger"
            disabled={r.builtin || busy === `delete-${r.id}`}
            label={`Delete role ${r.name}`}
            onClick={() => onDelete(r)}
          />
        </RowActions>
      ),
    },
  ];
  return <Table id="roles-table" rows={roles} rowKey={(r) => r.id} empty="No roles." cols={cols} />;
}

function NewRoleForm({ status, created }: { status: Actions; created(role: DataRoleView): Promise<void> }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = () =>
    status.run('create', async () => {
      const role = await api<DataRoleView>('POST', `${BASE}/roles`, {
        name: name.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
      });
      setName('');
      setDescription('');
      await created(role);
    });
  return (
    <Form id="role-form" onSubmit={create}>
      <h3>New role</h3>
      <div class="row">
        <Field id="role-name" label="Role name" hint="Letters, digits, _ . -; starts with a letter">
          <input
            type="text"
            id="role-name"
            required
            maxLength={64}
            pattern="[A-Za-z][A-Za-z0-9_.\-]{0,63}"
            aria-describedby={hintFor('role-name')}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field id="role-description" label="Description">
          <input
            type="text"
            id="role-description"
            maxLength={500}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </Field>
        <Submit id="role-create" text="Create role" disabled={status.busy === 'create'} />
      </div>
    </Form>
  );
}

function PoliciesSection({ role, status, changed }: { role: DataRoleView; status: Actions; changed(): Promise<void> }) {
  const [data, failed, reload] = useLoad(
    () => api<DataPolicyList>('GET', `${BASE}/roles/${role.id}/policies`),
    [role.id],
  );
  const draft = usePolicyDraft();
  const afterChange = async (notice: string) => {
    await Promise.all([reload(), changed()]);
    status.ok(notice);
  };
  const remove = (p: DataPolicyView) =>
    status.run(`delete-${p.table}`, async () => {
      if (!confirm(`Delete the policy on ${p.table} from role ${role.name}?`)) return;
      await api('DELETE', `${BASE}/roles/${role.id}/policies/${encodeURIComponent(p.table)}`);
      await afterChange(`Policy on ${p.table} deleted.`);
    });

  return (
    <section class="panel" aria-labelledby="policies-title">
      <h2 id="policies-title" tabIndex={-1}>
        Policies of {role.name}
      </h2>
      <Loaded failed={failed} loading={!data}>
        {data && (
          <PoliciesTable
            role={role}
            policies={data.policies}
            busy={status.busy}
            onEdit={draft.edit}
            onDelete={(p) => void remove(p)}
          />
        )}
      </Loaded>
      <PolicyForm role={role} status={status} draft={draft} saved={afterChange} />
      <Status id="policy-status" notice={status.notice} />
    </section>
  );
}

function PoliciesTable({
  role,
  policies,
  busy,
  onEdit,
  onDelete,
}: {
  role: DataRoleView;
  policies: DataPolicyView[];
  busy: string | null;
  onEdit(p: DataPolicyView): void;
  onDelete(p: DataPolicyView): void;
}) {
  const cols: Column<DataPolicyView>[] = [
    { title: 'Table', render: (p) => <code>{p.table}</code> },
    { title: 'Columns', render: (p) => p.allowed_columns.join(', ') },
    { title: 'Row filter', render: (p) => <FilterView filter={p.row_filter} /> },
    {
      title: 'Actions',
      render: (p) => (
        <RowActions>
          <RowButton text="Edit" label={`Edit policy on ${p.table}`} onClick={() => onEdit(p)} />
          <RowButton
            text="Delete"
            cls="danger"
            disabled={role.builtin || busy === `delete-${p.table}`}
            label={`Delete policy on ${p.table}`}
            onClick={() => onDelete(p)}
          />
        </RowActions>
      ),
    },
  ];
  return (
    <Table
      id="policies-table"
      rows={policies}
      rowKey={(p) => p.table}
      empty="No policies: this role grants nothing yet."
      cols={cols}
    />
  );
}

/** The policy form's fields, filled by a table row's Edit. */
function usePolicyDraft() {
  const [table, setTable] = useState('');
  const [columns, setColumns] = useState('*');
  const [filter, setFilter] = useState('{}');
  const [filterInvalid, setFilterInvalid] = useState(false);
  /** Bumped by each save: the condition builder starts empty again. */
  const [generation, setGeneration] = useState(0);
  const edit = (p: DataPolicyView) => {
    setTable(p.table);
    setColumns(p.allowed_columns.join(', '));
    setFilter(JSON.stringify(p.row_filter, null, 2));
    document.getElementById('policy-table')?.focus();
  };
  const reset = () => {
    setTable('');
    setColumns('*');
    setFilter('{}');
    setGeneration((g) => g + 1);
  };
  return {
    table,
    setTable,
    columns,
    setColumns,
    filter,
    setFilter,
    filterInvalid,
    setFilterInvalid,
    generation,
    edit,
    reset,
  };
}
type PolicyDraft = ReturnType<typeof usePolicyDraft>;

function PolicyForm({
  role,
  status,
  draft,
  saved,
}: {
  role: DataRoleView;
  status: Actions;
  draft: PolicyDraft;
  saved(notice: string): Promise<void>;
}) {
  const { table, setTable, columns, setColumns, filter, setFilter, filterInvalid, setFilterInvalid } = draft;
  const save = async () => {
    status.setNotice(null);
    const parsed = parseFilter(filter);
    if ('error' in parsed) {
      status.setNotice({ kind: 'error', error: new Error(parsed.error) });
      setFilterInvalid(true);
      document.getElementById('policy-filter')?.focus();
      return;
    }
    setFilterInvalid(false);
    const done = await status.run('save', async () => {
      const p = await api<DataPolicyView>(
        'PUT',
        `${BASE}/roles/${role.id}/policies/${encodeURIComponent(table.trim())}`,
        {
          allowed_columns: parseList(columns),
          row_filter: parsed.value,
        },
      );
      draft.reset();
      await saved(`Policy on ${p.table} saved.`);
    });
    if (!done) setFilterInvalid(true);
  };
  return (
    <Form id="policy-form" onSubmit={save}>
      <h3>{role.builtin ? 'Built-in role: its grant cannot change' : 'Add or replace a table policy'}</h3>
      <div class="row">
        <Field id="policy-table" label="Table" hint="An identifier, schema.table, or * for every table">
          <input
            type="text"
            id="policy-table"
            required
            maxLength={130}
            placeholder="sales or schema.sales or *"
            aria-describedby={hintFor('policy-table')}
            value={table}
            onInput={(e) => setTable(e.currentTarget.value)}
          />
        </Field>
        <Field id="policy-columns" label="Allowed columns" hint="* or a comma-separated list">
          <input
            type="text"
            id="policy-columns"
            required
            placeholder="* or region, amount"
            aria-describedby={hintFor('policy-columns')}
            value={columns}
            onInput={(e) => setColumns(e.currentTarget.value)}
          />
        </Field>
      </div>
      <Field id="policy-filter" label="Row filter (JSON)" hint={FILTER_HELP}>
        <textarea
          id="policy-filter"
          rows={6}
          spellcheck={false}
          class="code"
          aria-describedby={hintFor('policy-filter')}
          aria-invalid={filterInvalid ? 'true' : undefined}
          value={filter}
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
      </Field>
      <LeafBuilder key={draft.generation} status={status} filter={filter} setFilter={setFilter} />
      <div class="actions">
        <Submit id="policy-save" text="Save policy" disabled={role.builtin || status.busy === 'save'} />
      </div>
    </Form>
  );
}

/** "Build a condition": one leaf ANDed into the filter text. */
function LeafBuilder({ status, filter, setFilter }: { status: Actions; filter: string; setFilter(v: string): void }) {
  const [leafColumn, setLeafColumn] = useState('');
  const [leafOp, setLeafOp] = useState<Operator>('eq');
  const [leafValue, setLeafValue] = useState('');
  const [leafInvalid, setLeafInvalid] = useState(false);
  const addLeaf = () => {
    status.setNotice(null);
    const parsed = parseFilter(filter);
    if ('error' in parsed) {
      status.setNotice({ kind: 'error', error: new Error(parsed.error) });
      return;
    }
    if (!leafColumn.trim()) {
      setLeafInvalid(true);
      status.setNotice({
        kind: 'error',
        error: new Error('Column: name the column the condition tests (e.g. region).'),
      });
      document.getElementById('leaf-column')?.focus();
      return;
    }
    setLeafInvalid(false);
    setFilter(JSON.stringify(andLeaf(parsed.value, leafOf(leafColumn.trim(), leafOp, leafValue)), null, 2));
  };
  return (
    <fieldset class="leaf">
      <legend>Build a condition</legend>
      <div class="row">
        <Field id="leaf-column" label="Column">
          <input
            type="text"
            id="leaf-column"
            placeholder="region"
            aria-invalid={leafInvalid ? 'true' : undefined}
            value={leafColumn}
            onInput={(e) => setLeafColumn(e.currentTarget.value)}
          />
        </Field>
        <Field id="leaf-op" label="Operator">
          <Select
            id="leaf-op"
            value={leafOp}
            onChange={(v) => setLeafOp(OPERATORS.find((o) => o === v) ?? 'eq')}
            options={OPERATORS.map((o) => [o, o])}
          />
        </Field>
        <Field id="leaf-value" label="Value">
          <input
            type="text"
            id="leaf-value"
            placeholder="EU, or $user_id, or a, b for in"
            value={leafValue}
            onInput={(e) => setLeafValue(e.currentTarget.value)}
          />
        </Field>
        <button type="button" class="secondary" id="leaf-add" onClick={addLeaf}>
          Add condition (AND)
        </button>
      </div>
    </fieldset>
  );
}
