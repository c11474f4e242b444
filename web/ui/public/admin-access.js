// Data-access admin pages: data roles and their per-table policies (row-filter editor), assignments,
// effective policy with its explanation, and the action log. API: /api/data-authorization
// (docs/data-access.md). Pages say so plainly when the server does not have the API.
import { h, clear, api, fmtTime, table } from './lib.js';
import { field, input, select, statusArea, act, parseList, section, pageTitle, json, errorNode, userPicker, swap, clip } from './admin-common.js';

const BASE = '/api/data-authorization';

function notAvailable(e) {
  if (e && e.status === 404 && e.code === 'ERR_NOT_FOUND') {
    return h('div', { class: 'banner info', role: 'status' }, 'Data-access control is not available on this server (', h('code', {}, e.code), ').');
  }
  return errorNode(e);
}

async function guarded(title, intro, build) {
  const root = h('div', { class: 'admin access' }, pageTitle(title, intro));
  try {
    await build(root);
  } catch (e) {
    root.append(notAvailable(e));
  }
  return root;
}

// ---------------------------------------------------------------- roles and policies

const FILTER_HELP = 'JSON: {} for all rows; a leaf {"column":"region","op":"eq","value":"EU"}; or {"all":[…]} / {"any":[…]}. '
  + 'Operators: eq neq lt lte gt gte in not_in is_null. Values "$user_id" and "$username" stand for the user.';

function rolesPage(opts = {}) {
  return guarded('Data roles and policies', 'A user reads a table only through a data role that grants it. Policies are per table: allowed columns and a row filter.', async (root) => {
    const status = statusArea('role-status');
    const { roles } = await api('GET', `${BASE}/roles`);
    const rerender = async (open, notice) => swap(root, await rolesPage({ open, notice }));
    const detail = h('div', { id: 'role-detail' });
    const openRole = async (r, notice) => {
      clear(detail);
      try { detail.append(await policiesSection(r, (n) => rerender(r.id, n), notice)); } catch (e) { detail.append(errorNode(e)); }
    };
    root.append(section('Roles',
      table(roles, [
        { key: 'name', title: 'Role', render: (r) => [clip(r.name, 'name'), r.builtin ? [" ", h("span", { class: "badge" }, "built-in")] : null] },
        { key: 'description', title: 'Description', render: (r) => clip(r.description) },
        { key: 'policy_count', title: 'Policies' },
        { key: 'assignment_count', title: 'Assigned' },
        { key: 'actions', title: 'Actions', render: (r) => {
          const open = h('button', { type: 'button', class: 'secondary', 'data-role-policies': String(r.id), 'aria-label': `Policies of ${r.name}` }, 'Policies');
          open.addEventListener('click', async () => {
            await openRole(r);
            detail.querySelector('h2')?.focus();
          });
          const del = h('button', { type: 'button', class: 'danger', disabled: r.builtin, 'aria-label': `Delete role ${r.name}` }, 'Delete');
          del.addEventListener('click', () => act(del, status, async () => {
            if (!confirm(`Delete role ${r.name}? Its policies and assignments go too.`)) return;
            await api('DELETE', `${BASE}/roles/${r.id}`);
            await rerender();
          }));
          return h('div', { class: 'row compact' }, open, del);
        } },
      ], { id: 'roles-table', empty: 'No roles.' }),
      roleForm(status, (role, n) => rerender(role.id, n)),
      status.el));
    root.append(detail);
    const toOpen = opts.open && roles.find((r) => r.id === opts.open);
    if (toOpen) await openRole(toOpen, opts.notice);
  });
}

function roleForm(status, done) {
  const name = input({ id: 'role-name', required: true, maxlength: 64, pattern: '[A-Za-z][A-Za-z0-9_.\\-]{0,63}' });
  const desc = input({ id: 'role-description', maxlength: 500 });
  const add = h('button', { type: 'submit', id: 'role-create' }, 'Create role');
  const form = h('form', { id: 'role-form' }, h('h3', {}, 'New role'),
    h('div', { class: 'row' }, field('Role name', name, 'Letters, digits, _ . -; starts with a letter'), field('Description', desc), add));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(add, status, async () => {
      const role = await api('POST', `${BASE}/roles`, { name: name.value.trim(), ...(desc.value.trim() ? { description: desc.value.trim() } : {}) });
      await done(role, `Role ${role.name} created.`);
    });
  });
  return form;
}

