/**
 * The OpenAPI 3.1 document of the web app, served at GET /api/openapi.json, built from the route
 * definitions (web/routes/: one per route, with its body's zod schema); docs/api.md has the prose
 * (answers, error codes). test/integration/openapi.test.ts validates the document
 * (@readme/openapi-parser) and walks the express router at run time: a new route fails it until
 * it has its definition, and a definition without a route fails it too.
 */
import { z } from 'zod';
import { ERROR_CATALOGUE, type ErrorCode } from '../core/index.js';
import { routeErrors } from './routes/define.js';
import { ROUTES, type RouteDef, type Who } from './routes/index.js';

const SECURITY: Record<Who, Record<string, string[]>[]> = {
  anyone: [],
  'idp-redirect': [],
  user: [{ session: [] }],
  manager: [{ session: [] }],
  superuser: [{ session: [] }],
  agent: [{ agentToken: [] }],
  internal: [{ internalSecret: [] }],
  node: [{ nodeSignature: [] }],
};

/** Build the document (server URL = the public origin). */
export function openApiDocument(publicOrigin: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of ROUTES) {
    const { method, path, tag, who, summary, body, bodyOptional } = def;
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const unsafe =
      method !== 'get' &&
      path.startsWith('/api/') &&
      !path.startsWith('/api/internal/') &&
      !path.startsWith('/api/fleet/');
    paths[path] ??= {};
    paths[path][method] = {
      tags: [tag],
      summary,
      description: `Who: ${who}.${unsafe ? ' Needs X-CSRF-Token.' : ''} Details: docs/api.md.`,
      ...(params.length ? { parameters: params } : {}),
      ...(body ? { requestBody: requestBody(body, !bodyOptional) } : {}),
      security: SECURITY[who],
      responses: responses(def),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Airlock', version: '1', description: 'The Airlock daemon web API. Prose reference: docs/api.md.' },
    servers: [{ url: publicOrigin }],
    paths,
    components: {
      securitySchemes: {
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'airlock.sid',
          description: 'Browser session; unsafe /api methods also need X-CSRF-Token (GET /api/auth/csrf).',
        },
        agentToken: { type: 'http', scheme: 'bearer', description: 'AGENT_USER_TOKEN (sandbox host route only).' },
        internalSecret: { type: 'http', scheme: 'bearer', description: 'MCP_INTERNAL_SECRET.' },
        nodeSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Airlock-Node-Signature',
          description:
            'HMAC-SHA256 with AIRLOCK_NODE_SECRET over method, path, node, time, nonce, user and body hash (docs/deploy.md).',
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string', pattern: '^ERR_[A-Z0-9_]+$' }, message: { type: 'string' } },
            },
          },
        },
      },
    },
  };
}

/**
 * A body's JSON Schema from its zod schema, as the request is written (`io: input`: defaults are
 * optional); a check zod cannot express in JSON Schema (a row filter's own validation) shows as
 * any value there, and the handler still applies it.
 */
function requestBody(schema: z.ZodType, required: boolean): Record<string, unknown> {
  return { required, content: { 'application/json': { schema: jsonSchema(schema, 'input') } } };
}

/**
 * A route's answers: its success status with the response's JSON Schema (as written by the server,
 * `io: output`), and one answer per error status with the codes the route gives at that status.
 */
function responses(def: RouteDef): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const status of [def.status ?? 200].flat()) {
    out[String(status)] = def.response
      ? { description: 'Success', content: { 'application/json': { schema: jsonSchema(def.response, 'output') } } }
      : { description: def.answer ?? (status === 204 ? 'No content' : 'Success') };
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrors(def)) {
    const status = ERROR_CATALOGUE[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: codes.join(', '),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes } } } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

/** A zod schema as JSON Schema without its dialect line; a check JSON Schema cannot express shows as any value. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return json;
}
