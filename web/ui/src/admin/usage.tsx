// Usage, cost and budgets (docs/usage.md): /api/admin/usage (the report by user, team or model per
// UTC day or month, and its CSV) and /api/admin/budgets (caps per user or team; setting one that
// exists changes its amount, which counts from the user's next turn).
import { useState } from 'preact/hooks';
import type {
  BudgetInputView,
  BudgetList,
  BudgetView,
  OrganisationList,
  TeamList,
  UsageReportView,
} from '../../../admin-api.js';
import { api, ApiError } from '../api.js';
import { Field, Section, Select, Status, Table, useActions, useLoad, useUserPicker, type Column } from './common.js';
import { Form, NameCell, Page, PageLoading, RowActions, RowButton, Submit } from './forms.js';

const day = (d: Date) => d.toISOString().slice(0, 10);
const GROUPS: [string, string][] = [
  ['user', 'User'],
  ['team', 'Team'],
  ['model', 'Model'],
];
const PERIODS: [string, string][] = [
  ['day', 'Day (UTC)'],
  ['month', 'Month (UTC)'],
];
const METRICS: [string, string][] = [
  ['tokens', 'Tokens (input + output)'],
  ['cost', 'Cost'],
];
const SCOPES: [string, string][] = [
  ['user', 'A user'],
  ['team', 'A team'],
];

interface Filter {
  from: string;
  to: string;
  group: string;
  period: string;
}

const query = (f: Filter) => new URLSearchParams({ ...f }).toString();

export function UsagePage() {
  const [filter, setFilter] = useState<Filter>({
    from: day(new Date(Date.now() - 29 * 86_400_000)),
    to: day(new Date()),
    group: 'user',
    period: 'day',
  });
  const [shown, setShown] = useState<Filter>(filter);
  const status = useActions();
  const [report, failed, reload] = useLoad(
    () => api<UsageReportView>('GET', `/api/admin/usage?${query(shown)}`),
    [query(shown)],
  );
  const page = {
    cls: 'admin usage',
    title: 'Usage',
    intro: 'What chat turns used and cost, per user, team or model, per UTC day or month; and the budgets that cap it.',
  };
  if (!report) return <PageLoading {...page} failed={failed} />;
  const set = (k: keyof Filter) => (v: string) => setFilter((f) => ({ ...f, [k]: v }));
  const show = () => status.run('show', async () => setShown({ ...filter }));
  return (
    <Page {...page}>
      <Section title="Report">
        <Form id="usage-filter" class="row" onSubmit={show}>
          <Field id="usage-from" label="From (UTC)">
            <input
              id="usage-from"
              type="date"
              value={filter.from}
              onInput={(e) => set('from')(e.currentTarget.value)}
            />
          </Field>
          <Field id="usage-to" label="To (UTC)">
            <input id="usage-to" type="date" value={filter.to} onInput={(e) => set('to')(e.currentTarget.value)} />
          </Field>
          <Field id="usage-group" label="By">
            <Select id="usage-group" options={GROUPS} value={filter.group} onChange={set('group')} />
          </Field>
          <Field id="usage-period" label="Per">
            <Select id="usage-period" options={PERIODS} value={filter.period} onChange={set('period')} />
          </Field>
          <Submit id="usage-show" text="Show" disabled={status.busy === 'show'} />
          <a id="usage-csv" href={`/api/admin/usage.csv?${query(shown)}`} download>
            Download CSV
          </a>
        </Form>
        <Status id="usage-status" notice={status.notice} />
        <UsageTable report={report} />
      </Section>
      <Budgets onChange={reload} />
    </Page>
  );
}

function UsageTable({ report }: { report: UsageReportView }) {
  const n = (v: number) => v.toLocaleString('en');
  const cols: Column<UsageReportView['rows'][number]>[] = [
    { title: report.period === 'day' ? 'Day' : 'Month', render: (r) => r.period },
    {
      title: report.group === 'user' ? 'User' : report.group === 'team' ? 'Team' : 'Model',
      render: (r) => r.name ?? (r.key === null ? 'No team' : `#${r.key}`),
    },
    { title: 'Turns', render: (r) => n(r.turns) },
    { title: 'Input tokens', render: (r) => n(r.input_tokens) },
    { title: 'Output tokens', render: (r) => n(r.output_tokens) },
    { title: 'Tool calls', render: (r) => n(r.tool_calls) },
    { title: 'Mails', render: (r) => n(r.mails) },
    { title: 'Sandbox min', render: (r) => r.sandbox_minutes.toFixed(1) },
    {
      title: `Cost${report.currency ? ` (${report.currency})` : ''}`,
      render: (r) => r.cost.toFixed(r.cost && r.cost < 0.01 ? 6 : 2),
    },
  ];
  return (
    <Table
      id="usage-table"
      rows={report.rows}
      rowKey={(r) => `${r.period}/${String(r.key)}`}
      empty="No usage in this range."
      cols={cols}
    />
  );
}

