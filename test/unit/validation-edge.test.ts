/**
 * One validation story at the HTTP edge (docs/architecture.md#validation): request bodies are
 * checked with zod through web/validate.ts, and nothing in the product imports ajv. The messages
 * are for people; these cases pin the wording the API promises (docs/api.md, docs/identity.md).
 */
import t from 'tap';
import ts from 'typescript';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { isAppError } from '../../core/index.js';
import { LoginSchema, RenameSessionSchema, SendMessageSchema } from '../../core/api-requests.js';
import { CONNECTION_CREATE, ORG_BODY, POLICY_CREATE, TEAM_CREATE } from '../../web/identity/admin-schemas.js';
import {
  ASSIGN_SCHEMA,
  POLICY_PUT_SCHEMA,
  ROLE_CREATE_SCHEMA,
  ROLE_PATCH_SCHEMA,
} from '../../web/data-access/routes.js';
import { validateBody } from '../../web/validate.js';

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}
const ROOT = repoRoot();
const PRODUCT_DIRS = [
  'core',
  'domain',
  'proxy',
  'supervisor',
  'agent',
  'tools',
  'extensions',
  'web',
  'daemon',
  'emulator',
  'bench',
  'images',
];

function* walk(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (/\.(ts|tsx|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}

/** Imports (static, dynamic, re-exports) of the ajv packages themselves in a file. */
function ajvImports(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    let spec: ts.Expression | undefined;
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier) spec = n.moduleSpecifier;
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) spec = n.arguments[0];
    if (spec && ts.isStringLiteralLike(spec) && /^ajv(-formats)?(\/|$)/.test(spec.text)) {
      out.push(`${relative(ROOT, file)}:${src.getLineAndCharacterOfPosition(n.getStart()).line + 1} ${spec.text}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

t.test('nothing in the product imports ajv: request bodies are checked with zod', async (t) => {
  const found: string[] = [];
  let files = 0;
  for (const d of PRODUCT_DIRS) {
    for (const f of walk(join(ROOT, d))) {
      files++;
      found.push(...ajvImports(f));
    }
  }
  t.ok(files > 200, `product files were scanned (${files})`);
  t.same(found, [], 'no ajv import (the MCP SDK validates tool schemas with its own validator)');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  t.notOk('ajv' in pkg.dependencies || 'ajv-formats' in pkg.dependencies, 'ajv is not a run-time dependency');

  // The scanner must be able to fail.
  const dir = mkdtempSync(join(tmpdir(), 'airlock-ajv-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'uses-ajv.ts');
  writeFileSync(
    file,
    "import { Ajv } from 'ajv';\nimport addFormats from 'ajv-formats';\nconst x = await import('ajv/dist/2020.js');\nimport { z } from 'zod';\n",
  );
  t.equal(ajvImports(file).length, 3, 'the scanner sees static and dynamic ajv imports');
});

/** The ERR_VALIDATION details a body gets, or null when it passes. */
function refusal(
  schema: z.ZodType,
  body: unknown,
  code?: 'ERR_DATA_INVALID',
): { code: string; status: number; message: string; field: unknown; problems: unknown } | null {
  try {
    validateBody(schema, body, code);
    return null;
  } catch (err) {
    if (!isAppError(err)) throw err;
    return {
      code: err.code,
      status: err.status,
      message: err.message,
      field: err.details?.field,
      problems: err.details?.problems,
    };
  }
}

t.test('a refused body names the field and the reason, in words', async (t) => {
  const cases: [string, z.ZodType, unknown, string, string][] = [
    ['missing field', LoginSchema, { username: 'a' }, 'password', 'Password is required.'],
    [
      'unknown field',
      LoginSchema,
      { username: 'a', password: 'b', colour: 'red' },
      'colour',
      '"colour" is not a known field.',
    ],
    ['empty text', ORG_BODY, { name: '' }, 'name', 'Name must not be empty.'],
    ['only spaces (a regex with its hint)', ORG_BODY, { name: '   ' }, 'name', 'Name: must not be only spaces.'],
    ['too long', ORG_BODY, { name: 'x'.repeat(101) }, 'name', 'Name is too long: at most 100 characters.'],
    [
      'wrong type',
      TEAM_CREATE,
      { name: 'Ops', external_group_id: 'x' },
      'external_group_id',
      'External group id must be a number.',
    ],
    ['not a whole number', ASSIGN_SCHEMA, { user_id: 1.5, role_id: 1 }, 'user_id', 'User id must be a whole number.'],
    ['below the minimum', ASSIGN_SCHEMA, { user_id: 0, role_id: 1 }, 'user_id', 'User id must be at least 1.'],
    [
      'enum',
      POLICY_CREATE,
      { name: 'p', applies_to: 'some' },
      'applies_to',
      'Applies to must be one of: "all", "teams".',
    ],
    [
      'format',
      CONNECTION_CREATE,
      { issuer: 'not a url', client_id: 'c' },
      'issuer',
      'Issuer must be a URL (https://…).',
    ],
    [
      'union: a type no branch takes',
      CONNECTION_CREATE,
      { issuer: 'https://x', client_id: 'c', service_account_json: 5 },
      'service_account_json',
      'Service account json must be a text or an object or null.',
    ],
    [
      'nullable: the branch the value took',
      POLICY_CREATE,
      { name: 'p', applies_to: 'all', allowed_tools: [''] },
      'allowed_tools.0',
      'Allowed tools, item 1 must not be empty.',
    ],
    [
      'list item with a hint',
      POLICY_PUT_SCHEMA,
      { allowed_columns: ['a b'] },
      'allowed_columns.0',
      'Allowed columns, item 1: each column must be a column name (letters, digits and _) or "*".',
    ],
    [
      'repeats',
      POLICY_PUT_SCHEMA,
      { allowed_columns: ['a', 'a'] },
      'allowed_columns',
      'Allowed columns lists the same item twice.',
    ],
    [
      'empty list',
      POLICY_PUT_SCHEMA,
      { allowed_columns: [] },
      'allowed_columns',
      'Allowed columns needs at least 1 item.',
    ],
    ['empty PATCH', ROLE_PATCH_SCHEMA, {}, '', 'Nothing to change: send at least one field.'],
    ['empty PATCH (chat)', RenameSessionSchema, {}, '', 'Nothing to change: send at least one field.'],
    ['not an object', SendMessageSchema, 'hi', '', 'The request body must be an object.'],
    [
      'id pattern',
      SendMessageSchema,
      { message: 'hi', session_id: 'a/b' },
      'session_id',
      'Session id: letters, digits and - only.',
    ],
  ];
  for (const [what, schema, body, field, message] of cases) {
    const r = refusal(schema, body);
    t.ok(r, `${what}: refused`);
    t.equal(r?.code, 'ERR_VALIDATION', `${what}: ERR_VALIDATION`);
    t.equal(r?.status, 400);
    t.equal(r?.field, field, `${what}: the field`);
    t.equal(r?.message, message, `${what}: the message`);
    t.notMatch(r?.message ?? '', /Invalid input|expected|received|must match|#\//, `${what}: no schema wording`);
  }
});

t.test('every problem once; the first is the message; the row filter says which condition', async (t) => {
  const r = refusal(
    POLICY_PUT_SCHEMA,
    { allowed_columns: [], row_filter: { any: [{ op: 'eq', value: 1 }] } },
    'ERR_DATA_INVALID',
  );
  t.equal(r?.code, 'ERR_DATA_INVALID');
  t.same(
    (r?.problems as { field: string }[]).map((p) => p.field),
    ['allowed_columns', 'row_filter.any.0.column'],
  );
  t.match(r?.message, /^Allowed columns needs at least 1 item\. \(and 1 more problem\)$/);
  const op = refusal(POLICY_PUT_SCHEMA, {
    allowed_columns: ['*'],
    row_filter: { column: 'region', op: 'like', value: 'EU%' },
  });
  t.equal(op?.field, 'row_filter.op');
  t.match(op?.message, /^Row filter: "like" is not an operator/);
  const empty = refusal(ROLE_CREATE_SCHEMA, { name: '' });
  t.same(
    empty?.problems,
    [{ field: 'name', message: 'Name must not be empty.' }],
    'an empty name breaks min and the pattern: one reason',
  );
});

t.test('a good body comes back parsed: defaults filled, types from the schema', async (t) => {
  const b = validateBody(POLICY_PUT_SCHEMA, {
    allowed_columns: ['region'],
    row_filter: { column: 'owner', op: 'eq', value: '$user_id' },
  });
  t.same(b.allowed_columns, ['region']);
  t.same(b.row_filter, { column: 'owner', op: 'eq', value: '$user_id' });
  const login = validateBody(LoginSchema, { username: 'a', password: 'b' });
  t.same(login, { username: 'a', password: 'b' });
});
