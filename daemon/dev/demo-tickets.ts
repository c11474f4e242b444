import { randomBytes } from 'node:crypto';
import type { Config, Encryptor } from '../../core/index.js';
import { ConnectorService, connectorRow } from '../../domain/connectors/index.js';
import type { Sql } from '../../domain/index.js';
import { startTickets, type TicketsEmulator } from '../../emulator/tickets.js';

/** The callback path of connector OAuth (web/connector-oauth-routes.ts CONNECTOR_CALLBACK_PATH; daemon/ takes nothing else of web/). */
const CALLBACK_PATH = '/api/connections/callback';
const CLIENT_ID = 'airlock-demo';

/**
 * The demo's OAuth connector, Acme Tickets (emulator/tickets.ts: an SDK-built MCP server with its
 * own oidc-provider authorization server). The demo user signs in at the tracker with the same
 * username and password as at Airlock. `register` puts it in the connector registry (each start:
 * the tracker's port and client secret are new), for everyone, with its pre-registered client.
 */
export async function startDemoTickets(
  config: Readonly<Config>,
  user: { username: string; password: string },
): Promise<{ tickets: TicketsEmulator; register(db: Sql, enc: Encryptor): Promise<void> }> {
  const clientSecret = randomBytes(16).toString('hex');
  const tickets = await startTickets({
    users: { [user.username]: user.password },
    clients: [
      { client_id: CLIENT_ID, client_secret: clientSecret, redirect_uris: [config.publicOrigin + CALLBACK_PATH] },
    ],
  });
  const register = async (db: Sql, enc: Encryptor) => {
    const registry = new ConnectorService({ db, enc, allowHttpLoopback: true });
    // A tracker of an earlier start is gone with its grants: replaced, not kept.
    if (await connectorRow(db, 'tickets')) await registry.delete('tickets');
    await registry.create(
      {
        id: 'tickets',
        label: 'Acme Tickets',
        url: tickets.url,
        auth_kind: 'oauth',
        oauth_client_id: CLIENT_ID,
        oauth_client_secret: clientSecret,
      },
      null,
    );
  };
  return { tickets, register };
}
