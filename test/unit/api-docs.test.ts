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
import { ERROR_CATALOGUE, type ErrorCode } from '../../core/index.js';
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

/** The codes an errors cell names (a wildcard such as `ERR_MODEL_*` names none). */
const namedCodes = (cell: string) => [...cell.matchAll(/ERR_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*\*)/g)].map((m) => m[0]);

/**
 * docs/api.md's errors cells against the definitions: each row's cell names every code its
 * routes' definitions list in `errors`, and no code they cannot give. The prose around the codes
 * stays the writer's; `AIRLOCK_UPDATE_DOCS=1` appends a missing code with its status.
 */
function checkErrorCells(md: string): { text: string; missing: string[]; extra: string[]; noColumn: string[] } {
  const byOp = new Map(ROUTES.map((d) => [`${d.method} ${shape(d.path)}`, d]));
  const lines = md.split('\n');
  const missing: string[] = [];
  const extra: string[] = [];
  const noColumn: string[] = [];
  for (const row of rows(md)) {
    const defs = row.ops.map((op) => byOp.get(op)).filter((d) => d !== undefined);
    const own = [...new Set(defs.flatMap((d) => d.errors ?? []))]
      .map((c) => ({ c, s: ERROR_CATALOGUE[c].status }))
      .sort((x, y) => x.s - y.s || x.c.localeCompare(y.c));
    const text = lines[row.line]!;
    if (!row.errorsColumn) {
      if (own.length) noColumn.push(text.slice(0, 80));
      continue;
    }
    const cells = text.split(/(?<!\\)\|/);
    const cell = cells[cells.length - 2]!;
    const named = new Set(namedCodes(cell));
    const may = new Set(defs.flatMap((d) => [...routeErrors(d)]));
    for (const c of named) if (!may.has(c as ErrorCode)) extra.push(`${text.slice(0, 70)}…: ${c}`);
    const add = own.filter(({ c }) => !named.has(c));
    if (!add.length) continue;
    missing.push(`${text.slice(0, 70)}…: ${add.map(({ c }) => c).join(', ')}`);
    const list = add.map(({ c, s }) => `\`${s} ${c}\``).join(', ');
    cells[cells.length - 2] = cell.trim() && cell.trim() !== '—' ? `${cell.trimEnd()}, ${list} ` : ` ${list} `;
    lines[row.line] = cells.join('|');
  }
  return { text: lines.join('\n'), missing, extra, noColumn };
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

t.test("each row's errors cell names its routes' own codes, and only codes they give (web/routes/)", async (t) => {
  const md = readFileSync(API_MD, 'utf8');
  const { text, missing, extra, noColumn } = checkErrorCells(md);
  const update = process.env.AIRLOCK_UPDATE_DOCS === '1';
  if (update && text !== md) writeFileSync(API_MD, text);
  t.same(noColumn, [], 'routes with codes of their own in a table without an errors column');
  t.same(
    update ? [] : missing,
    [],
    'codes the definitions give that the row does not name (AIRLOCK_UPDATE_DOCS=1 adds them: node dist/test/run.js dist/test/unit/api-docs.test.js after npm run build)',
  );
  t.same(extra, [], "codes the row names that its routes' definitions do not give");
});

t.test('the codes of an errors cell', async (t) => {
  t.same(namedCodes('`404 ERR_CHAT_TURN_NOT_FOUND` (gone), `ERR_MODEL_*`, ERR_SESSION_BUSY.'), [
    'ERR_CHAT_TURN_NOT_FOUND',
    'ERR_SESSION_BUSY',
  ]);
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