async function policiesSection(role, changed, notice) {
  const status = statusArea('policy-status');
  if (notice) status.ok(notice);
  const { policies } = await api('GET', `${BASE}/roles/${role.id}/policies`);
  const box = section(`Policies of ${role.name}`);
  box.querySelector('h2').setAttribute('tabindex', '-1');
  const tableInput = input({ id: 'policy-table', required: true, maxlength: 130, placeholder: 'sales or schema.sales or *' });
  const cols = input({ id: 'policy-columns', required: true, value: '*', placeholder: '* or region, amount' });
  const filter = h('textarea', { id: 'policy-filter', rows: 6, spellcheck: 'false', class: 'code' }, '{}');
  filter.value = '{}';
  const save = h('button', { type: 'submit', id: 'policy-save', disabled: role.builtin }, 'Save policy');
  const edit = (p) => {
    tableInput.value = p.table;
    cols.value = p.allowed_columns.join(', ');
    filter.value = JSON.stringify(p.row_filter, null, 2);
    tableInput.focus();
  };
  box.append(table(policies, [
    { key: 'table', title: 'Table', render: (p) => h('code', {}, p.table) },
    { key: 'allowed_columns', title: 'Columns', render: (p) => p.allowed_columns.join(', ') },
    { key: 'row_filter', title: 'Row filter', render: (p) => filterView(p.row_filter) },
    { key: 'actions', title: 'Actions', render: (p) => {
      const e = h('button', { type: 'button', class: 'secondary', 'aria-label': `Edit policy on ${p.table}` }, 'Edit');
      e.addEventListener('click', () => edit(p));
      const del = h('button', { type: 'button', class: 'danger', disabled: role.builtin, 'aria-label': `Delete policy on ${p.table}` }, 'Delete');
      del.addEventListener('click', () => act(del, status, async () => {
        await api('DELETE', `${BASE}/roles/${role.id}/policies/${encodeURIComponent(p.table)}`);
        await changed(`Policy on ${p.table} deleted.`);
      }));
      return h('div', { class: 'row compact' }, e, del);
    } },
  ], { id: 'policies-table', empty: 'No policies: this role grants nothing yet.' }));

  // Row-filter helpers: insert a leaf, or wrap what is there in all/any.
  const leafCol = input({ id: 'leaf-column', placeholder: 'region' });
  const leafOp = select(['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'is_null'].map((o) => [o, o]), { id: 'leaf-op' });
  const leafVal = input({ id: 'leaf-value', placeholder: 'EU, or $user_id, or a, b for in' });
  const addLeaf = h('button', { type: 'button', class: 'secondary', id: 'leaf-add' }, 'Add condition (AND)');
  addLeaf.addEventListener('click', () => {
    status.clear();
    const parsed = parseFilter(filter.value);
    if (parsed.error) { status.error(new Error(parsed.error)); return; }
    if (!leafCol.value.trim()) {
      leafCol.setAttribute('aria-invalid', 'true');
      status.error(new Error('Column: name the column the condition tests (e.g. region).'));
      leafCol.focus();
      return;
    }
    leafCol.removeAttribute('aria-invalid');
    const leaf = { column: leafCol.value.trim(), op: leafOp.value, value: leafValue(leafOp.value, leafVal.value) };
    const cur = parsed.value;
    let next;
    if (!cur || !Object.keys(cur).length) next = leaf;
    else if (Array.isArray(cur.all)) next = { all: [...cur.all, leaf] };
    else next = { all: [cur, leaf] };
    filter.value = JSON.stringify(next, null, 2);
  });
  const form = h('form', { id: 'policy-form' },
    h('h3', {}, role.builtin ? 'Built-in role: its grant cannot change' : 'Add or replace a table policy'),
    h('div', { class: 'row' }, field('Table', tableInput, 'An identifier, schema.table, or * for every table'), field('Allowed columns', cols, '* or a comma-separated list')),
    field('Row filter (JSON)', filter, FILTER_HELP),
    h('fieldset', { class: 'leaf' }, h('legend', {}, 'Build a condition'),
      h('div', { class: 'row' }, field('Column', leafCol), field('Operator', leafOp), field('Value', leafVal), addLeaf)),
    h('div', { class: 'actions' }, save));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.clear();
    const parsed = parseFilter(filter.value);
    if (parsed.error) { status.error(new Error(parsed.error)); filter.setAttribute('aria-invalid', 'true'); filter.focus(); return; }
    filter.removeAttribute('aria-invalid');
    act(save, status, async () => {
      const t = tableInput.value.trim();
      const p = await api('PUT', `${BASE}/roles/${role.id}/policies/${encodeURIComponent(t)}`, { allowed_columns: parseList(cols.value), row_filter: parsed.value });
      await changed(`Policy on ${p.table} saved.`);
    }).then(() => {
      if (status.el.querySelector('[role=alert]')) filter.setAttribute('aria-invalid', 'true');
    });
  });
  box.append(form, status.el);
  return box;
}

