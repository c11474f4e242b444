import { randomBytes } from 'node:crypto';
import { Secret, type Config } from '../core/index.js';
import type { OAuthConnectorLookup, OAuthConnectorSettings } from '../core/connector-oauth.js';
import { startTickets, type TicketsEmulator } from '../emulator/tickets.js';

/** The callback path of connector OAuth (web/connector-oauth-routes.ts CONNECTOR_CALLBACK_PATH; daemon/ takes nothing else of web/). */
const CALLBACK_PATH = '/api/connections/callback';

/**
 * The demo's OAuth connector, Acme Tickets (emulator/tickets.ts: an SDK-built MCP server with its
 * own oidc-provider authorization server), and the lookup that offers it to every user. The demo
 * user signs in at the tracker with the same username and password as at Airlock. Until the
 * connector registry takes it, the lookup stands in for the registry entry (docs/connectors.md).
 */
export async function startDemoTickets(config: Readonly<Config>, user: { username: string; password: string }): Promise<{ tickets: TicketsEmulator; lookup: OAuthConnectorLookup }> {
  const clientSecret = randomBytes(16).toString('hex');
  const tickets = await startTickets({ users: { [user.username]: user.password }, clients: [{ client_id: 'airlock-demo', client_secret: clientSecret, redirect_uris: [config.publicOrigin + CALLBACK_PATH] }] });
  const entry: OAuthConnectorSettings = { id: 'tickets', label: 'Acme Tickets', url: tickets.url, clientId: 'airlock-demo', clientSecret: new Secret(clientSecret) };
  return { tickets, lookup: { get: async (id) => (id === entry.id ? entry : undefined), forUser: async () => [entry] } };
}
