// Identity admin pages: SSO connection, directory sync, organisations/teams, agent policies.
// API: /api/identity (docs/identity.md).
import { h, clear, api, fmtTime, table } from './lib.js';
import { field, input, checkbox, select, statusArea, act, parseList, section, pageTitle, json, errorNode, userPicker, swap, clip } from './admin-common.js';

// ---------------------------------------------------------------- SSO + directory sync

async function identityPage() {
  const root = h('div', { class: 'admin identity' }, pageTitle('Single sign-on and directory sync',
    'The Google connection used for "Sign in with Google" and for reading users and groups from the directory.'));
  const { connections } = await api('GET', '/api/identity/connections');
  const conn = connections.find((c) => c.provider === 'google') || null;
  root.append(connectionForm(conn));
  root.append(syncPanel(conn));
  return root;
}

function connectionForm(conn) {
  const status = statusArea('conn-status');
  const f = {
    display_name: input({ id: 'conn-display-name', value: conn ? conn.display_name : 'Google', maxlength: 100 }),
    issuer: input({ id: 'conn-issuer', type: 'url', value: conn ? conn.issuer : 'https://accounts.google.com', required: true }),
    client_id: input({ id: 'conn-client-id', value: conn ? conn.client_id : '', required: true, autocomplete: 'off' }),
    client_secret: input({ id: 'conn-client-secret', type: 'password', autocomplete: 'new-password', placeholder: conn && conn.has_client_secret ? 'stored; leave blank to keep' : '' }),
    service_account_json: h('textarea', { id: 'conn-service-account', rows: 4, spellcheck: 'false', placeholder: conn && conn.has_service_account ? 'stored; leave blank to keep' : '{"type":"service_account", …}' }),
    delegated_admin_email: input({ id: 'conn-admin-email', type: 'email', value: conn && conn.delegated_admin_email ? conn.delegated_admin_email : '', autocomplete: 'off' }),
    customer: input({ id: 'conn-customer', value: conn ? conn.customer : 'my_customer' }),
  };
  const active = checkbox('Active (offer "Sign in with …" on the login page)', { id: 'conn-active', checked: conn ? conn.is_active : true });
  const save = h('button', { type: 'submit', id: 'conn-save' }, conn ? 'Save connection' : 'Create connection');
  const summary = conn
    ? h('p', { class: 'muted', id: 'conn-summary' },
      `Client secret: ${conn.has_client_secret ? 'stored' : 'not set'} · Service account: ${conn.has_service_account ? `stored (${conn.service_account_email || 'unknown'})` : 'not set'} · Group sync: ${conn.has_group_sync ? 'configured' : 'not configured'}`)
    : h('p', { class: 'muted', id: 'conn-summary' }, 'No connection yet.');
  const form = h('form', { id: 'conn-form', class: 'grid2' },
    field('Display name', f.display_name),
    field('Issuer URL', f.issuer, 'OIDC discovery base, e.g. https://accounts.google.com'),
    field('Client ID', f.client_id),
    field('Client secret (write-only)', f.client_secret, 'Never shown again once saved.'),
    field('Service-account key JSON (write-only)', f.service_account_json, 'Needed for directory sync.'),
    field('Delegated admin e-mail', f.delegated_admin_email, 'A Workspace admin the service account acts as.'),
    field('Customer', f.customer),
    active.wrap,
    h('div', { class: 'actions' }, save),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(save, status, async () => {
      const body = {
        display_name: f.display_name.value.trim() || 'Google',
        issuer: f.issuer.value.trim(),
        client_id: f.client_id.value.trim(),
        customer: f.customer.value.trim() || 'my_customer',
        delegated_admin_email: f.delegated_admin_email.value.trim() || null,
        is_active: active.box.checked,
      };
      if (f.client_secret.value) body.client_secret = f.client_secret.value;
      if (f.service_account_json.value.trim()) body.service_account_json = f.service_account_json.value.trim();
      const saved = conn ? await api('PATCH', `/api/identity/connections/${conn.id}`, body) : await api('POST', '/api/identity/connections', { provider: 'google', ...body });
      f.client_secret.value = '';
      f.service_account_json.value = '';
      // Re-render the page with the stored state (secrets stay write-only).
      const page = form.closest('.admin');
      const fresh = swap(page, await identityPage());
      fresh.querySelector('#conn-status')?.append(h('div', { class: 'banner info', role: 'status' }, `Connection ${conn ? 'saved' : 'created'} (id ${saved.id}).`));
    });
  });
  const children = [summary, form, status.el];
  if (conn) {
    const del = h('button', { type: 'button', class: 'danger', id: 'conn-delete' }, 'Delete connection');
    del.addEventListener('click', () => act(del, status, async () => {
      if (!confirm('Delete the Google connection? Users can no longer sign in with it.')) return;
      await api('DELETE', `/api/identity/connections/${conn.id}`);
      const page = form.closest('.admin');
      swap(page, await identityPage());
    }));
    children.push(h('div', { class: 'actions' }, del));
  }
  return section('SSO connection (Google)', ...children);
}

