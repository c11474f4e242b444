/**
 * No import cycles in product code (docs/architecture.md, "No import cycles"). Every relative
 * import of every .ts/.tsx file in the product folders counts, type-only ones too (a type cycle
 * is a design cycle: two modules that cannot be understood apart); a cycle's shared part goes to
 * a leaf module both import. Found with Tarjan's strongly connected components over the graph
 * built from the import lines (no TypeScript compiler needed).
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { PRODUCT, repoRoot, tsFiles } from '../helpers/source-tree.js';

/**
 * Files whose own imports are left out of the graph for now. Each entry names a cycle that is
 * being removed; drop the entry when it is. None today.
 */
const ALLOWED_FROM = new Set<string>([]);

const IMPORT_RE =
  /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** The source file a relative specifier names (`./x.js` → x.ts, x.tsx or x/index.ts). */
function resolveSpec(root: string, from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec).replace(/\.js$/, '');
  const hit = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')].find((c) => existsSync(c));
  return hit && relative(root, hit);
}

function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of PRODUCT) {
    for (const file of tsFiles(join(root, folder))) {
      const targets = new Set<string>();
      for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
        const spec = m[1] ?? m[2] ?? m[3];
        const target = spec.startsWith('.') ? resolveSpec(root, file, spec) : undefined;
        if (target) targets.add(target);
      }
      graph.set(relative(root, file), [...targets]);
    }
  }
  return graph;
}

/** The cycles: strongly connected components of more than one file, or a file importing itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

t.test('the cycle finder finds a cycle and passes a chain', async (t) => {
  t.same(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
        ['d', ['a']],
      ]),
    ),
    [['a', 'b', 'c']],
  );
  t.same(cycles(new Map([['a', ['a']]])), [['a']], 'a file importing itself');
  t.same(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    [],
  );
});

t.test('product code has no import cycles', async (t) => {
  const graph = importGraph(repoRoot());
  t.ok(graph.size > 100, `the graph holds the product files (${graph.size})`);
  t.ok(
    [...graph.values()].some((targets) => targets.length > 0),
    'and their imports',
  );
  for (const file of ALLOWED_FROM) {
    t.ok(graph.has(file), `${file} is still there (an allow-list entry for a file that went is dropped)`);
    graph.set(file, []);
  }
  t.same(cycles(graph), [], 'no cycle: move what two modules share into a leaf module both import');
});
