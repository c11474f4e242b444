// The browser UI's shell: header (nav, theme switch, user, log out), hash routes (#/login,
// #/chat…, #/admin/<page>), the sign-in page. The chat page (chat.tsx) and the admin pages
// (admin/) are mounted into <main>. Loaded as a module from /assets/ under the strict CSP.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { LoginResponse, SsoProviderList, UserView } from '../../admin-api.js';
import { api, ApiError, setCsrf } from './api.js';
import { chatPage } from './chat.js';
import { sharePage } from './chat-share.js';
import { adminPages } from './admin/index.js';

let me: UserView | null | undefined;

async function loadMe(): Promise<void> {
  try {
    me = await api<UserView>('GET', '/api/auth/me');
  } catch (e) {
    me = null;
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
  }
}

const THEME_KEY = 'airlock-theme';

function effectiveTheme(): 'light' | 'dark' {
  const saved = document.documentElement.dataset.theme;
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Switches between light and dark and remembers the choice; follows the system until then. */
function ThemeToggle() {
  const [dark, setDark] = useState(effectiveTheme() === 'dark');
  // The settings page changed the scheme (settings.tsx applyTheme): show it.
  useEffect(() => {
    const on = () => setDark(effectiveTheme() === 'dark');
    window.addEventListener('airlock-theme', on);
    return () => window.removeEventListener('airlock-theme', on);
  }, []);
  const flip = () => {
    const next = effectiveTheme() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // Storage blocked: the choice lasts for this page only.
    }
    setDark(next === 'dark');
  };
  return (
    <button
      type="button"
      class="secondary small theme-toggle"
      id="theme-toggle"
      aria-pressed={dark ? 'true' : 'false'}
      onClick={flip}
    >
      Dark mode
    </button>
  );
}

function Nav({ hash }: { hash: string }) {
  if (!me) return null;
  const links: [string, string][] = [['#/chat', 'Chat']];
  if (me.is_superuser) for (const p of adminPages) if (!p.hidden) links.push([`#/admin/${p.id}`, p.title]);
  return (
    <>
      {links.map(([href, text]) => (
        <a key={href} href={href} aria-current={hash.startsWith(href) ? 'page' : undefined}>
          {text}
        </a>
      ))}
    </>
  );
}

function Who() {
  return (
    <>
      <ThemeToggle />
      {me ? (
        <>
          <a href="#/settings" id="settings-link" title="Settings">
            {me.display_name || me.username}
          </a>
          <button class="secondary" type="button" id="logout" onClick={() => void logout()}>
            Log out
          </button>
        </>
      ) : null}
    </>
  );
}

function renderHeader(hash: string): void {
  render(<Nav hash={hash} />, document.getElementById('nav')!);
  render(<Who key={me ? me.id : 0} />, document.getElementById('who')!);
}

async function logout(): Promise<void> {
  await api('POST', '/api/auth/logout').catch(() => {
    // Already logged out: the page signs out all the same.
  });
  me = null;
  setCsrf(null); // the token belonged to the ended session: the next sign-in fetches a new one
  location.hash = '#/login';
  void route();
}

function SsoButtons() {
  const [providers, setProviders] = useState<SsoProviderList['providers']>([]);
  useEffect(() => {
    api<SsoProviderList>('GET', '/api/auth/sso-providers')
      .then((r) => setProviders(r.providers))
      .catch(() => {
        // No SSO configured.
      });
  }, []);
  if (!providers.length) return <div class="sso" id="sso" />;
  return (
    <div class="sso" id="sso">
      <p class="muted">Or use your workspace account:</p>
      {providers.map((p) => (
        // A real form post (not fetch): the server answers with a redirect to the provider.
        <form key={p.id} method="post" action="/_login/browser/v1/auth/provider/redirect">
          <input type="hidden" name="provider" value={p.id} />
          <input type="hidden" name="process" value="login" />
          <input type="hidden" name="callback_url" value={`${location.origin}/#/chat`} />
          <button type="submit" class="secondary">
            Sign in with {p.name || p.id}
          </button>
        </form>
      ))}
    </div>
  );
}

