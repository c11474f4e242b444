// Live sessions (restart, kill): GET /api/admin/sessions, POST /api/admin/sessions/:id/restart|kill.
// Without a Docker engine the server answers 503 and this page says so.
import { h, api, fmtTime, table } from './lib.js';
import { statusArea, act, section, pageTitle, errorNode } from './admin-common.js';

async function sessionsPage() {
  const root = h('div', { class: 'admin sessions' }, pageTitle('Live sessions', 'Running agent sandboxes. Restart starts a fresh sandbox for the session; kill ends it.'));
  const status = statusArea('sess-status');
  let r;
  try {
    r = await api('GET', '/api/admin/sessions');
  } catch (e) {
    if (e.status === 404 || e.status === 503) {
      root.append(h('div', { class: 'banner info', role: 'status', id: 'sessions-unavailable' }, `Live session management is not available on this server: ${e.message}`));
      return root;
    }
    root.append(errorNode(e));
    return root;
  }
  const sessions = Array.isArray(r) ? r : r.sessions || [];
  const reload = async () => root.replaceWith(await sessionsPage());
  const op = (s, what, btn) => act(btn, status, async () => {
    if (what === 'kill' && !confirm(`Kill session ${s.id}?`)) return;
    await api('POST', `/api/admin/sessions/${encodeURIComponent(s.id)}/${what}`);
    await reload();
  });
  root.append(section('Sessions', status.el, table(sessions, [
    { key: 'id', title: 'Session' },
    { key: 'user', title: 'User', render: (s) => s.username || s.user || s.user_id || '' },
    { key: 'container_id', title: 'Container', render: (s) => h('code', { class: 'container-id' }, s.container_id || '') },
    { key: 'status', title: 'Status', render: (s) => s.status || s.state || '' },
    { key: 'turns', title: 'Turns' },
    { key: 'started_at', title: 'Started', render: (s) => fmtTime(s.started_at || s.created_at) },
    { key: 'actions', title: 'Actions', render: (s) => {
      const restart = h('button', { type: 'button', class: 'secondary', 'aria-label': `Restart session ${s.id}` }, 'Restart');
      restart.addEventListener('click', () => op(s, 'restart', restart));
      const kill = h('button', { type: 'button', class: 'danger', 'aria-label': `Kill session ${s.id}` }, 'Kill');
      kill.addEventListener('click', () => op(s, 'kill', kill));
      return h('div', { class: 'row compact' }, restart, kill);
    } },
  ], { id: 'sessions-table', empty: 'No live sessions.' })));
  return root;
}

export const sessionPages = [{ id: 'sessions', title: 'Live sessions', render: sessionsPage }];
