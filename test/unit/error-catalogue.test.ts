/**
 * The error catalogue (core/error-codes/) is the one list of error codes:
 * - every `ERR_*` code written anywhere in the repository (source, browser UI, tests, docs) is in it;
 * - no call site gives AppError a status of its own (the `status` option is gone; a test below
 *   fails if one comes back) and no helper passes a status argument that disagrees with it;
 * - AppError is the one error class: no other class extends it but ModelError (which carries
 *   the provider's answer for its retry policy);
 * - docs/api.md's error table is the one `errorTableMarkdown()` renders
 *   (AIRLOCK_UPDATE_DOCS=1 rewrites it);
 * - AppError and the proxy take their statuses from it.
 */
import t from 'tap';
import ts from 'typescript';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AppError,
  ERROR_AREAS,
  ERROR_CATALOGUE,
  appErrorFromPeer,
  configError,
  configProblems,
  errorStatus,
  errorTableMarkdown,
  isErrorCode,
  toAppError,
  type ErrorSpec,
} from '../../core/index.js';
import { PROXY_ERRORS, ProxyRefusal } from '../../proxy/index.js';

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}
const ROOT = repoRoot();
const SELF = 'test/unit/error-catalogue.test.ts';

/** Folders whose code produces errors; test/ and docs are scanned for codes only. */
const SOURCE_DIRS = [
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

function* walk(dir: string, ext: RegExp): Generator<string> {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    if (statSync(p).isDirectory()) yield* walk(p, ext);
    else if (ext.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}

/**
 * A code, not a prefix or a pattern: `ERR_MODEL_*`, `ERR_PROXY_(A|B)`, `ERR_<AREA>_<WHAT>` and
 * `ERR_${x}` are not matched.
 */
const CODE_RE = /\bERR_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_*<{$(])/g;

/** Codes Node itself sets on its errors: our code compares against them, never answers with them. */
const NODE_CODES: Readonly<Record<string, string>> = {
  ERR_HTTP_REQUEST_TIMEOUT:
    "an http.Server's headers timeout (clientError): the egress gateway answers it with a plain 408",
};

function codesIn(file: string): { code: string; line: number }[] {
  const out: { code: string; line: number }[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      for (const m of text.matchAll(CODE_RE)) out.push({ code: m[0], line: i + 1 });
    });
  return out;
}

t.test('the catalogue is well formed', async (t) => {
  const seen = new Map<string, string>();
  for (const area of ERROR_AREAS) {
    for (const [code, spec] of Object.entries(area.errors) as [string, ErrorSpec][]) {
      t.notOk(seen.has(code), `${code} is listed once (also in ${seen.get(code)})`);
      seen.set(code, area.title);
      t.match(code, /^ERR_[A-Z0-9]+(?:_[A-Z0-9]+)*$/, `${code}: ERR_<AREA>_<WHAT>`);
      t.ok(
        Number.isInteger(spec.status) && spec.status >= 400 && spec.status <= 599,
        `${code}: status ${spec.status} is 4xx or 5xx`,
      );
      t.ok(spec.description.length > 0 && !spec.description.includes('\n'), `${code}: one-line description`);
      t.ok(spec.surfaces.length > 0, `${code}: says where it can be met`);
      if (spec.deprecatedFor) {
        t.ok(isErrorCode(spec.deprecatedFor), `${code}: its replacement ${spec.deprecatedFor} is catalogued`);
        t.notOk(errorSpecOf(spec.deprecatedFor)?.deprecatedFor, `${code}: its replacement is not deprecated itself`);
      }
    }
  }
  t.equal(Object.keys(ERROR_CATALOGUE).length, seen.size, 'the collected catalogue holds every area');
});

function errorSpecOf(code: string): ErrorSpec | undefined {
  return isErrorCode(code) ? ERROR_CATALOGUE[code] : undefined;
}

t.test('every ERR_* code written in the repository is in the catalogue', async (t) => {
  const files = [
    ...SOURCE_DIRS.flatMap((d) => [...walk(join(ROOT, d), /\.(ts|js|mjs|sh|html)$/)]),
    ...walk(join(ROOT, 'test'), /\.(ts|js)$/),
    ...walk(join(ROOT, 'docs'), /\.md$/),
    join(ROOT, 'README.md'),
  ].filter((f) => relative(ROOT, f) !== SELF);
  const missing: string[] = [];
  const used = new Set<string>();
  let found = 0;
  for (const f of files) {
    for (const { code, line } of codesIn(f)) {
      found++;
      used.add(code);
      if (!isErrorCode(code) && !(code in NODE_CODES)) missing.push(`${relative(ROOT, f)}:${line} ${code}`);
    }
  }
  t.ok(found > 100, `codes were found (${found})`);
  t.same(missing, [], 'no code outside the catalogue (add it to core/error-codes/<area>.ts)');
  // A catalogued code nobody writes any more is dead: remove it (deprecated ones go with their producers).
  const unused = Object.keys(ERROR_CATALOGUE).filter((c) => !used.has(c));
  t.same(unused, [], 'every catalogued code is still produced or documented');
});

interface StatusSite {
  at: string;
  code: string;
  status: number;
  how: string;
}

/** Every call or `new` that names exactly one code and a literal status argument (`refuse(sock, 403, 'ERR_…')`). */
function statusSites(file: string): StatusSite[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const sites: StatusSite[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isNewExpression(n) || ts.isCallExpression(n)) {
      const args = n.arguments ?? [];
      const codes = args.filter(
        (a): a is ts.StringLiteralLike => ts.isStringLiteralLike(a) && /^ERR_[A-Z0-9_]+$/.test(a.text),
      );
      const at = `${relative(ROOT, file)}:${src.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
      const status = args.find((a) => ts.isNumericLiteral(a) && /^[1-5]\d\d$/.test(a.text));
      if (codes.length === 1 && status)
        sites.push({
          at,
          code: (codes[0] as ts.StringLiteralLike).text,
          status: Number(status.getText(src)),
          how: 'status argument',
        });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return sites;
}

/** AppErrors given a `status` option, and classes that extend AppError (other than `allowed`). */
function appErrorMisuse(file: string, allowed: readonly string[] = ['ModelError']): string[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const at = (n: ts.Node) => `${relative(ROOT, file)}:${src.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  const subclasses = new Set<string>(['AppError']);
  const visit = (n: ts.Node, inSubclass: boolean): void => {
    let inside = inSubclass;
    if (ts.isClassDeclaration(n) && n.name) {
      const base = n.heritageClauses?.flatMap((h) => h.types.map((x) => x.expression.getText(src)))[0];
      if (base && subclasses.has(base)) {
        subclasses.add(n.name.text);
        inside = true;
        if (!allowed.includes(n.name.text))
          out.push(`${at(n)} class ${n.name.text} extends ${base}: use new AppError(code, …)`);
      }
    }
    const isAppErrorCall =
      (ts.isNewExpression(n) && subclasses.has(n.expression.getText(src))) ||
      (inside && ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.SuperKeyword);
    if (isAppErrorCall) {
      for (const a of (n as ts.NewExpression | ts.CallExpression).arguments ?? []) {
        if (!ts.isObjectLiteralExpression(a)) continue;
        for (const p of a.properties) {
          if (p.name?.getText(src) === 'status')
            out.push(
              `${at(n)} passes status to ${(n as ts.NewExpression).expression.getText(src)}: the catalogue gives it`,
            );
        }
      }
    }
    ts.forEachChild(n, (c) => visit(c, inside));
  };
  visit(src, false);
  return out;
}

t.test('no AppError is given a status, and AppError is the one error class', async (t) => {
  const misuse: string[] = [];
  let files = 0;
  for (const d of SOURCE_DIRS) {
    for (const f of walk(join(ROOT, d), /\.tsx?$/)) {
      files++;
      misuse.push(...appErrorMisuse(f));
    }
  }
  t.ok(files > 200, `source files were scanned (${files})`);
  t.same(misuse, [], 'the status comes from the catalogue (core/error-codes/); no subclass of AppError but ModelError');
});

t.test('the AppError scanner sees a status and a subclass', async (t) => {
  // The check above must be able to fail: run it on a file that does both on purpose.
  const dir = mkdtempSync(join(tmpdir(), 'airlock-catalogue-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'misuse.ts');
  writeFileSync(
    file,
    "throw new AppError('ERR_SESSION_BUSY', 'x', { status: 503 });\n" +
      'class NotFoundError extends AppError {\n  constructor(code: string, m: string) {\n    super(code, m, { status: 404 });\n  }\n}\n' +
      "throw new NotFoundError('ERR_TEAM_NOT_FOUND', 'x', { status: 404 });\n" +
      "throw new AppError('ERR_SESSION_BUSY', 'x', { retryable: true });\n",
  );
  t.same(
    appErrorMisuse(file).map((m) => m.replace(/^.*?:(\d+) /, '$1 ')),
    [
      '1 passes status to AppError: the catalogue gives it',
      '2 class NotFoundError extends AppError: use new AppError(code, …)',
      '4 passes status to super: the catalogue gives it',
      '7 passes status to NotFoundError: the catalogue gives it',
    ],
  );
});

t.test('no helper passes a status argument that disagrees with the catalogue', async (t) => {
  const disagreements: string[] = [];
  let checked = 0;
  for (const d of SOURCE_DIRS) {
    for (const f of walk(join(ROOT, d), /\.ts$/)) {
      for (const s of statusSites(f)) {
        checked++;
        const want = errorSpecOf(s.code)?.status;
        if (want !== undefined && want !== s.status)
          disagreements.push(`${s.at} ${s.code}: ${s.how} ${s.status}, catalogue ${want}`);
      }
    }
  }
  t.comment(`status arguments checked: ${checked}`);
  t.same(disagreements, [], 'every literal status argument matches the catalogue');
  const dir = mkdtempSync(join(tmpdir(), 'airlock-catalogue-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'disagrees.ts');
  writeFileSync(file, "refuse(sock, 400, 'ERR_EGRESS_DENIED');\n");
  t.same(
    statusSites(file).map((s) => [s.code, s.status, errorStatus(s.code)]),
    [['ERR_EGRESS_DENIED', 400, 403]],
    'the scanner sees a disagreeing status argument',
  );
});

const BEGIN = '<!-- error-codes:begin (generated from core/error-codes/; see the note above) -->';
const END = '<!-- error-codes:end -->';

t.test('docs/api.md carries the table the catalogue renders', async (t) => {
  const path = join(ROOT, 'docs', 'api.md');
  const doc = readFileSync(path, 'utf8');
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  t.ok(a >= 0 && b > a, 'docs/api.md has the error-codes markers');
  if (a < 0 || b <= a) return;
  const want = `${BEGIN}\n\n${errorTableMarkdown()}\n${END}`;
  const have = doc.slice(a, b + END.length);
  if (have !== want && process.env.AIRLOCK_UPDATE_DOCS === '1') {
    writeFileSync(path, doc.slice(0, a) + want + doc.slice(b + END.length));
    t.pass('docs/api.md rewritten');
    return;
  }
  t.equal(
    have,
    want,
    'the table matches the catalogue (AIRLOCK_UPDATE_DOCS=1 npx tap dist/test/unit/error-catalogue.test.js rewrites it)',
  );
  for (const code of Object.keys(ERROR_CATALOGUE)) t.ok(have.includes(`\`${code}\``), `${code} is in the table`);
});

t.test('AppError takes the status from the catalogue', async (t) => {
  t.equal(new AppError('ERR_SESSION_BUSY', 'busy').status, 409);
  t.equal(new AppError('ERR_SESSION_CAPACITY', 'full').status, 503);
  t.equal(new AppError('ERR_BODY_ENCODING', 'enc').status, 415);
  t.equal(new AppError('ERR_FROM_A_PEER_UNKNOWN', 'x').status, 500, 'a code the catalogue does not know answers 500');
  t.equal(
    new AppError('ERR_SESSION_BUSY', 'x', { unknownCodeStatus: 418 }).status,
    409,
    'a catalogued code ignores unknownCodeStatus',
  );
  t.equal(new AppError('ERR_VALIDATION', 'bad').status, 400);
  t.equal(new AppError('ERR_TEAM_NOT_FOUND', 'x').status, 404);
  t.equal(new AppError('ERR_TEAM_LINKED', 'x').status, 409);
  t.equal(new AppError('ERR_AGENT_TOKEN_EXPIRED', 'x').status, 401);
  t.same(configProblems(configError(['a', 'b'])), ['a', 'b']);
  t.equal(configError(['a']).status, 500);
  t.equal(toAppError(new Error('boom')).status, 500);
  t.equal(toAppError(new Error('boom'), 'ERR_SYNC_FAILED').code, 'ERR_SYNC_FAILED');
  t.same(new AppError('ERR_SESSION_BUSY', 'busy').toBody(), { error: { code: 'ERR_SESSION_BUSY', message: 'busy' } });
});

t.test('an error reported by a peer gets the catalogue status, not a guess', async (t) => {
  t.equal(appErrorFromPeer({ code: 'ERR_SESSION_BUSY', message: 'busy' }).status, 409);
  t.equal(appErrorFromPeer({ code: 'ERR_SANDBOX_CHILD_EXITED', message: 'x' }).status, 502);
  t.equal(appErrorFromPeer({ code: 'ERR_PROXY_TOKEN_MISSING', message: 'x' }).status, 503);
  t.equal(appErrorFromPeer({ code: 'ERR_FROM_A_NEWER_PEER', message: 'x' }).status, 502, 'unknown code: the fallback');
  t.equal(appErrorFromPeer({ code: 'ERR_FROM_A_NEWER_PEER', message: 'x' }, 500).status, 500);
  t.equal(appErrorFromPeer({ code: 'ERR_SESSION_BUSY', message: 'busy' }).message, 'busy');
});

t.test('the proxy answers with the catalogue statuses', async (t) => {
  for (const [code, status] of Object.entries(PROXY_ERRORS)) t.equal(status, errorStatus(code), `${code} ${status}`);
  t.equal(
    Object.keys(PROXY_ERRORS).length,
    23,
    'every refusal code (ten of the proxy, ten of the send policy, three of the egress gateway)',
  );
  t.equal(new ProxyRefusal('ERR_PROXY_PLACEHOLDER', 'x').status, 401);
});