function LoginPage() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setError('');
    try {
      const r = await api<LoginResponse>('POST', '/api/auth/login', { username, password });
      setCsrf(r.csrf_token);
      await loadMe();
      location.hash = afterLogin() ?? '#/chat';
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401
          ? 'Wrong username or password.'
          : e instanceof Error
            ? e.message
            : String(e),
      );
    }
  };
  return (
    <div class="panel login">
      <form aria-labelledby="login-title" onSubmit={(e) => void submit(e)}>
        <h1 id="login-title">Sign in to Airlock</h1>
        <label for="username">Username</label>
        <input
          id="username"
          name="username"
          autocomplete="username"
          required
          value={username}
          onInput={(e) => setUsername(e.currentTarget.value)}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <div role="alert" class="error" id="login-error">
          {error}
        </div>
        <div class="login-actions">
          <button type="submit">Sign in</button>
        </div>
      </form>
      {/* SSO buttons are forms of their own, so they sit beside the password form, not inside it. */}
      <SsoButtons />
    </div>
  );
}

const main = document.getElementById('main')!;

const AFTER_LOGIN = 'airlock-after-login';
/** The page a signed-out visitor asked for (a shared chat's link), once. */
function afterLogin(): string | null {
  const h = sessionStorage.getItem(AFTER_LOGIN);
  sessionStorage.removeItem(AFTER_LOGIN);
  return h && h.startsWith('#/share/') ? h : null;
}

async function route(): Promise<void> {
  const hash = location.hash || '#/chat';
  if (me === undefined) await loadMe().catch(() => {});
  // Unmount what Preact shows (its timers stop: live sessions, sync polling), then empty <main>.
  render(null, main);
  main.replaceChildren();
  // The chat page fills the window (its input stays in view); other pages scroll as documents.
  document.body.dataset.page = hash.startsWith('#/chat') && me ? 'chat' : 'doc';
  if (!me && hash !== '#/login') {
    // A shared chat's link opens after the sign-in (chat-share.tsx).
    if (hash.startsWith('#/share/')) sessionStorage.setItem(AFTER_LOGIN, hash);
    location.hash = '#/login';
    return;
  }
  // Single sign-on ends on #/chat (the identity provider's way back): a shared chat's link the
  // visitor opened before signing in comes first, as after a password sign-in.
  const next = me && hash === '#/chat' ? afterLogin() : null;
  if (next) {
    location.hash = next;
    return;
  }
  renderHeader(hash);
  try {
    if (hash === '#/login') {
      render(
        me ? (
          <p>
            You are signed in. <a href="#/chat">Go to chat</a>
          </p>
        ) : (
          <LoginPage />
        ),
        main,
      );
    } else if (hash.startsWith('#/chat')) main.append(await chatPage(hash));
    else if (hash.startsWith('#/share/')) main.append(sharePage(hash));
    else if (hash === '#/settings') {
      const { SettingsPage } = await import('./settings.js'); // its own chunk, like the admin pages
      if ((location.hash || '#/chat') === hash) render(<SettingsPage />, main);
    } else if (hash.startsWith('#/admin/')) {
      const id = hash.slice('#/admin/'.length).split('/')[0];
      const page = adminPages.find((p) => p.id === id);
      const Page = page ? await page.load() : null;
      if ((location.hash || '#/chat') !== hash) return; // left while the page's code loaded
      render(Page ? <Page /> : <p>No such page.</p>, main);
    } else
      render(
        <p>
          Not found. <a href="#/chat">Go to chat</a>
        </p>,
        main,
      );
  } catch (e) {
    render(
      <div class="banner error" role="alert">
        Could not load this page: {e instanceof Error ? e.message : String(e)}
      </div>,
      main,
    );
  }
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => void route());
void route();
