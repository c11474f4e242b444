/**
 * What one HTTP route of the web app is, defined once (docs/architecture.md, "Routes defined
 * once"): its method and path, who may call it, what it does, and the zod schema of its JSON body
 * (the same schema object its handler validates with). From these the app serves its OpenAPI 3.1
 * document (web/openapi.ts), and tests hold the express router and docs/api.md to them
 * (test/integration/openapi.test.ts, test/unit/api-docs.test.ts).
 */
import type { z } from 'zod';

/** Who may call a route (the document's `security`, and the security matrix test's expectations). */
export type Who = 'anyone' | 'user' | 'superuser' | 'manager' | 'agent' | 'internal' | 'idp-redirect' | 'node';

export interface RouteDef {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The full path in OpenAPI form (`/api/chat/sessions/{id}`). */
  path: string;
  /** The area it belongs to (the document's tag). */
  tag: string;
  who: Who;
  /** One line for people; docs/api.md has the prose (answers, error codes). */
  summary: string;
  /** The JSON body's schema, as the handler validates it; absent: no JSON body (or one read otherwise: uploads, forms). */
  body?: z.ZodType;
  /** The body may be left out (the handler reads a missing one as `{}`). */
  bodyOptional?: true;
}

/** The routes of one area (their tag). */
export function area(tag: string, routes: Omit<RouteDef, 'tag'>[]): RouteDef[] {
  return routes.map((r) => ({ ...r, tag }));
}
