/**
 * Connectors (docs/connectors.md): remote MCP servers an admin registers, whose tools the agent
 * reaches through the in-sandbox proxy and the host's egress gateway, never holding a credential.
 * What host and sandbox share: the naming rules, the limits, the request schemas of the admin API
 * (zod only, no node import: the browser bundle may use them) and the seam through which the
 * gateway asks for a user's OAuth token.
 */
import { z } from 'zod';

/** A connector's id: the prefix of its tools' names (`<id>__<tool>`). No `__` inside. */
export const CONNECTOR_ID_RE = /^[a-z](?:[a-z0-9]|_(?!_)){1,31}$/;
/** A tool name Airlock offers: a plain identifier (letters, digits, `_`, `-`), no `__`. */
export const CONNECTOR_TOOL_RE = /^[A-Za-z](?:[A-Za-z0-9-]|_(?!_)){0,47}$/;
/** Between a connector's id and its tool's name in the agent's tool list. */
export const CONNECTOR_TOOL_SEPARATOR = '__';
/** Model APIs take tool names up to 64 characters. */
export const MAX_PREFIXED_TOOL_NAME = 64;
/** At most this many tools per connector. */
export const MAX_CONNECTOR_TOOLS = 128;
/** One tool's input schema, as JSON, at most this many bytes. */
export const MAX_TOOL_SCHEMA_BYTES = 16 * 1024;
/** One tool's description, at most this many characters (longer ones are cut). */
export const MAX_TOOL_DESCRIPTION = 2_000;
/** A tool result the gateway passes on, at most this many bytes of text; past it, cut with a marker. */
export const MAX_CONNECTOR_RESULT_BYTES = 64 * 1024;
/** Connector calls of one session in the gateway at once. */
export const MAX_CONNECTOR_CALLS_IN_FLIGHT = 4;

export const ConnectorTransport = z.enum(['streamable_http', 'sse']);
export type ConnectorTransport = z.infer<typeof ConnectorTransport>;
export const ConnectorAuthKind = z.enum(['none', 'header', 'bearer', 'oauth']);
export type ConnectorAuthKind = z.infer<typeof ConnectorAuthKind>;
export const ConnectorToolMode = z.enum(['enabled', 'disabled', 'ask']);
export type ConnectorToolMode = z.infer<typeof ConnectorToolMode>;

/** Who may use a connector: the same audiences as agent policies, plus named users. */
export const ConnectorAudience = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('everyone') }),
  z.strictObject({ kind: z.literal('teams'), team_ids: z.array(z.number()) }),
  z.strictObject({ kind: z.literal('users'), user_ids: z.array(z.number()) }),
]);
export type ConnectorAudience = z.infer<typeof ConnectorAudience>;

/** A tool as the server listed it, with the admin's mode. */
export const ConnectorTool = z.strictObject({
  name: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
  mode: ConnectorToolMode,
});
export type ConnectorTool = z.infer<typeof ConnectorTool>;

/** A connector as the admin API and the CLI show it: never a secret, only whether there is one. */
export const ConnectorView = z.strictObject({
  id: z.string(),
  label: z.string(),
  url: z.string(),
  transport: ConnectorTransport,
  audience: ConnectorAudience,
  auth_kind: ConnectorAuthKind,
  auth_header_name: z.string().nullable(),
  has_secret: z.boolean(),
  oauth_client_id: z.string().nullable(),
  has_oauth_client_secret: z.boolean(),
  tools: z.array(ConnectorTool),
  enabled: z.boolean(),
  tools_refreshed_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectorView = z.infer<typeof ConnectorView>;

/**
 * The seam for OAuth connectors: the user's current access token for a connector (refreshed as
 * needed by its implementation), or null when the user has not connected it. The egress gateway
 * asks it on every call; without an implementation an OAuth connector answers "connect first".
 */
export interface ConnectorTokens {
  accessToken(connectorId: string, userId: number): Promise<string | null>;
}

/** `acme` + `create_ticket` → `acme__create_ticket`. */
export function connectorToolName(connectorId: string, tool: string): string {
  return `${connectorId}${CONNECTOR_TOOL_SEPARATOR}${tool}`;
}

/** `acme__create_ticket` → { connector: 'acme', tool: 'create_ticket' }; anything else → null. */
export function splitConnectorToolName(name: string): { connector: string; tool: string } | null {
  const i = name.indexOf(CONNECTOR_TOOL_SEPARATOR);
  if (i < 0) return null;
  const connector = name.slice(0, i);
  const tool = name.slice(i + CONNECTOR_TOOL_SEPARATOR.length);
  return CONNECTOR_ID_RE.test(connector) && CONNECTOR_TOOL_RE.test(tool) ? { connector, tool } : null;
}

const HEADER_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
/** Headers a static secret may not be sent in: they carry framing or Airlock's own meaning. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'cookie',
]);

export const ConnectorAudienceSchema: z.ZodType<ConnectorAudience> = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('everyone') }).strict(),
  z.object({ kind: z.literal('teams'), team_ids: z.array(z.number().int().positive()).min(1).max(500) }).strict(),
  z.object({ kind: z.literal('users'), user_ids: z.array(z.number().int().positive()).min(1).max(5000) }).strict(),
]);

const FIELDS = {
  label: z.string().trim().min(1).max(80),
  url: z.string().min(1).max(2048),
  transport: z.enum(['streamable_http', 'sse']),
  audience: ConnectorAudienceSchema,
  auth_kind: z.enum(['none', 'header', 'bearer', 'oauth']),
  auth_header_name: z.string().regex(HEADER_NAME_RE, 'must be a plain header name').nullable(),
  auth_secret: z.string().min(1).max(8192).nullable(),
  oauth_client_id: z.string().min(1).max(512).nullable(),
  oauth_client_secret: z.string().min(1).max(8192).nullable(),
  enabled: z.boolean(),
};

/** POST /api/admin/connectors body (`transport`, `audience`, `auth_kind` have defaults: streamable_http, everyone, none). */
export const ConnectorCreateSchema = z
  .object({
    id: z
      .string()
      .regex(CONNECTOR_ID_RE, 'must be 2–32 lower-case letters, digits or single underscores, starting with a letter'),
    ...FIELDS,
  })
  .partial({
    transport: true,
    audience: true,
    auth_kind: true,
    auth_header_name: true,
    auth_secret: true,
    oauth_client_id: true,
    oauth_client_secret: true,
    enabled: true,
  })
  .strict();
/** PATCH /api/admin/connectors/:id body: any field but the id; a secret absent keeps it, null removes it. */
export const ConnectorChangeSchema = z.object(FIELDS).partial().strict();
/** PATCH /api/admin/connectors/:id/tools body: tool name → mode. */
export const ConnectorToolModesSchema = z
  .object({ modes: z.record(z.string().max(64), z.enum(['enabled', 'disabled', 'ask'])) })
  .strict();

export type ConnectorInput = z.infer<typeof ConnectorCreateSchema>;
export type ConnectorChange = z.infer<typeof ConnectorChangeSchema>;

export function isReservedHeader(name: string): boolean {
  return RESERVED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('x-airlock-');
}
