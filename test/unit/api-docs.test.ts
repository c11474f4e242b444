/**
 * docs/api.md and the route definitions agree (web/routes/: one definition per route, which
 * test/integration/openapi.test.ts holds against the express router and the OpenAPI validator):
 * every defined operation has a row in one of docs/api.md's route tables, and every route a table
 * names is defined. A row lists one or more methods and one path; paths compare with each
 * `{parameter}` as one segment and without a query (`?…`) or an optional query (`[?…]`).
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '../../web/routes/index.js';
import { ERROR_CATALOGUE } from '../../core/index.js';
import type { RouteDef } from '../../web/routes/define.js';

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

/** One row of docs/api.md's route tables: its `method path` pairs, its line, and whether its table has an errors column. */
interface Row {
  ops: string[];
  line: number;
  errorsColumn: boolean;
}

const ROW = /^\| ((?:GET|POST|PUT|PATCH|DELETE)(?:, (?:GET|POST|PUT|PATCH|DELETE))*) \| ([^|]*(?:\\\|[^|]*)*) \|/;

/** The rows of docs/api.md's route tables: each path in a row's path cell (`/a` (and `/b`)) with each of its methods. */
function rows(md: string): Row[] {
  const out: Row[] = [];
  let errorsColumn = false;
  md.split('\n').forEach((text, line) => {
    if (text.startsWith('| method |')) errorsColumn = /\| errors \|$/.test(text);
    const m = ROW.exec(text);
    if (!m) return;
    const paths = [...m[2]!.matchAll(/`(\/[^`]*)`/g)].map((p) => p[1]!);
    const ops = m[1]!.split(', ').flatMap((method) => paths.map((path) => `${method.toLowerCase()} ${shape(path)}`));
    out.push({ ops, line, errorsColumn });
  });
  return out;
}

/** The `method path` pairs docs/api.md's tables name. */
function documented(md: string): Set<string> {
  return new Set(rows(md).flatMap((r) => r.ops));
}

/** A row's errors cell as made from its routes' definitions: each own code with its status, by status. */
function errorsCell(defs: RouteDef[]): string {
  const codes = [...new Set(defs.flatMap((d) => d.errors ?? []))];
  return codes
    .map((c) => ({ c, s: ERROR_CATALOGUE[c].status }))
    .sort((x, y) => x.s - y.s || x.c.localeCompare(y.c))
    .map(({ c, s }) => `\`${s} ${c}\``)
    .join(', ');
}

/** docs/api.md with every errors cell made from the definitions (`AIRLOCK_UPDATE_DOCS=1` writes it). */
function withErrorCells(md: string): { text: string; stale: string[]; noColumn: string[] } {
  const byOp = new Map(ROUTES.map((d) => [`${d.method} ${shape(d.path)}`, d]));
  const lines = md.split('\n');
  const stale: string[] = [];
  const noColumn: string[] = [];
  for (const row of rows(md)) {
    const defs = row.ops.map((op) => byOp.get(op)).filter((d) => d !== undefined);
    const cell = errorsCell(defs);
    if (!row.errorsColumn) {
      if (cell) noColumn.push(lines[row.line]!);
      continue;
    }
    const cells = lines[row.line]!.split(/(?<!\\)\|/);
    const want = cell ? ` ${cell} ` : ' ';
    if (cells[cells.length - 2] === want) continue;
    stale.push(`${lines[row.line]!.slice(0, 80)}…: errors should be ${cell || '(none)'}`);
    cells[cells.length - 2] = want;
    lines[row.line] = cells.join('|');
  }
  return { text: lines.join('\n'), stale, noColumn };
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

t.test("each row's errors cell is made from its routes' definitions (web/routes/: `errors`)", async (t) => {
  const md = readFileSync(API_MD, 'utf8');
  const { text, stale, noColumn } = withErrorCells(md);
  if (process.env.AIRLOCK_UPDATE_DOCS === '1' && text !== md) writeFileSync(API_MD, text);
  t.same(noColumn, [], 'routes with codes of their own in a table without an errors column');
  t.same(
    process.env.AIRLOCK_UPDATE_DOCS === '1' ? [] : stale,
    [],
    'rows whose errors cell differs from the definitions: regenerate: AIRLOCK_UPDATE_DOCS=1 node dist/test/run.js dist/test/unit/api-docs.test.js (after npm run build)',
  );
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
