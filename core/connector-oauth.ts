/**
 * OAuth per user for connectors (docs/connectors.md, "OAuth per user"): the seams between the
 * connector registry, the host's OAuth client and the egress gateway; the API's view of a
 * connection (a zod schema and its type).
 */
import { z } from 'zod';

/** The gateway's seam for a user's OAuth token (null: not connected); daemon/host/connector-tokens.ts implements it. */
export type { ConnectorTokens } from './connectors.js';

/** What the OAuth client needs of one connector (from the connector registry). */
export interface OAuthConnectorSettings {
  /** The connector's id (a slug). */
  id: string;
  /** Shown to the user: "Connect <label>". */
  label: string;
  /** The MCP server's URL (Streamable HTTP endpoint): the protected resource. */
  url: string;
  /** A client registered with the authorization server beforehand (the fallback to the client ID metadata document). */
  clientId?: string;
  /** The client's secret (a core/secret.ts Secret: revealed only for a request). */
  clientSecret?: { reveal(): string };
  /** Scopes to ask for; absent: the ones the protected-resource metadata lists (else none). */
  scope?: string;
}

/**
 * The OAuth connectors, as the registry knows them. `get` answers only a connector whose auth
 * kind is OAuth and that is enabled; `forUser` the ones a user may use (its audience).
 */
export interface OAuthConnectorLookup {
  get(connectorId: string): Promise<OAuthConnectorSettings | undefined>;
  forUser(userId: number): Promise<OAuthConnectorSettings[]>;
  /** Whether the user may use this connector (its audience); absent: everyone may. */
  mayUse?(connectorId: string, userId: number): Promise<boolean>;
  /**
   * Keep a client registered dynamically (RFC 7591) as the connector's client unless it has one
   * already, and answer the client the connector now has. Absent: no dynamic registration.
   */
  keepRegisteredClient?(
    connectorId: string,
    client: { client_id: string; client_secret?: string },
  ): Promise<{ client_id: string; client_secret?: string }>;
}

/** The view of a user's connection to an OAuth connector (never token material). */
export const ConnectorConnectionView = z.strictObject({
  connector_id: z.string(),
  label: z.string(),
  connected: z.boolean(),
  connected_at: z.string().optional(),
  access_expires_at: z.string().nullable().optional(),
  /** A refresh token is held: the connection outlives the access token. */
  offline: z.boolean().optional(),
  scope: z.string().nullable().optional(),
});
export type ConnectorConnectionView = z.infer<typeof ConnectorConnectionView>;
