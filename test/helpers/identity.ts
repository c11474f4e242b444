import { start as startOidc, type OidcEmulator, type OidcUser } from '../../emulator/oidc.js';
import { identityEncryptor, saveConnection, type IdpConnectionRow } from '../../web/index.js';
import { Client } from './client.js';
import { startTestAppWithOrigin, type TestApp, type TestAppOptions } from './app.js';

export const CLIENT_ID = 'airlock-test-client';
export const CLIENT_SECRET = 'idp-client-secret-do-not-leak-42';

export interface SsoSetup {
  app: TestApp;
  idp: OidcEmulator;
  origin: string;
  connection: IdpConnectionRow;
}

/** The app on a known port, the emulated IdP with a client for its callback, and a google connection. */
export async function startSso(
  t: { teardown(fn: () => unknown): void },
  users: OidcUser[],
  opts: TestAppOptions = {},
): Promise<SsoSetup> {
  // The app listens first (its origin is the IdP client's redirect URI), then the IdP starts.
  const { app, origin } = await startTestAppWithOrigin(t, opts);
  const idp = await startOidc({
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${origin}/accounts/google/login/callback/`],
      },
    ],
    users,
  });
  t.teardown(() => idp.close());
  const connection = await saveConnection(app.database.sql, identityEncryptor(app.config), {
    provider: 'google',
    display_name: 'Google',
    issuer: idp.url,
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
  });
  return { app, idp, origin, connection };
}

export const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * Drive the browser part of the login: form post → IdP → (programmatic login as `sub`) → the
 * app's callback URL. Returns the callback URL (not yet visited) or the first non-redirect answer.
 */
export async function toCallback(
  s: SsoSetup,
  browser: Client,
  sub: string,
  callbackUrl = `${s.origin}/chat`,
): Promise<{ callback?: string; res: Response }> {
  const start = await browser.request(
    'POST',
    '/_login/browser/v1/auth/provider/redirect',
    form({ provider: 'google', process: 'login', callback_url: callbackUrl }),
    FORM,
  );
  if (start.status !== 303) return { res: start };
  const idpJar = new Client('');
  let loc = new URL(start.headers.get('location')!);
  for (let i = 0; i < 10; i++) {
    if (loc.origin === s.origin) return { callback: loc.href, res: start };
    if (/^\/interaction\//.test(loc.pathname) && !loc.searchParams.has('login')) loc.searchParams.set('login', sub);
    const r = await idpJar.request('GET', loc.href);
    const next = r.headers.get('location');
    if (!next) return { res: r };
    loc = new URL(next, loc);
  }
  throw new Error('redirect loop');
}

/** The whole chain, ending at the app's callback; returns the callback's answer. */
export async function ssoLogin(s: SsoSetup, browser: Client, sub: string, callbackUrl?: string): Promise<Response> {
  const { callback, res } = await toCallback(s, browser, sub, callbackUrl);
  if (!callback) return res;
  return browser.request('GET', callback.slice(s.origin.length));
}
