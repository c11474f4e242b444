/**
 * No block of product code written twice (docs/architecture.md, "One place for each thing"). A
 * block is six or more consecutive lines that say something (blank lines, comments and lines of
 * only brackets and punctuation left out, indentation ignored); the same block in two places, in
 * one file or two, fails the test with both places named, so the second copy becomes a call to
 * the first. Two kinds of file are left out, each with its reason (REASONED). Blocks alike in
 * shape but with other names are not caught here: that is for review. The code is compared as
 * printed at 240 columns (COMPARE_WIDTH); the places named are the file's own lines.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import * as prettier from 'prettier';
import { join, relative } from 'node:path';
import { PRODUCT, repoRoot, tsFiles } from '../helpers/source-tree.js';

const BLOCK = 6;
/**
 * The width the block size was set at. Code is compared as Prettier prints it at this width, so
 * the tree's own width (120) does not change what counts as a copy: at 120 columns a call's
 * arguments or a function's parameters stand one a line, and six such lines are far less logic.
 * Objects are printed collapsed where they fit (`objectWrap: 'collapse'`), as at that width.
 */
const COMPARE_WIDTH = 240;

/**
 * The source line each line of `wide` (the same code printed at COMPARE_WIDTH) starts at: the
 * next source line whose text begins the wide line. Lines keep their order when reprinted.
 */
function sourceLineOf(wide: string, source: string): number[] {
  const src = source.split('\n').map((l) => l.trim());
  let j = 0;
  return wide.split('\n').map((w) => {
    const text = w.trim();
    for (let k = j; text && k < src.length; k++) {
      if (src[k] && text.startsWith(src[k].slice(0, 40))) {
        j = k + 1;
        return k + 1;
      }
    }
    return j;
  });
}

/** The two reasoned exceptions (docs/architecture.md says why). */
const REASONED: { prefix: string; reason: string }[] = [
  {
    prefix: 'domain/db/migrations/',
    reason:
      'migrations are frozen history: one that ran in the field must not change, so each states its DDL in full for both engines',
  },
  { prefix: 'core/error-codes/', reason: 'catalogues: one entry per code, alike by design' },
  { prefix: 'core/config-settings.ts', reason: 'catalogues: one entry per setting, alike by design' },
];

interface Line {
  n: number;
  text: string;
}

/** The lines that say something, trimmed, with their line numbers. */
export function significantLines(source: string): Line[] {
  const out: Line[] = [];
  let inComment = false;
  source.split('\n').forEach((raw, i) => {
    const text = raw.trim();
    if (inComment) {
      if (text.includes('*/')) inComment = false;
      return;
    }
    if (text.startsWith('/*')) {
      inComment = !text.includes('*/');
      return;
    }
    if (!text || text.startsWith('//') || /^[\s{}()[\];,.]*$/.test(text)) return;
    out.push({ n: i + 1, text });
  });
  return out;
}

interface Place {
  file: string;
  index: number;
  from: number;
  to: number;
}

/** Every run of BLOCK significant lines that stands in more than one place (overlapping runs of one file aside). */
export function repeatedBlocks(files: Map<string, Line[]>): [Place, Place][] {
  const seen = new Map<string, Place[]>();
  for (const [file, lines] of files) {
    for (let i = 0; i + BLOCK <= lines.length; i++) {
      const key = lines
        .slice(i, i + BLOCK)
        .map((l) => l.text)
        .join('\n');
      const place = { file, index: i, from: lines[i].n, to: lines[i + BLOCK - 1].n };
      const at = seen.get(key);
      if (at) at.push(place);
      else seen.set(key, [place]);
    }
  }
  const pairs: [Place, Place][] = [];
  for (const places of seen.values()) {
    const first = places[0];
    for (const other of places.slice(1)) {
      if (other.file === first.file && other.index - first.index < BLOCK) continue;
      pairs.push([first, other]);
    }
  }
  return pairs;
}

/** Consecutive windows of one repeat joined into one block, for a readable report. */
function joined(pairs: [Place, Place][]): string[] {
  const sorted = [...pairs].sort((a, b) => a[0].file.localeCompare(b[0].file) || a[0].index - b[0].index);
  const out: { a: Place; b: Place; aTo: number; bTo: number; last: [number, number] }[] = [];
  for (const [a, b] of sorted) {
    const prev = out.at(-1);
    if (
      prev &&
      prev.a.file === a.file &&
      prev.b.file === b.file &&
      a.index === prev.last[0] + 1 &&
      b.index === prev.last[1] + 1
    ) {
      prev.aTo = a.to;
      prev.bTo = b.to;
      prev.last = [a.index, b.index];
    } else out.push({ a, b, aTo: a.to, bTo: b.to, last: [a.index, b.index] });
  }
  return out.map((r) => `${r.a.file}:${r.a.from}-${r.aTo} ~ ${r.b.file}:${r.b.from}-${r.bTo}`);
}

t.test('the finder finds a repeated block and nothing in a file without one', async (t) => {
  const block = [
    'const a = load(x);',
    'if (!a) throw new Error("gone");',
    'const b = a.items.map((i) => i.id);',
    'await save(b);',
    'log.info({ b }, "saved");',
    'return b.length;',
  ];
  const one = significantLines(
    ['function f() {', ...block, '}', '// note', 'function g() {', ...block, '}'].join('\n'),
  );
  const pairs = repeatedBlocks(new Map([['x.ts', one]]));
  t.equal(pairs.length, 1, 'the block written twice in one file is found once');
  t.same([pairs[0][0].from, pairs[0][1].from], [2, 11], 'at the lines it stands at');
  const other = significantLines(['function g() {', ...block.slice(0, 5), 'return 0;', '}'].join('\n'));
  t.equal(repeatedBlocks(new Map([['y.ts', other]])).length, 0, 'five shared lines are not a block');
  t.equal(
    repeatedBlocks(
      new Map([
        ['x.ts', significantLines(block.join('\n'))],
        ['z.ts', significantLines(block.map((l) => `   ${l}`).join('\n'))],
      ]),
    ).length,
    1,
    'indentation does not hide a copy in another file',
  );
});

t.test('no block of product code stands in two places', async (t) => {
  const root = repoRoot();
  const files = new Map<string, Line[]>();
  for (const folder of PRODUCT)
    for (const path of tsFiles(join(root, folder))) {
      const rel = relative(root, path);
      if (REASONED.some((r) => rel.startsWith(r.prefix))) continue;
      const source = readFileSync(path, 'utf8');
      const wide = await prettier.format(source, {
        filepath: path,
        printWidth: COMPARE_WIDTH,
        singleQuote: true,
        objectWrap: 'collapse',
      });
      const at = sourceLineOf(wide, source);
      files.set(
        rel,
        significantLines(wide).map((l) => ({ ...l, n: at[l.n - 1] })),
      );
    }
  t.ok(files.size > 200, `read ${files.size} product files`);
  const found = joined(repeatedBlocks(files));
  t.same(
    found,
    [],
    found.length ? `blocks written twice (make the second a call to the first):\n${found.join('\n')}` : 'none',
  );
  for (const r of REASONED)
    t.ok(existsSync(join(root, r.prefix)), `the exception ${r.prefix} still names something (${r.reason})`);
});
