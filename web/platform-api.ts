/**
 * The answers of the operations, sign-in settings, per-user connector
 * and fleet routes that have no shape module of their own: each a zod schema with a type of the
 * same name (the route definitions in web/routes/platform.ts name the schema; pages import the
 * types only).
 */
import { z } from 'zod';
import { ConnectorConnectionView } from '../core/connector-oauth.js';

/** GET /healthz (also its 503 answer's fields, beside `error`). */
export const HealthView = z.strictObject({
  ok: z.boolean(),
  database: z.enum(['sqlite', 'postgres']),
  schema_version: z.number(),
  node: z.string(),
});
export type HealthView = z.infer<typeof HealthView>;

/** GET /api/openapi.json: an OpenAPI 3.1 document (test/integration/openapi.test.ts validates it whole). */
export const OpenApiDocument = z.looseObject({ openapi: z.literal('3.1.0'), paths: z.record(z.string(), z.unknown()) });

/** POST /api/settings/password: the password changed, and the user's other web sessions ended. */
export const PasswordChanged = z.strictObject({ sessions_ended: z.number() });
export type PasswordChanged = z.infer<typeof PasswordChanged>;

/** POST /api/account/connect and POST /api/connections/{id}/connect: where the browser goes next. */
export const AuthorizationUrl = z.strictObject({ authorization_url: z.string() });
export type AuthorizationUrl = z.infer<typeof AuthorizationUrl>;

/** GET /api/connections. */
export const ConnectorConnectionList = z.strictObject({ connectors: z.array(ConnectorConnectionView) });
export type ConnectorConnectionList = z.infer<typeof ConnectorConnectionList>;

/** DELETE /api/connections/{id}. */
export const ConnectorDisconnected = z.strictObject({
  connector_id: z.string(),
  connected: z.literal(false),
  had: z.boolean(),
  revoked_at_server: z.boolean().nullable(),
});
export type ConnectorDisconnected = z.infer<typeof ConnectorDisconnected>;

/** GET /oauth/client-metadata.json: Airlock's OAuth client ID metadata document. */
export const ClientMetadata = z.strictObject({
  client_id: z.string(),
  client_name: z.string(),
  client_uri: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  token_endpoint_auth_method: z.string(),
});
export type ClientMetadata = z.infer<typeof ClientMetadata>;

/** POST /api/fleet/operator: the control socket's answer to the command, as `airlock sessions` reads it. */
export const OperatorAnswer = z.strictObject({ result: z.unknown() });
export type OperatorAnswer = z.infer<typeof OperatorAnswer>;
