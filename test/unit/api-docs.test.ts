/**
 * docs/api.md and the route definitions agree (web/routes/: one definition per route, which
 * test/integration/openapi.test.ts holds against the express router and the OpenAPI validator):
 * every defined operation has a row in one of docs/api.md's route tables, and every route a table
 * names is defined. A row lists one or more methods and one path; paths compare with each
 * `{parameter}` as one segment and without a query (`?…`) or an optional query (`[?…]`).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '../../web/routes/index.js';
import { routeErrors } from '../../web/routes/define.js';

const API_MD = fileURLToPath(new URL('../../docs/api.md', import.meta.url).href.replace('/dist/', '/'));

/** The browser UI's files (express.static: `/`, `/*.js`, `/assets/…`): documented, not routes. */
const isStatic = (op: string) => /^get (\/|\/\*\.[a-z]+|\/assets\/.+)$/.test(op);

/** A path as the comparison takes it. */
function shape(path: string): string {
  return (
    path
      .replace(/\[\?.*\]$/, '')
      .replace(/\?.*$/, '')
      .replace(/\{[^}]*\}(\.\{[^}]*\})?/g, '{}')
      .replace(/(.)\/$/, '$1') || '/'
  );
}

/** One row of docs/api.md's route tables: its `method path` pairs, and the codes its last cell (errors) names. */
interface Row {
  ops: string[];
  codes: string[];
  text: string;
}

/** The rows of docs/api.md's route tables: each path in a row's path cell (`/a` (and `/b`)) with each of its methods. */
function rows(md: string): Row[] {
  const out: Row[] = [];
  for (const m of md.matchAll(
    /^\| ((?:GET|POST|PUT|PATCH|DELETE)(?:, (?:GET|POST|PUT|PATCH|DELETE))*) \| ([^|]*(?:\\\|[^|]*)*) \|(.*)$/gm,
  )) {
    const paths = [...m[2]!.matchAll(/`(\/[^`]*)`/g)].map((p) => p[1]!);
    const ops = m[1]!.split(', ').flatMap((method) => paths.map((path) => `${method.toLowerCase()} ${shape(path)}`));
    const cells = m[3]!.split(/(?<!\\)\|/).filter((c, i, all) => i < all.length - 1 || c.trim());
    const codes = [...new Set((cells.at(-1) ?? '').match(/ERR_[A-Z0-9_]+/g) ?? [])].sort();
    out.push({ ops, codes, text: m[0]!.slice(0, 90) });
  }
  return out;
}

/** The `method path` pairs docs/api.md's tables name. */
function documented(md: string): Set<string> {
  return new Set(rows(md).flatMap((r) => r.ops));
}

t.test('every defined operation is in docs/api.md, and every route it names is defined', async (t) => {
  const docs = documented(readFileSync(API_MD, 'utf8'));
  const defined = new Set(ROUTES.map(({ method, path }) => `${method} ${shape(path)}`));
  t.same(
    [...defined].filter((op) => !docs.has(op)),
    [],
    'defined, not in docs/api.md: add its row',
  );
  t.same(
    [...docs].filter((op) => !defined.has(op) && !isStatic(op)),
    [],
    'in docs/api.md, not defined: a route that does not exist (or a path spelled otherwise)',
  );
});

t.test("each row's errors are its routes' own codes (web/routes/: `errors`)", async (t) => {
  const byOp = new Map(ROUTES.map((d) => [`${d.method} ${shape(d.path)}`, d]));
  for (const row of rows(readFileSync(API_MD, 'utf8'))) {
    const defs = row.ops.map((op) => byOp.get(op)).filter((d) => d !== undefined);
    if (!defs.length) continue;
    const own = [...new Set(defs.flatMap((d) => d.errors ?? []))].sort();
    const may = new Set(defs.flatMap((d) => [...routeErrors(d)]));
    t.same(
      row.codes.filter((c) => !may.has(c as never)),
      [],
      `${row.text}: names codes its routes' definitions do not give`,
    );
    t.same(
      own.filter((c) => !row.codes.includes(c)),
      [],
      `${row.text}: its routes' definitions give codes the row does not name`,
    );
  }
});

t.test('the comparison', async (t) => {
  t.equal(shape('/api/chat/sessions/{id}/turns/{turnId}/events?after=SEQ'), '/api/chat/sessions/{}/turns/{}/events');
  t.equal(shape('/api/identity/agent-policy[?user_id=]'), '/api/identity/agent-policy');
  t.equal(shape('/api/chat/attachments/{uuid}.{png|svg}'), '/api/chat/attachments/{}');
  t.equal(shape('/accounts/{provider}/login/callback/'), '/accounts/{}/login/callback');
  t.same(
    [...documented('| GET, PATCH | `/api/x/{id}` | who |\n| POST | `/api/y` (and `/api/z`) | who |\nnot a row')],
    ['get /api/x/{}', 'patch /api/x/{}', 'post /api/y', 'post /api/z'],
  );
});