const RESULT_KEYS = ['users_created', 'users_updated', 'users_linked', 'users_deactivated', 'users_reactivated', 'groups_created', 'groups_updated', 'groups_deleted',
  'memberships_added', 'memberships_removed', 'teams_updated', 'team_members_added', 'team_members_removed', 'policies_rewritten', 'rows_written', 'sessions_ended', 'requests', 'retries', 'duration_ms'];

function syncPanel(conn) {
  const status = statusArea('sync-status');
  const view = h('div', { id: 'sync-job', 'aria-live': 'polite' });
  const start = h('button', { type: 'button', id: 'sync-start' }, 'Start directory sync');
  let timer = null;
  let running = false;
  const render = (job) => {
    clear(view);
    if (!job) { running = false; view.append(h('p', { class: 'muted' }, 'No sync has run yet.')); return; }
    const s = job.status;
    view.append(h('p', {},
      'Status: ', h('strong', { id: 'sync-job-status', class: `job-${s}` }, s),
      ` · job ${job.id} · ${job.trigger}`,
      job.started_at ? ` · started ${fmtTime(job.started_at)}` : '',
      job.finished_at ? ` · finished ${fmtTime(job.finished_at)}` : ''));
    if (job.progress && (s === 'running' || s === 'pending')) view.append(h('p', { class: 'muted', id: 'sync-progress' }, `Progress: ${typeof job.progress === 'object' ? Object.entries(job.progress).map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ') : job.progress}`));
    if (job.error) {
      view.append(h('div', { class: 'banner error', role: 'alert', id: 'sync-error' },
        h('strong', {}, job.error.message || 'sync failed'), ' ', h('code', {}, job.error.code || ''),
        job.error.upstream_status ? ` (upstream HTTP ${job.error.upstream_status}${job.error.reason ? `, ${job.error.reason}` : ''})` : ''));
    }
    if (job.result) {
      const rows = RESULT_KEYS.filter((k) => job.result[k] !== undefined).map((k) => ({ k: k.replace(/_/g, ' '), v: job.result[k] }));
      if (job.result.fetched) rows.unshift({ k: 'fetched', v: Object.entries(job.result.fetched).map(([k, v]) => `${v} ${k}`).join(', ') });
      if (job.result.kept_last_superuser) rows.push({ k: 'kept last superuser', v: 'yes' });
      view.append(h('h3', {}, 'Last result'), table(rows, [{ key: 'k', title: 'What' }, { key: 'v', title: 'Count' }], { id: 'sync-result' }));
    }
    running = s === 'running' || s === 'pending';
    start.disabled = running;
  };
  const poll = async () => {
    timer = null;
    if (view.isConnected) seen = true;
    else if (seen) return; // the page was left: stop polling
    try {
      const { job } = await api('GET', '/api/identity/directory-sync?provider=google');
      render(job);
      if (job && (job.status === 'pending' || job.status === 'running')) timer = setTimeout(poll, 700);
    } catch (e) {
      if (e.status === 404) render(null);
      else status.error(e);
    }
  };
  let seen = false;
  start.addEventListener('click', () => act(start, status, async () => {
    const r = await api('POST', '/api/identity/directory-sync', { provider: 'google' });
    status.ok(r.created ? `Sync job ${r.job.id} started.` : `A sync is already running (job ${r.job.id}).`);
    render(r.job);
    if (timer) clearTimeout(timer);
    timer = setTimeout(poll, 300);
  }).then(() => { start.disabled = running; }));
  if (!conn) {
    return section('Directory sync', h('p', { class: 'muted' }, 'Create the connection first.'));
  }
  const note = conn.has_group_sync ? null : h('p', { class: 'muted' }, 'Group sync needs the service-account key and the delegated admin e-mail.');
  poll();
  return section('Directory sync', note, h('div', { class: 'actions' }, start), status.el, view);
}

// ---------------------------------------------------------------- organisations, teams, agent policies

