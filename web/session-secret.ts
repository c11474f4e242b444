import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hkdfSync, randomBytes } from 'node:crypto';
import type { Config } from '../core/index.js';

/** The cookie-signing secret, generated once into the data folder (mode 0600). */
export function loadOrCreateSessionSecret(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'session.secret');
  if (!existsSync(file)) {
    try {
      writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another process created it between the check and the write: use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return readFileSync(file, 'utf8').trim();
}

/**
 * The cookie-signing secret of this node. In a fleet (AIRLOCK_NODE_SECRET set) every node must
 * accept every other node's cookies, so it is derived from the shared node secret (HKDF-SHA256,
 * its own label, so it says nothing about the node secret); a single host keeps the secret it
 * generated into its data folder.
 */
export function sessionSecret(config: Readonly<Pick<Config, 'dataDir' | 'node'>>): string {
  if (!config.node.secret) return loadOrCreateSessionSecret(config.dataDir);
  return Buffer.from(hkdfSync('sha256', config.node.secret.reveal(), 'airlock', 'session-cookie-v1', 32)).toString(
    'hex',
  );
}
