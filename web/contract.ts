/**
 * The route contract check (AIRLOCK_CONTRACT_LOG; the test runner sets it for every test): each
 * JSON answer of the web app is held to its route's definition (web/routes/): a success answer to
 * the definition's `response` schema and `status`, an error answer's code to the codes the route
 * may give (`routeErrors`). What disagrees is appended to the file as one JSON line, and the test
 * runner fails the run naming each one. So every test that calls a route also checks its answer
 * against the one definition the OpenAPI document and docs/api.md are made from. Unset, nothing is
 * installed and nothing is checked.
 */
import { appendFileSync } from 'node:fs';
import type { Express, Request } from 'express';
import { ROUTES, type RouteDef } from './routes/index.js';
import { routeErrors } from './routes/define.js';

interface Matcher {
  def: RouteDef;
  re: RegExp;
  /** The path in express form (`:id`), to tell apart two definitions that both match. */
  express: string;
  /** How many characters of the path are not parameters: the more specific definition wins a tie. */
  literal: number;
}

const escape = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

const MATCHERS: Matcher[] = ROUTES.map((def) => {
  const parts = def.path.split(/\{[^}]+\}/);
  return {
    def,
    re: new RegExp(`^${parts.map(escape).join('[^/]+')}/?$`),
    express: def.path.replace(/\{([^}]+)\}/g, ':$1'),
    literal: parts.join('').length,
  };
});

/** The definition of the route that answered `req` (its full path), if any. */
export function definitionOf(method: string, path: string, routePath?: string): RouteDef | undefined {
  const m = method.toLowerCase();
  const found = MATCHERS.filter((x) => x.def.method === m && x.re.test(path));
  if (found.length <= 1) return found[0]?.def;
  const byRoute = routePath ? found.filter((x) => x.express.endsWith(routePath)) : [];
  const pool = byRoute.length ? byRoute : found;
  return pool.sort((a, b) => b.literal - a.literal)[0]!.def;
}

/** What is wrong with answering `body` with `status` to a call of `def` (null: nothing). */
export function contractProblem(def: RouteDef, status: number, body: unknown): string | null {
  if (status >= 400) {
    const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
    if (typeof code !== 'string') return `error answer ${status} without error.code`;
    return routeErrors(def).has(code as never) ? null : `answers ${code}, which its definition does not list (errors)`;
  }
  if (status < 200 || status >= 300) return null;
  const want = [def.status ?? 200].flat();
  if (!want.includes(status as never)) return `answers ${status}, its definition says ${want.join(' or ')}`;
  if (!def.response) return 'answers JSON, but its definition has no response schema';
  const parsed = def.response.safeParse(body);
  if (parsed.success) return null;
  return `the answer does not match its response schema: ${parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ')}`;
}

/** Install the check on every JSON answer of `app`, writing what disagrees to `file`. */
export function useContractCheck(app: Express, file: string): void {
  const seen = new Set<string>();
  app.use((req: Request, res, next) => {
    const path = req.path;
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const def = definitionOf(req.method, path, (req.route as { path?: unknown } | undefined)?.path as string);
      const problem = def ? contractProblem(def, res.statusCode, body) : null;
      const key = `${req.method} ${def?.path} ${problem}`;
      if (def && problem && !seen.has(key)) {
        seen.add(key);
        appendFileSync(
          file,
          `${JSON.stringify({ route: `${def.method.toUpperCase()} ${def.path}`, status: res.statusCode, problem })}\n`,
        );
      }
      return json(body);
    };
    next();
  });
}
