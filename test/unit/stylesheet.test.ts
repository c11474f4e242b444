/**
 * The chat page's stylesheet (web/ui/public/style.css) is well-formed: every block it opens is
 * closed, in order, outside comments and strings. A block left open swallows every rule after it:
 * a phone-width `@media` left unclosed once made the admin pages' and run_python's rules apply
 * only below 720 px.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CSS = fileURLToPath(new URL('../../web/ui/public/style.css', import.meta.url).href.replace('/dist/', '/'));

/** The unbalanced places of a stylesheet: a `}` with nothing open, or blocks still open at the end (with the line each opened on). */
function unbalanced(css: string): string[] {
  const problems: string[] = [];
  const open: number[] = [];
  let line = 1;
  for (let i = 0; i < css.length; i++) {
    const c = css[i];
    if (c === '\n') line++;
    else if (c === '/' && css[i + 1] === '*') {
      const end = css.indexOf('*/', i + 2);
      const skipped = css.slice(i, end < 0 ? css.length : end + 2);
      line += skipped.split('\n').length - 1;
      i += skipped.length - 1;
    } else if (c === '"' || c === "'") {
      const end = css.indexOf(c, i + 1);
      i = end < 0 ? css.length : end;
    } else if (c === '{') open.push(line);
    else if (c === '}' && !open.pop()) problems.push(`line ${line}: a } closes nothing`);
  }
  for (const l of open) problems.push(`line ${l}: a block opened here is never closed`);
  return problems;
}

t.test('every block of the stylesheet is closed', async (t) => {
  t.same(unbalanced(readFileSync(CSS, 'utf8')), []);
});

t.test('the check finds a block left open and a stray close', async (t) => {
  t.same(unbalanced('@media (max-width: 720px) {\n  .a { color: red; }\n.b { color: blue; }\n'), [
    'line 1: a block opened here is never closed',
  ]);
  t.same(unbalanced('.a { content: "{"; }\n/* { */\n}\n'), ['line 3: a } closes nothing']);
});