const OPS = { eq: '=', neq: '≠', lt: '<', lte: '≤', gt: '>', gte: '≥', in: 'in', not_in: 'not in' };

/** A row filter as a sentence: region = "EU" AND (owner_id = 7 OR …). */
export function filterText(f, depth = 0) {
  if (!f || typeof f !== 'object' || !Object.keys(f).length) return 'all rows';
  const group = (list, word) => {
    const inner = list.map((x) => filterText(x, depth + 1)).join(` ${word} `);
    return depth && list.length > 1 ? `(${inner})` : inner;
  };
  if (Array.isArray(f.all)) return group(f.all, 'AND');
  if (Array.isArray(f.any)) return group(f.any, 'OR');
  if (f.op === 'is_null') return `${f.column} ${f.value === false ? 'is not null' : 'is null'}`;
  const v = Array.isArray(f.value) ? `[${f.value.map((x) => JSON.stringify(x)).join(', ')}]` : JSON.stringify(f.value);
  return `${f.column} ${OPS[f.op] || f.op} ${v}`;
}

function filterView(f) {
  if (!f || !Object.keys(f).length) return h('span', { class: 'muted' }, 'all rows');
  return h('div', { class: 'filter' }, h('code', {}, filterText(f)), h('details', {}, h('summary', {}, 'JSON'), json(f)));
}

function parseFilter(text) {
  const s = String(text || '').trim();
  if (!s) return { value: {} };
  try {
    const v = JSON.parse(s);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { error: 'Row filter: must be a JSON object, e.g. {} or {"column":"region","op":"eq","value":"EU"}.' };
    return { value: v };
  } catch (e) {
    return { error: `Row filter is not valid JSON: ${e.message}` };
  }
}

function scalar(s) {
  const t = s.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t !== '' && /^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}

function leafValue(op, text) {
  if (op === 'in' || op === 'not_in') return text.split(',').map(scalar).filter((v) => v !== '');
  if (op === 'is_null') return text.trim() !== 'false';
  return scalar(text);
}

// ---------------------------------------------------------------- assignments and effective policy

