import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/source-tree.js';

/**
 * The commit habits of CONTRIBUTING.md, checked on the history since they were adopted
 * (HABITS_SINCE, the last commit before them): a subject of at most 72 characters, and a body that
 * says why (a merge's subject says what came in; its body is welcome, not required). A checkout
 * without its history (a tarball, a shallow clone missing HABITS_SINCE) skips with the reason,
 * also under CI=true: a CI that checks out one commit has no history to judge, and that says
 * nothing about the code under test.
 */
const HABITS_SINCE = 'e657b87';
const MAX_SUBJECT = 72;

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: repoRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

const why = !existsSync(join(repoRoot(), '.git'))
  ? 'no .git: a checkout without its history'
  : git(['cat-file', '-e', `${HABITS_SINCE}^{commit}`]) === null
    ? `the history does not reach ${HABITS_SINCE} (a shallow clone?)`
    : null;

if (why) {
  t.test('commit habits', { skip: `no history to check: ${why}` }, () => undefined);
} else {
  t.test('every commit since the habits: subject ≤ 72 characters, a body saying why', async (t) => {
    const log = git(['log', '--format=%H%x1f%P%x1f%s%x1f%b%x1e', `${HABITS_SINCE}..HEAD`]) ?? '';
    const commits = log
      .split('\x1e')
      .map((c) => c.trim())
      .filter(Boolean)
      .map((c) => {
        const [hash, parents, subject, body] = c.split('\x1f');
        return { hash: hash.slice(0, 7), merge: parents.trim().includes(' '), subject, body: (body ?? '').trim() };
      });
    const long = commits
      .filter((c) => c.subject.length > MAX_SUBJECT)
      .map((c) => `${c.hash} (${c.subject.length}): ${c.subject}`);
    const bodiless = commits.filter((c) => !c.merge && !c.body).map((c) => `${c.hash}: ${c.subject}`);
    t.same(long, [], `subjects of at most ${MAX_SUBJECT} characters (${commits.length} commits checked)`);
    t.same(bodiless, [], 'every commit but a merge has a body');
  });
}
