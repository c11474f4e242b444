import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Encryptor, hashPassword, verifyPassword } from '../../core/index.js';

t.test('password hashing', async (t) => {
  const h = await hashPassword('pw-123456');
  t.match(h, /^scrypt\$/);
  t.ok(await verifyPassword('pw-123456', h));
  t.notOk(await verifyPassword('pw-1234567', h));
  t.notOk(await verifyPassword('pw-123456', 'garbage'));
});

t.test('AES-256-GCM round trip, tamper and wrong key detected', async (t) => {
  const e = new Encryptor(randomBytes(32));
  const box = e.encrypt('refresh-token-value', 'account:1');
  t.notOk(box.includes('refresh-token-value'));
  t.equal(e.decrypt(box, 'account:1'), 'refresh-token-value');
  t.throws(() => e.decrypt(box, 'account:2'), { code: 'ERR_CRYPTO_DECRYPT' });
  const parts = box.split('.');
  parts[3] = Buffer.from('x' + Buffer.from(parts[3], 'base64url').toString('latin1')).toString('base64url');
  t.throws(() => e.decrypt(parts.join('.'), 'account:1'), { code: 'ERR_CRYPTO_DECRYPT' });
  t.throws(() => new Encryptor(randomBytes(32)).decrypt(box, 'account:1'), { code: 'ERR_CRYPTO_DECRYPT' });
});