/** Every team as a choice, "Organisation / Team", by name. */
async function teamChoices(): Promise<[string, string][]> {
  const { organisations } = await api<OrganisationList>('GET', '/api/identity/organisations');
  const lists = await Promise.all(
    organisations.map(async (o) => {
      const { teams } = await api<TeamList>('GET', `/api/identity/organisations/${o.id}/teams`);
      return teams.map((t): [string, string] => [String(t.id), `${o.name} / ${t.name}`]);
    }),
  );
  return lists.flat().sort((a, b) => a[1].localeCompare(b[1]));
}

function Budgets({ onChange }: { onChange(): Promise<void> }) {
  const [data, failed, reload] = useLoad(() => api<BudgetList>('GET', '/api/admin/budgets'));
  const [teams] = useLoad(teamChoices);
  const status = useActions();
  const formStatus = useActions();
  const picker = useUserPicker('budget-user', { required: true });
  const [form, setForm] = useState({ scope: 'user', team: '', metric: 'tokens', period: 'day', amount: '' });
  if (!data) return <PageLoading cls="budgets" title="Budgets" failed={failed} />;
  const set = (k: keyof typeof form) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const save = () =>
    formStatus.run('save', async () => {
      if (form.scope === 'team' && !form.team) throw new Error('Choose a team.');
      const subject = form.scope === 'user' ? await picker.resolve() : Number(form.team);
      const body = {
        scope: form.scope,
        subject_id: subject,
        metric: form.metric,
        period: form.period,
        amount: Number(form.amount),
      } as BudgetInputView;
      try {
        await api<BudgetView>('POST', '/api/admin/budgets', body);
      } catch (err) {
        // One per subject, metric and period: setting it again changes its amount.
        const id =
          err instanceof ApiError && err.code === 'ERR_USAGE_BUDGET_EXISTS'
            ? (err.detail as { budget_id?: number }).budget_id
            : undefined;
        if (!id) throw err;
        await api<BudgetView>('PATCH', `/api/admin/budgets/${id}`, { amount: body.amount });
      }
      await reload();
      await onChange();
      formStatus.ok('Budget saved: it counts from the next turn.');
    });
  const remove = (b: BudgetView) =>
    status.run(`delete-${b.id}`, async () => {
      await api('DELETE', `/api/admin/budgets/${b.id}`);
      await reload();
      status.ok('Budget removed.');
    });
  const cols = budgetColumns(status.busy, remove);
  return (
    <Section title="Budgets">
      <Status id="budgets-status" notice={status.notice} />
      <Table id="budgets-table" rows={data.budgets} rowKey={(b) => b.id} empty="No budgets." cols={cols} />
      <Form id="budget-form" onSubmit={save}>
        <Field id="budget-scope" label="Budget for">
          <Select id="budget-scope" options={SCOPES} value={form.scope} onChange={set('scope')} />
        </Field>
        {form.scope === 'user' ? (
          <Field id="budget-user" label="User">
            {picker.field}
          </Field>
        ) : (
          <Field id="budget-team" label="Team">
            {teams?.length ? (
              <Select
                id="budget-team"
                options={[['', 'Choose a team…'], ...teams]}
                value={form.team}
                onChange={set('team')}
              />
            ) : (
              <p id="budget-team">{teams ? 'No teams yet: add one under Teams.' : 'Loading teams…'}</p>
            )}
          </Field>
        )}
        <Field id="budget-metric" label="Metric">
          <Select id="budget-metric" options={METRICS} value={form.metric} onChange={set('metric')} />
        </Field>
        <Field id="budget-period" label="Per">
          <Select id="budget-period" options={PERIODS} value={form.period} onChange={set('period')} />
        </Field>
        <Field id="budget-amount" label="Amount">
          <input
            id="budget-amount"
            type="number"
            min={0}
            step="any"
            value={form.amount}
            onInput={(e) => set('amount')(e.currentTarget.value)}
            required
          />
        </Field>
        <Status id="budget-form-status" notice={formStatus.notice} />
        <Submit id="budget-save" text="Set budget" disabled={formStatus.busy === 'save'} />
      </Form>
    </Section>
  );
}

/** The budgets table's columns: whose, the amount, what is used of it, and Remove. */
function budgetColumns(busy: string | null, remove: (b: BudgetView) => unknown): Column<BudgetView>[] {
  return [
    {
      title: 'For',
      render: (b) => (
        <NameCell
          name={b.subject ?? `#${b.subject_id} (gone)`}
          badge={b.scope}
        >{`${b.period === 'day' ? 'daily' : 'monthly'} ${b.metric}`}</NameCell>
      ),
    },
    { title: 'Amount', render: (b) => b.amount.toLocaleString('en') },
    { title: 'Used', render: (b) => `${b.used.toLocaleString('en')} (${Math.floor(b.ratio * 100)} %)` },
    {
      title: 'Actions',
      render: (b) => (
        <RowActions>
          <RowButton
            text="Remove"
            cls="danger"
            label={`Remove the budget of ${b.subject ?? b.subject_id}`}
            disabled={busy === `delete-${b.id}`}
            onClick={() => void remove(b)}
          />
        </RowActions>
      ),
    },
  ];
}
