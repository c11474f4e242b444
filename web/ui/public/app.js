// Airlock browser UI shell. Hash routes: #/login, #/chat, #/admin/... The chat page is the
// TypeScript bundle built from web/ui/src (served at /assets/chat.js); the admin pages are plain
// ES modules in this folder.
import { h, clear, api, state, ApiError, fmtTime } from './lib.js';
import { chatPage } from './assets/chat.js';
import { themeToggle } from './theme-toggle.js';
import { adminPages } from './admin.js';

const main = document.getElementById('main');

async function loadMe() {
  try {
    state.me = await api('GET', '/api/auth/me');
  } catch (e) {
    state.me = null;
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
  }
  renderHeader();
}

function renderHeader() {
  const nav = document.getElementById('nav');
  const who = document.getElementById('who');
  clear(nav);
  clear(who);
  if (!state.me) {
    who.append(themeToggle());
    return;
  }
  const links = [['#/chat', 'Chat']];
  if (state.me.is_superuser) {
    for (const p of adminPages) links.push([`#/admin/${p.id}`, p.title]);
  }
  for (const [href, text] of links) {
    const a = h('a', { href }, text);
    if (location.hash.startsWith(href)) a.setAttribute('aria-current', 'page');
    nav.append(a);
  }
  who.append(
    themeToggle(),
    h('span', {}, state.me.display_name || state.me.username),
    h('button', { class: 'secondary', type: 'button', id: 'logout', onclick: logout }, 'Log out'),
  );
}

async function logout() {
  await api('POST', '/api/auth/logout').catch(() => {});
  state.me = null;
  state.csrf = null; // the token belonged to the ended session: the next sign-in fetches a new one
  location.hash = '#/login';
  route();
}

function loginPage() {
  const err = h('div', { role: 'alert', class: 'error', id: 'login-error' });
  const user = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true });
  const pass = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const form = h('form', { 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Sign in to Airlock'),
    h('label', { for: 'username' }, 'Username'), user,
    h('label', { for: 'password' }, 'Password'), pass,
    err,
    h('div', { style: 'margin-top:12px' }, h('button', { type: 'submit' }, 'Sign in')),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    try {
      await api('POST', '/api/auth/login', { username: user.value, password: pass.value });
      await loadMe();
      location.hash = '#/chat';
    } catch (e) {
      err.textContent = e.status === 401 ? 'Wrong username or password.' : e.message;
    }
  });
  // SSO buttons are forms of their own, so they sit beside the password form, not inside it.
  const sso = h('div', { class: 'sso', id: 'sso' });
  api('GET', '/api/auth/sso-providers').then((r) => {
    const providers = Array.isArray(r) ? r : r.providers || [];
    if (!providers.length) return;
    sso.append(h('p', { class: 'muted' }, 'Or use your workspace account:'));
    for (const p of providers) {
      // A real form post (not fetch): the server answers with a redirect to the provider.
      sso.append(h('form', { method: 'post', action: '/_login/browser/v1/auth/provider/redirect' },
        h('input', { type: 'hidden', name: 'provider', value: p.id || p.provider }),
        h('input', { type: 'hidden', name: 'process', value: 'login' }),
        h('input', { type: 'hidden', name: 'callback_url', value: `${location.origin}/#/chat` }),
        h('button', { type: 'submit', class: 'secondary' }, `Sign in with ${p.name || p.display_name || p.id}`),
      ));
    }
  }).catch(() => { /* no SSO configured */ });
  return h('div', { class: 'panel login' }, form, sso);
}

async function route() {
  const hash = location.hash || '#/chat';
  if (state.me === undefined) await loadMe().catch(() => {});
  clear(main);
  // The chat page fills the window (its input stays in view); other pages scroll as documents.
  document.body.dataset.page = hash.startsWith('#/chat') && state.me ? 'chat' : 'doc';
  if (!state.me && hash !== '#/login') {
    location.hash = '#/login';
    return;
  }
  renderHeader();
  try {
    if (hash === '#/login') main.append(state.me ? h('p', {}, 'You are signed in. ', h('a', { href: '#/chat' }, 'Go to chat')) : loginPage());
    else if (hash.startsWith('#/chat')) main.append(await chatPage(hash));
    else if (hash.startsWith('#/admin/')) {
      const id = hash.slice('#/admin/'.length).split('/')[0];
      const page = adminPages.find((p) => p.id === id);
      main.append(page ? await page.render() : h('p', {}, 'No such page.'));
    } else main.append(h('p', {}, 'Not found. ', h('a', { href: '#/chat' }, 'Go to chat')));
  } catch (e) {
    main.append(h('div', { class: 'banner error', role: 'alert' }, `Could not load this page: ${e.message}`));
  }
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', route);
route();
export { fmtTime };
