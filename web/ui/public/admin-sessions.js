// Live sessions (restart, kill): GET /api/admin/sessions, POST /api/admin/sessions/:id/restart|kill.
// Without a Docker engine the server answers 503 and this page says so. The list re-reads itself
// every REFRESH_MS while the page is shown (and not while an operation runs).
import { h, api, fmtTime, table } from './lib.js';
import { statusArea, act, section, pageTitle, errorNode, clip, focusKey, restoreFocus } from './admin-common.js';

/** How often the list re-reads the server while the page is open. */
export const REFRESH_MS = 5000;

function sessionsTable(sessions, op) {
  return table(sessions, [
    { key: 'title', title: 'Chat', render: (s) => h('div', {}, clip(s.title || '(untitled chat)', 'name'), h('div', { class: 'muted small' }, h('code', {}, s.id))) },
    { key: 'user', title: 'User', render: (s) => s.username ? clip(s.display_name ? `${s.display_name} (${s.username})` : s.username, 'name') : h('span', { class: 'muted' }, s.user_id === null || s.user_id === undefined ? '—' : `#${s.user_id}`) },
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
  ], { id: 'sessions-table', empty: 'No live sessions.' });
}

async function sessionsPage() {
  const root = h('div', { class: 'admin sessions' }, pageTitle('Live sessions', 'Running agent sandboxes. Restart starts a fresh sandbox for the session; kill ends it. The list refreshes itself every few seconds.'));
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
  const holder = h('div', { id: 'sessions-holder' });
  const updated = h('p', { class: 'muted small', id: 'sessions-updated' });
  let busy = false;
  let timer = null;
  const show = (data) => {
    const sessions = Array.isArray(data) ? data : data.sessions || [];
    // Keep the keyboard user's place across the refresh (same button, or the same row).
    const key = holder.contains(document.activeElement) ? focusKey(document.activeElement) : null;
    holder.replaceChildren(sessionsTable(sessions, op));
    if (key) restoreFocus(holder, key);
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}.`;
  };
  const refresh = async () => {
    timer = null;
    if (!root.isConnected) return; // the page was left: stop
    if (!busy) {
      try {
        show(await api('GET', '/api/admin/sessions'));
      } catch (e) {
        status.error(e);
      }
    }
    timer = setTimeout(refresh, REFRESH_MS);
  };
  const op = (s, what, btn) => act(btn, status, async () => {
    const name = s.title ? `"${s.title}"${s.username ? ` of ${s.username}` : ''}` : s.id;
    const question = what === 'kill'
      ? `Kill session ${name}? Its sandbox ends now; the chat stays and starts a new sandbox on the next message.`
      : `Restart session ${name}? A turn that is running is cut off; the chat goes on in a fresh sandbox.`;
    if (!confirm(question)) return;
    busy = true;
    try {
      await api('POST', `/api/admin/sessions/${encodeURIComponent(s.id)}/${what}`);
      show(await api('GET', '/api/admin/sessions'));
      status.ok(what === 'kill' ? `Session ${name} killed.` : `Session ${name} restarted.`);
    } finally {
      busy = false;
    }
  });
  show(r);
  root.append(section('Sessions', status.el, holder, updated));
  timer = setTimeout(refresh, REFRESH_MS);
  void timer;
  return root;
}

export const sessionPages = [{ id: 'sessions', title: 'Live sessions', render: sessionsPage }];