function assignmentsPage() {
  return guarded('Assignments and effective policy', 'Who holds which data role, and what a user may read as a result.', async (root) => {
    const status = statusArea('assign-status');
    const [{ roles }, list] = await Promise.all([api('GET', `${BASE}/roles`), api('GET', `${BASE}/assignments?limit=200`)]);
    const rerender = async () => swap(root, await assignmentsPage());
    const who = userPicker({ id: 'assign-user', required: true });
    const rolePick = select(roles.map((r) => [String(r.id), r.name]), { id: 'assign-role' });
    const add = h('button', { type: 'submit', id: 'assign-create' }, 'Assign');
    const form = h('form', { id: 'assign-form', class: 'row' }, field('User', who.input), who.list, field('Role', rolePick), add);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      act(add, status, async () => {
        await api('POST', `${BASE}/assignments`, { user_id: await who.resolve(), role_id: Number(rolePick.value) });
        await rerender();
      });
    });
    root.append(section('Assignments',
      table(list.assignments, [
        { key: 'username', title: 'User', render: (a) => clip(`${a.username} (id ${a.user_id})`, 'name') },
        { key: 'role', title: 'Role' },
        { key: 'created_at', title: 'Since', render: (a) => fmtTime(a.created_at) },
        { key: 'actions', title: 'Actions', render: (a) => {
          const show = h('button', { type: 'button', class: 'secondary', 'aria-label': `Effective policy of ${a.username}` }, 'Effective policy');
          show.addEventListener('click', () => { effUser.value = String(a.user_id); effForm.requestSubmit(); });
          const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Remove ${a.role} from ${a.username}` }, 'Remove');
          del.addEventListener('click', () => act(del, status, async () => {
            await api('DELETE', `${BASE}/assignments/${a.id}`);
            await rerender();
          }));
          return h('div', { class: 'row compact' }, show, del);
        } },
      ], { id: 'assignments-table', empty: 'No assignments.' }),
      list.total > list.assignments.length ? h('p', { class: 'muted' }, `Showing ${list.assignments.length} of ${list.total}.`) : null,
      h('h3', {}, 'New assignment'), form, status.el));

    const effStatus = statusArea('eff-status');
    const eff = userPicker({ id: 'eff-user', required: true });
    const effUser = eff.input;
    const go = h('button', { type: 'submit', id: 'eff-show' }, 'Show effective policy');
    const out = h('div', { id: 'eff-out', 'aria-live': 'polite' });
    const effForm = h('form', { id: 'eff-form', class: 'row' }, field('User', effUser), eff.list, go);
    effForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      clear(out);
      act(go, effStatus, async () => {
        const p = await api('GET', `${BASE}/users/${await eff.resolve()}/effective-policy`);
        clear(out);
        out.append(effectiveView(p));
      });
    });
    root.append(section('Effective policy', effForm, effStatus.el, out));
  });
}

function effectiveView(p) {
  const tables = [...p.tables, ...(p.any_table ? [{ ...p.any_table, table: '* (any other table)' }] : [])];
  return h('div', { class: 'effective' },
    h('p', {}, h('strong', {}, p.user.username), ` (id ${p.user.id}${p.user.is_active ? '' : ', inactive'}) · bi: `, h('strong', { id: 'eff-bi' }, p.bi ? 'yes' : 'no'),
      ' · roles: ', p.roles.length ? p.roles.map((r) => r.name).join(', ') : 'none'),
    h('ul', { id: 'eff-explanation' }, (p.explanation || []).map((x) => h('li', {}, x))),
    table(tables, [
      { key: 'table', title: 'Table', render: (t) => h('code', {}, t.table) },
      { key: 'columns', title: 'Columns', render: (t) => t.columns.join(', ') },
      { key: 'rows', title: 'Rows', render: (t) => t.all_rows ? 'all rows' : filterView(t.row_filter) },
      { key: 'explanation', title: 'Why', render: (t) => h('div', {}, t.explanation, h('ul', {}, (t.grants || []).map((g) => h('li', {}, `${g.role} on ${g.granted_on}: ${g.gives}`)))) },
    ], { id: 'eff-tables', empty: 'No table: this user reads nothing.' }));
}

// ---------------------------------------------------------------- action log

/** An account in the action log: its username (display name as a tooltip), or the bare id when it is gone. */
function who(person, id) {
  if (id === null || id === undefined) return h('span', { class: 'muted' }, '—');
  if (!person || !person.username) return h('span', { class: 'muted', title: 'account deleted' }, `#${id}`);
  return h('span', { class: 'name', title: `${person.display_name ? `${person.display_name} · ` : ''}id ${id}` }, person.username);
}

const LOG_COLS = [
  { key: 'created_at', title: 'When', render: (e) => fmtTime(e.created_at) },
  { key: 'event', title: 'Event', render: (e) => h('code', {}, e.event) },
  { key: 'severity', title: 'Severity', render: (e) => h('span', { class: `badge ${e.severity}` }, e.severity) },
  { key: 'actor', title: 'Actor', render: (e) => who(e.actor, e.actor_id) },
  { key: 'subject', title: 'Subject', render: (e) => who(e.subject, e.subject_id) },
  { key: 'data', title: 'Details', render: (e) => e.data && Object.keys(e.data).length ? h('details', {}, h('summary', {}, 'data'), json(e.data)) : '' },
];

function actionLogPage() {
  return guarded('Action log', 'Every audited action, newest first: sign-ins, data access, identity and directory changes, sessions and chats. Filter by event (a name, or a prefix like identity.*), severity and subject.', async (root) => {
    const status = statusArea('log-status');
    const ev = input({ id: 'log-event', list: 'log-events', placeholder: 'bi.denied or identity.*' });
    const events = h('datalist', { id: 'log-events' }, ['identity.*', 'identity.directory_sync.finished', 'identity.organisation.created', 'identity.team.created', 'identity.agent_policy.created',
      'data.*', 'data.role.created', 'data.policy.created', 'data.assignment.created', 'bi.*', 'bi.denied', 'bi.allowed', 'bi.entitlement.granted', 'bi.entitlement.revoked',
      'auth.*', 'account.*', 'session.*', 'chat.*']
      .map((v) => h('option', { value: v })));
    const sev = select([['', 'any'], ['info', 'info'], ['warning', 'warning'], ['critical', 'critical']], { id: 'log-severity' });
    const subjectPick = userPicker({ id: 'log-subject' });
    const subject = subjectPick.input;
    const go = h('button', { type: 'submit', id: 'log-apply' }, 'Apply filters');
    const form = h('form', { id: 'log-form', class: 'row' }, field('Event', ev), events, field('Severity', sev), field('Subject user', subject), subjectPick.list, go);
    const body = h('div', { id: 'log-rows' });
    const count = h('p', { class: 'muted', id: 'log-count', 'aria-live': 'polite' });
    const more = h('button', { type: 'button', class: 'secondary', id: 'log-more', hidden: true }, 'Older entries');
    // Keyset paging: the server's next_before is the cursor of the next (older) page; the
    // filters are fixed when the first page loads, so "Older entries" continues that query.
    let query = null;
    let before = null;
    let shown = 0;
    const tbody = () => body.querySelector('#log-table tbody');
    const render = (events, append) => {
      if (!append) {
        clear(body);
        body.append(table(events, LOG_COLS, { empty: 'No entries match.', id: 'log-table' }));
        shown = events.length;
      } else {
        const rows = table(events, LOG_COLS).querySelectorAll('tbody tr');
        tbody().append(...rows);
        shown += events.length;
      }
      count.textContent = shown ? `${shown} entr${shown === 1 ? 'y' : 'ies'} shown${before ? '; older ones remain' : ''}.` : '';
    };
    const load = async (append) => {
      if (!append) {
        const q = new URLSearchParams({ limit: '50' });
        if (ev.value.trim()) q.set('event', ev.value.trim());
        if (sev.value) q.set('severity', sev.value);
        // A new query: whatever the last one showed does not belong to it, also when it fails.
        clear(body);
        count.textContent = '';
        more.hidden = true;
        before = null;
        query = null;
        const subjectId = await subjectPick.resolve();
        if (subjectId !== null) q.set('subject_id', String(subjectId));
        query = q;
      }
      if (!query) return;
      const q = new URLSearchParams(query);
      if (append) {
        if (!before) return;
        q.set('before', String(before));
      }
      const r = await api('GET', `${BASE}/audit?${q}`);
      before = r.next_before;
      render(r.events, append);
      more.hidden = !before;
    };
    form.addEventListener('submit', (e) => { e.preventDefault(); act(go, status, () => load(false)); });
    more.addEventListener('click', () => act(more, status, async () => {
      const first = shown;
      await load(true);
      // Keep the keyboard user's place: the first of the rows just added.
      const row = tbody()?.children[first];
      if (row) { row.setAttribute('tabindex', '-1'); row.focus(); }
    }));
    await load(false);
    root.append(section('Entries', form, status.el, count, body, more));
  });
}

export const accessPages = [
  { id: 'data-roles', title: 'Data roles', render: rolesPage },
  { id: 'data-assignments', title: 'Assignments', render: assignmentsPage },
  { id: 'action-log', title: 'Action log', render: actionLogPage },
];
