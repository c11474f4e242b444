import {
  createCipheriv,
  createDecipheriv,
  randomBytes,
  scrypt as scryptCb,
  timingSafeEqual,
  createHmac,
} from 'node:crypto';
import { promisify } from 'node:util';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from './errors.js';
import { Secret } from './secret.js';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number, opts: object) => Promise<Buffer>;

const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LEN = 32;

/** Hash a password with scrypt; the result is `scrypt$N$r$p$salt$hash` (base64). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LEN, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** A hash to verify against when the user does not exist, so the timing matches. */
let dummyHash: Promise<string> | undefined;
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return dummyHash;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * AES-256-GCM for data at rest (refresh tokens, IdP client secrets, service-account JSON).
 * Format: `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>`.
 */
export class Encryptor {
  readonly #key: Buffer;
  constructor(key: Secret | Buffer) {
    const k = key instanceof Secret ? decodeKey(key.reveal()) : key;
    if (k.length !== 32) throw new AppError('ERR_CONFIG_INVALID', 'encryption key must be 32 bytes');
    this.#key = k;
  }
  encrypt(plain: string, aad = ''): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    if (aad) c.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }
  decrypt(box: string, aad = ''): string {
    const [v, iv, tag, ct] = box.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new AppError('ERR_CRYPTO_FORMAT', 'bad ciphertext format');
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
      if (aad) d.setAAD(Buffer.from(aad));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    } catch (err) {
      throw new AppError('ERR_CRYPTO_DECRYPT', 'cannot decrypt (wrong key or tampered data)', { cause: err });
    }
  }
}

function decodeKey(s: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(s)) return Buffer.from(s, 'hex');
  return Buffer.from(s, 'base64');
}

/**
 * The at-rest key: AIRLOCK_ENCRYPTION_KEY when set, else a key generated once
 * into `<dataDir>/encryption.key` (mode 0600).
 */
export function loadOrCreateEncryptionKey(dataDir: string, configured?: Secret): Secret {
  if (configured) return configured;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'encryption.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return new Secret(readFileSync(file, 'utf8').trim());
}

/** The one at-rest encryptor of an install: AIRLOCK_ENCRYPTION_KEY, else the data folder's generated key. */
export function atRestEncryptor(config: { dataDir: string; encryptionKey?: Secret }): Encryptor {
  return new Encryptor(loadOrCreateEncryptionKey(config.dataDir, config.encryptionKey));
}

/** A random token of `bytes` bytes, base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function hmacSha256(key: Secret | string, data: string): string {
  return createHmac('sha256', key instanceof Secret ? key.reveal() : key)
    .update(data)
    .digest('base64url');
}
