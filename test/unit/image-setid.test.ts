/** The base build clears every setuid/setgid bit (issue 19: 11 such binaries were in the image). */
import t from 'tap';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripSetidBits } from '../../daemon/runtime/image.js';

t.test('stripSetidBits clears setuid/setgid on files only, keeps the other mode bits', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'airlock-setid-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const files: Record<string, number> = {
    'usr/bin/passwd': 0o4755,
    'usr/bin/chage': 0o2755,
    'usr/sbin/unix_chkpwd': 0o6755,
    'usr/bin/ls': 0o755,
    'etc/shadow': 0o640,
    'proc/1/exe': 0o4755, // a debootstrap target's /proc is skipped
  };
  for (const [rel, mode] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), 'x');
    chmodSync(join(root, rel), mode);
  }
  mkdirSync(join(root, 'var/mail'), { recursive: true });
  chmodSync(join(root, 'var/mail'), 0o2775);
  symlinkSync('passwd', join(root, 'usr/bin/passwd-link'));
  t.equal(statSync(join(root, 'usr/bin/passwd')).mode & 0o7777, 0o4755, 'setuid bit set up (the test could fail)');

  const changed = stripSetidBits(root);
  t.same(changed, ['usr/bin/chage', 'usr/bin/passwd', 'usr/sbin/unix_chkpwd']);
  t.equal(statSync(join(root, 'usr/bin/passwd')).mode & 0o7777, 0o755);
  t.equal(statSync(join(root, 'usr/bin/chage')).mode & 0o7777, 0o755);
  t.equal(statSync(join(root, 'usr/sbin/unix_chkpwd')).mode & 0o7777, 0o755);
  t.equal(statSync(join(root, 'usr/bin/ls')).mode & 0o7777, 0o755, 'an ordinary binary unchanged');
  t.equal(statSync(join(root, 'etc/shadow')).mode & 0o7777, 0o640);
  t.equal(statSync(join(root, 'var/mail')).mode & 0o7777, 0o2775, 'a setgid directory is not a binary: unchanged');
  t.ok(lstatSync(join(root, 'usr/bin/passwd-link')).isSymbolicLink(), 'symlinks are not followed');
  t.equal(statSync(join(root, 'proc/1/exe')).mode & 0o7777, 0o4755, '/proc of the target is not walked');
  t.same(stripSetidBits(root), [], 'a second pass finds nothing');
});
