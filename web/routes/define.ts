/**
 * What one HTTP route of the web app is, defined once (docs/architecture.md, "Routes defined
 * once"): its method and path, who may call it, what it does, the zod schema of its JSON body (the
 * same schema object its handler validates with), the zod schema of its success answer (whose
 * inferred type the handler answers with and the browser reads) and the error codes it answers
 * with. From these the app serves its OpenAPI 3.1 document (web/openapi.ts); tests hold the express
 * router and docs/api.md to them (test/integration/openapi.test.ts, test/unit/api-docs.test.ts),
 * and under test every answer is checked against its definition (web/contract.ts).
 */
import type { z } from 'zod';
import type { ErrorCode } from '../../core/index.js';

/** Who may call a route (the document's `security`, and the security matrix test's expectations). */
export type Who = 'anyone' | 'user' | 'superuser' | 'manager' | 'agent' | 'internal' | 'idp-redirect' | 'node';

/** What a route answers when it succeeds. */
export type SuccessStatus = 200 | 201 | 202 | 204 | 302 | 303;

export interface RouteDef {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The full path in OpenAPI form (`/api/chat/sessions/{id}`). */
  path: string;
  /** The area it belongs to (the document's tag). */
  tag: string;
  who: Who;
  /** One line for people; docs/api.md has the prose. */
  summary: string;
  /** The JSON body's schema, as the handler validates it; absent: no JSON body (or one read otherwise: uploads, forms). */
  body?: z.ZodType;
  /** The body may be left out (the handler reads a missing one as `{}`). */
  bodyOptional?: true;
  /**
   * The success answer's JSON body; absent: the answer is not JSON (no content, a file, a
   * redirect, a page, an NDJSON stream: `answer` says which).
   */
  response?: z.ZodType;
  /** The success status (or statuses: PUT answers 201 new, 200 replaced): 200 unless named. */
  status?: SuccessStatus | readonly SuccessStatus[];
  /** What a success answer is when it is not JSON (its media type, or `redirect`). */
  answer?: string;
  /**
   * The codes this route answers with beyond those every route of its kind may give
   * (`commonErrors`: bad request bodies, the database, sign-in and CSRF by `who`).
   */
  errors?: readonly ErrorCode[];
}

/** The routes of one area (their tag). */
export function area(tag: string, routes: Omit<RouteDef, 'tag'>[]): RouteDef[] {
  return routes.map((r) => ({ ...r, tag }));
}

/** Codes any route may answer with: a request body it cannot read, the database or the app not ready, a fault. */
const ANY_ROUTE: readonly ErrorCode[] = [
  'ERR_VALIDATION',
  'ERR_BODY_TOO_LARGE',
  'ERR_BODY_ENCODING',
  'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE',
  'ERR_HTTP_UNSUPPORTED_ENCODING',
  'ERR_DB_UNAVAILABLE',
  'ERR_STARTING',
  'ERR_INTERNAL',
];

/** What the sign-in, role and CSRF checks in front of a route answer, by who may call it. */
const BY_WHO: Readonly<Record<Who, readonly ErrorCode[]>> = {
  anyone: [],
  'idp-redirect': [],
  user: ['ERR_AUTH_REQUIRED', 'ERR_AUTH_CSRF', 'ERR_AUTH_INACTIVE'],
  manager: ['ERR_AUTH_REQUIRED', 'ERR_AUTH_CSRF', 'ERR_AUTH_INACTIVE', 'ERR_AUTH_FORBIDDEN'],
  superuser: ['ERR_AUTH_REQUIRED', 'ERR_AUTH_CSRF', 'ERR_AUTH_INACTIVE', 'ERR_AUTH_FORBIDDEN'],
  agent: ['ERR_AGENT_TOKEN_INVALID', 'ERR_AGENT_TOKEN_EXPIRED', 'ERR_AGENT_TOKEN_UNCONFIGURED'],
  internal: ['ERR_AUTH_SECRET_REQUIRED', 'ERR_AUTH_SECRET_INVALID'],
  node: ['ERR_NODE_AUTH'],
};

/** The codes every route called by `who` may answer with, besides its own `errors`. */
export function commonErrors(who: Who): readonly ErrorCode[] {
  return [...ANY_ROUTE, ...BY_WHO[who]];
}

/** Every code `def` may answer with. */
export function routeErrors(def: RouteDef): ReadonlySet<ErrorCode> {
  return new Set([...commonErrors(def.who), ...(def.errors ?? [])]);
}