async function organisationsPage(opts = {}) {
  const root = h('div', { class: 'admin orgs' }, pageTitle('Organisations, teams and agent policies',
    'Teams can follow a directory group: the sync then owns their members. Agent policies limit the tools and models of an organisation\'s members.'));
  const status = statusArea('org-status');
  const { organisations } = await api('GET', '/api/identity/organisations');
  const name = input({ id: 'org-name', required: true, maxlength: 100 });
  const add = h('button', { type: 'submit', id: 'org-create' }, 'Create organisation');
  const form = h('form', { class: 'row', id: 'org-form' }, field('New organisation name', name, 'At most 100 characters'), add);
  let detail = h('div', { id: 'org-detail' });
  const picker = select(organisations.map((o) => [String(o.id), o.name]), { id: 'org-pick' });
  const rerender = async (open, notice) => {
    const fresh = swap(root, await organisationsPage({ open, notice }));
    return fresh;
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(add, status, async () => {
      const o = await api('POST', '/api/identity/organisations', { name: name.value.trim() });
      await rerender(o.id, `Organisation ${o.name} created.`);
    });
  });
  // Rename and delete the chosen organisation (superusers).
  const current = () => organisations.find((o) => o.id === Number(picker.value));
  const renameInput = input({ id: 'org-rename', maxlength: 100, required: true });
  const renameBtn = h('button', { type: 'submit', id: 'org-rename-save', class: 'secondary' }, 'Rename');
  const renameForm = h('form', { class: 'row', id: 'org-rename-form' }, field('Rename the organisation', renameInput), renameBtn);
  renameForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const o = current();
    if (!o) return;
    act(renameBtn, status, async () => {
      const r = await api('PATCH', `/api/identity/organisations/${o.id}`, { name: renameInput.value.trim() });
      await rerender(o.id, `Renamed to ${r.name}.`);
    });
  });
  const delBtn = h('button', { type: 'button', class: 'danger', id: 'org-delete' }, 'Delete organisation');
  delBtn.addEventListener('click', () => {
    const o = current();
    if (!o) return;
    act(delBtn, status, async () => {
      if (!confirm(`Delete organisation ${o.name}? Its teams and agent policies are deleted too, and its members lose those policies.`)) return;
      await api('DELETE', `/api/identity/organisations/${o.id}`);
      await rerender(undefined, `Organisation ${o.name} deleted.`);
    });
  });
  if (opts.notice) status.ok(opts.notice);
  root.append(section('Organisations', form, status.el,
    organisations.length
      ? [field('Organisation', picker), renameForm, h('div', { class: 'actions' }, delBtn)]
      : h('p', { class: 'muted' }, 'No organisations yet.')));
  root.append(detail);
  /** (Re)build teams and agent policies together: a team change shows at once in the policies' team list. */
  const show = async () => {
    const id = Number(picker.value);
    const o = current();
    renameInput.value = o ? o.name : '';
    const fresh = h('div', { id: 'org-detail' });
    if (id) {
      try {
        fresh.append(await teamsSection(id, show), await agentPoliciesSection(id));
      } catch (e) {
        fresh.append(errorNode(e));
      }
    }
    detail = swap(detail, fresh);
  };
  picker.addEventListener('change', show);
  if (opts.open && organisations.some((o) => o.id === opts.open)) picker.value = String(opts.open);
  if (organisations.length) await show();
  root.append(effectiveAgentPolicySection());
  return root;
}

/** Members of a team not linked to a group: listed by name, removable, and a user field to add one. */
function teamMembers(t, status, changed) {
  const list = h('ul', { class: 'members', id: `team-${t.id}-members` }, (t.members || []).map((m) => {
    const rm = h('button', { type: 'button', class: 'link danger-link', 'aria-label': `Remove ${m.username} from team ${t.name}` }, 'remove');
    rm.addEventListener('click', () => act(rm, status, async () => {
      await api('DELETE', `/api/identity/teams/${t.id}/members/${m.id}`);
      await changed();
    }));
    return h('li', {}, clip(m.display_name ? `${m.display_name} (${m.username})` : m.username, 'name'), ' ', rm);
  }));
  const who = userPicker({ id: `team-${t.id}-add`, 'aria-label': `User to add to team ${t.name}` });
  const addBtn = h('button', { type: 'submit', class: 'secondary', 'aria-label': `Add member to team ${t.name}` }, 'Add');
  const form = h('form', { class: 'row compact add-member' }, who.input, who.list, addBtn);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(addBtn, status, async () => {
      await api('PUT', `/api/identity/teams/${t.id}/members/${await who.resolve()}`);
      await changed();
    });
  });
  return h('div', {}, t.members && t.members.length ? list : h('p', { class: 'muted' }, 'No members yet.'), form);
}

