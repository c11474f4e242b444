/**
 * The rig of the connector OAuth tests: the demo ticket tracker (an SDK-built MCP server and its
 * oidc-provider authorization server, emulator/tickets.ts), the web app with a connector lookup,
 * a browser-like walk through the authorization server's login and consent forms, and an MCP
 * client calling the tracker with a token.
 */
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Secret } from '../../core/index.js';
import type { OAuthConnectorLookup, OAuthConnectorSettings } from '../../core/connector-oauth.js';
import { startTickets, type TicketsEmulator } from '../../emulator/tickets.js';
import { CONNECTOR_CALLBACK_PATH } from '../../web/connector-oauth-routes.js';
import type { WebServices } from '../../web/context.js';
import type { Page } from 'playwright-core';
import { addUser, startTestAppWithOrigin, type TestApp } from './app.js';
import type { Client } from './client.js';

export const CLIENT_ID = 'airlock-tickets';
export const CLIENT_SECRET = 'tickets-client-secret-0123456789';
export const PASSWORD = 'correct horse battery';
/** Accounts at the tracker's authorization server. */
export const TRACKER_USERS = { alice: 'alice-tracker-pw-1', bob: 'bob-tracker-pw-22' };

/** A lookup over a fixed list (the registry's seam); `audience` limits who may use a connector. */
export function staticLookup(
  list: () => OAuthConnectorSettings[],
  audience: Record<string, number[]> = {},
): OAuthConnectorLookup {
  const allowed = (id: string, userId: number) => !audience[id] || audience[id].includes(userId);
  return {
    get: async (id) => list().find((c) => c.id === id),
    forUser: async (userId) => list().filter((c) => allowed(c.id, userId)),
    mayUse: async (id, userId) => allowed(id, userId),
  };
}

export interface OAuthRig {
  app: TestApp;
  origin: string;
  tickets: TicketsEmulator;
  settings: OAuthConnectorSettings;
  lookup: OAuthConnectorLookup;
  close(): Promise<void>;
}

/** The app (on this pass's engine) and the tracker, registered as the connector `tickets`. */
export async function startOAuthRig(
  t: { teardown(fn: () => unknown): void },
  o: { accessTokenTtlS?: number; services?: Partial<WebServices> } = {},
): Promise<OAuthRig> {
  // Registered once the tracker runs (its client needs the app's origin first).
  const registry: OAuthConnectorSettings[] = [];
  const lookup = staticLookup(() => registry);
  const { app, origin } = await startTestAppWithOrigin(t, {
    services: { ...o.services, oauthConnectors: lookup },
  });
  const tickets = await startTickets({
    users: TRACKER_USERS,
    clients: [
      { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [origin + CONNECTOR_CALLBACK_PATH] },
    ],
    accessTokenTtlS: o.accessTokenTtlS,
  });
  t.teardown(() => tickets.close());
  const settings: OAuthConnectorSettings = {
    id: 'tickets',
    label: 'Acme Tickets',
    url: tickets.url,
    clientId: CLIENT_ID,
    clientSecret: new Secret(CLIENT_SECRET),
  };
  registry.push(settings);
  // The registry's row too: a user's grant references its connector (migration 060).
  await app.database.sql
    .insertInto('connectors')
    .values({
      id: settings.id,
      label: settings.label,
      url: settings.url,
      auth_kind: 'oauth',
      oauth_client_id: CLIENT_ID,
    })
    .execute();
  return { app, origin, tickets, settings, lookup, close: () => tickets.close() };
}

/** A signed-in user of the app. */
export async function signedIn(rig: OAuthRig, username: string): Promise<{ client: Client; userId: number }> {
  const user = await addUser(rig.app.database, username, PASSWORD);
  const client = rig.app.client();
  const r = await client.login(username, PASSWORD);
  if (r.status !== 200) throw new Error(`login ${username}: ${r.status}`);
  return { client, userId: user.id };
}

/**
 * Walk from the authorization URL through the authorization server's pages as a browser would:
 * follow redirects with the server's cookies, post the login form, then the consent form. Stops
 * at the first redirect back to `callbackPrefix` and returns that URL (not fetched).
 */
export async function authorizeInBrowser(
  authorizationUrl: string,
  callbackPrefix: string,
  login: { username: string; password: string },
): Promise<string> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(callbackPrefix)) return url;
    const res = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      jar.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
    }
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).href;
      method = 'GET';
      body = undefined;
      await res.body?.cancel();
      continue;
    }
    const html = await res.text();
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action)
      throw new Error(`authorization page ${new URL(url).pathname}: ${res.status} ${html.slice(0, 200)}`);
    body = html.includes('name="username"') ? new URLSearchParams(login) : new URLSearchParams();
    method = 'POST';
    url = new URL(action, url).href;
  }
  throw new Error('too many hops in the authorization');
}

/** Start a connect as `client`, walk the authorization, and deliver the callback to the app. */
export async function connect(
  rig: OAuthRig,
  client: Client,
  login: { username: string; password: string },
  returnTo = '/#/chat/c1',
): Promise<Response> {
  const start = await client.json('POST', `/api/connections/${rig.settings.id}/connect`, { return_to: returnTo });
  if (start.status !== 200) throw new Error(`connect: ${start.status} ${JSON.stringify(start.body)}`);
  const callback = await authorizeInBrowser(start.body.authorization_url, rig.origin + CONNECTOR_CALLBACK_PATH, login);
  return client.request('GET', callback.slice(rig.origin.length));
}

/** Call one of the tracker's tools over MCP (Streamable HTTP) with a bearer token. */
export async function callTracker(
  url: string,
  token: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ text: string; isError: boolean }> {
  const mcp = new McpClient({ name: 'test', version: '1' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  try {
    const r = (await mcp.callTool({ name: tool, arguments: args })) as {
      content: { type: string; text?: string }[];
      isError?: boolean;
    };
    return { text: r.content.map((c) => c.text ?? '').join(''), isError: r.isError === true };
  } finally {
    await mcp.close();
  }
}

/** The status of a bare MCP request with this token (401 once it is revoked or unknown). */
export async function trackerStatus(url: string, token: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  await res.body?.cancel();
  return res.status;
}

/**
 * In a real browser at the tracker's authorization server: wait for its login form, sign in as
 * `username`, allow on its consent form. Returns the origin the login form was on.
 */
export async function signInAndAllow(page: Page, username: keyof typeof TRACKER_USERS): Promise<string> {
  await page.waitForSelector('input[name="username"]');
  const origin = new URL(page.url()).origin;
  await page.fill('input[name="username"]', username);
  await page.fill('input[name="password"]', TRACKER_USERS[username]);
  await page.click('button:has-text("Sign in")');
  await page.click('button:has-text("Allow")');
  return origin;
}