async function teamsSection(orgId, changed) {
  const status = statusArea('team-status');
  const [{ teams }, { groups }] = await Promise.all([
    api('GET', `/api/identity/organisations/${orgId}/teams`),
    api('GET', '/api/identity/external-groups'),
  ]);
  const groupName = (id) => { const g = groups.find((x) => x.id === id); return g ? `${g.name || g.email} <${g.email}>` : id ? `group ${id}` : ''; };
  const groupOptions = () => [['', '— not linked —'], ...groups.map((g) => [String(g.id), `${g.name || g.email} (${g.email}, ${g.member_count} members)`])];
  const box = section('Teams');
  const rows = teams.map((t) => ({ ...t }));
  box.append(table(rows, [
    { key: 'name', title: 'Team', render: (t) => clip(t.name, 'name') },
    { key: 'external_group_id', title: 'Linked group', render: (t) => t.external_group_id ? clip(groupName(t.external_group_id), 'name') : h('span', { class: 'muted' }, 'none (members managed here)') },
    { key: 'member_ids', title: 'Members', render: (t) => t.external_group_id
      ? h('span', {}, String(t.member_ids.length), h('span', { class: 'muted' }, ' (from the directory)'))
      : teamMembers(t, status, changed) },
    { key: 'actions', title: 'Actions', render: (t) => {
      const pick = select(groupOptions(), { id: `team-${t.id}-group`, 'aria-label': `Linked group for ${t.name}` });
      pick.value = t.external_group_id ? String(t.external_group_id) : '';
      const link = h('button', { type: 'button', class: 'secondary', 'aria-label': `Link ${t.name} to the chosen group` }, 'Link');
      link.addEventListener('click', () => act(link, status, async () => {
        await api('PATCH', `/api/identity/teams/${t.id}`, { external_group_id: pick.value ? Number(pick.value) : null });
        await changed();
      }));
      const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete team ${t.name}` }, 'Delete');
      del.addEventListener('click', () => act(del, status, async () => {
        if (!confirm(`Delete team ${t.name}?`)) return;
        await api('DELETE', `/api/identity/teams/${t.id}`);
        await changed();
      }));
      return h('div', { class: 'row compact' }, pick, link, del);
    } },
  ], { id: 'teams-table', empty: 'No teams yet.' }));
  // Create a team, optionally linked to a directory group (the team picker lists every synced group).
  const q = input({ id: 'team-group-search', type: 'search', placeholder: 'filter groups' });
  const gpick = select(groupOptions(), { id: 'team-group' });
  q.addEventListener('input', async () => {
    try {
      const r = await api('GET', `/api/identity/external-groups?q=${encodeURIComponent(q.value)}`);
      clear(gpick);
      for (const [v, t] of [['', '— not linked —'], ...r.groups.map((g) => [String(g.id), `${g.name || g.email} (${g.email}, ${g.member_count} members)`])]) gpick.append(h('option', { value: v }, t));
    } catch (e) { status.error(e); }
  });
  const name = input({ id: 'team-name', required: true, maxlength: 100 });
  const add = h('button', { type: 'submit', id: 'team-create' }, 'Create team');
  const form = h('form', { id: 'team-form' },
    h('div', { class: 'row' }, field('Team name', name), field('Search directory groups', q), field('Directory group', gpick, groups.length ? `${groups.length} synced groups` : 'No groups synced yet: run the directory sync.')),
    h('div', { class: 'actions' }, add));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(add, status, async () => {
      await api('POST', `/api/identity/organisations/${orgId}/teams`, { name: name.value.trim(), external_group_id: gpick.value ? Number(gpick.value) : null });
      await changed();
    });
  });
  box.append(h('h3', {}, 'New team'), form, status.el);
  return box;
}

const listText = (v) => (v === null || v === undefined ? 'any' : v.length ? v.join(', ') : 'none');

async function agentPoliciesSection(orgId) {
  const status = statusArea('policy-status');
  const [{ policies }, { teams }, catalog] = await Promise.all([
    api('GET', `/api/identity/organisations/${orgId}/agent-policies`),
    api('GET', `/api/identity/organisations/${orgId}/teams`),
    api('GET', '/api/identity/agent-catalog'),
  ]);
  const box = section('Agent policies');
  const rerender = async () => swap(box, await agentPoliciesSection(orgId));
  const teamName = (id) => (teams.find((t) => t.id === id) || { name: `team ${id}` }).name;
  box.append(table(policies, [
    { key: 'name', title: 'Policy', render: (p) => clip(p.name, 'name') },
    { key: 'applies_to', title: 'Applies to', render: (p) => p.applies_to === 'all' ? 'every member' : p.team_ids.map(teamName).join(', ') || 'no teams' },
    { key: 'allowed_tools', title: 'Tools allowed', render: (p) => listText(p.allowed_tools) },
    { key: 'allowed_models', title: 'Models allowed', render: (p) => listText(p.allowed_models) },
    { key: 'denied', title: 'Denied', render: (p) => [...p.denied_tools, ...p.denied_models].join(', ') || 'none' },
    { key: 'actions', title: 'Actions', render: (p) => {
      const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete policy ${p.name}` }, 'Delete');
      del.addEventListener('click', () => act(del, status, async () => {
        if (!confirm(`Delete agent policy ${p.name}?`)) return;
        await api('DELETE', `/api/identity/agent-policies/${p.id}`);
        await rerender();
      }));
      return del;
    } },
  ], { id: 'agent-policies-table', empty: 'No agent policies: members may use every tool and model.' }));
  const f = {
    name: input({ id: 'ap-name', required: true, maxlength: 100 }),
    applies: select([['all', 'Every member of the organisation'], ['teams', 'Only the chosen teams']], { id: 'ap-applies' }),
    allowed_tools: input({ id: 'ap-tools' }),
    allowed_models: input({ id: 'ap-models' }),
    denied_tools: input({ id: 'ap-denied-tools' }),
    denied_models: input({ id: 'ap-denied-models' }),
  };
  const teamBoxes = teams.map((t) => checkbox(t.name, { id: `ap-team-${t.id}`, value: String(t.id) }));
  const add = h('button', { type: 'submit', id: 'ap-create' }, 'Create policy');
  const form = h('form', { id: 'ap-form' },
    h('div', { class: 'row' }, field('Policy name', f.name), field('Applies to', f.applies)),
    h('fieldset', {}, h('legend', {}, 'Teams'), teamBoxes.length ? teamBoxes.map((b) => b.wrap) : h('p', { class: 'muted' }, 'No teams.')),
    h('div', { class: 'row' },
      field('Allowed tools', f.allowed_tools, `Comma-separated; blank = no restriction. Tools: ${catalog.tools.join(', ')}`),
      field('Allowed models', f.allowed_models, `Comma-separated; blank = no restriction. Models: ${catalog.models.join(', ')}`)),
    h('div', { class: 'row' },
      field('Denied tools', f.denied_tools, 'Always removed, even when allowed'),
      field('Denied models', f.denied_models, 'Always removed, even when allowed')),
    h('div', { class: 'actions' }, add));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(add, status, async () => {
      await api('POST', `/api/identity/organisations/${orgId}/agent-policies`, {
        name: f.name.value.trim(),
        applies_to: f.applies.value,
        team_ids: teamBoxes.filter((b) => b.box.checked).map((b) => Number(b.box.value)),
        allowed_tools: parseList(f.allowed_tools.value, true),
        allowed_models: parseList(f.allowed_models.value, true),
        denied_tools: parseList(f.denied_tools.value),
        denied_models: parseList(f.denied_models.value),
      });
      await rerender();
    });
  });
  box.append(h('h3', {}, 'New agent policy'), form, status.el);
  return box;
}

function effectiveAgentPolicySection() {
  const status = statusArea('eap-status');
  const who = userPicker({ id: 'eap-user', required: true });
  const go = h('button', { type: 'submit', id: 'eap-show' }, 'Show');
  const out = h('div', { id: 'eap-out', 'aria-live': 'polite' });
  const form = h('form', { class: 'row', id: 'eap-form' }, field('User', who.input), who.list, go);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    clear(out);
    act(go, status, async () => {
      const r = await api('GET', `/api/identity/agent-policy?user_id=${await who.resolve()}`);
      clear(out);
      const p = r.policy;
      out.append(h('ul', {},
        h('li', {}, `Tools: ${listText(p.tools)}`),
        h('li', {}, `Models: ${listText(p.models)}`),
        h('li', {}, `Denied: ${[...p.denied_tools, ...p.denied_models].join(', ') || 'none'}`),
        h('li', {}, p.policy_ids.length ? `From policies ${p.policy_ids.join(', ')}` : 'No policy applies: everything allowed.')));
    });
  });
  return section('Effective agent policy for a user', form, status.el, out);
}

export const identityPages = [
  { id: 'identity', title: 'SSO & sync', render: identityPage },
  { id: 'organisations', title: 'Teams & agent policies', render: organisationsPage },
];
