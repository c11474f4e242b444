/**
 * How one setting's raw text becomes its value (core/config.ts's loader uses these), and the
 * AIRLOCK_TRUST_PROXY list. A leaf module: no imports of config.ts.
 */
import { isAbsolute, resolve } from 'node:path';
import { isIP } from 'node:net';
import { Secret } from './secret.js';

export type Kind = 'string' | 'int' | 'url' | 'secret' | 'enum' | 'path' | 'bool';

export interface Setting {
  env: string;
  kind: Kind;
  default?: string;
  values?: readonly string[];
  min?: number;
  max?: number;
  doc: string;
}

export function parseSetting(s: Setting, raw: string, cwd: string): string | number | Secret | { problem: string } {
  switch (s.kind) {
    case 'string':
      return raw;
    case 'secret':
      return new Secret(raw);
    case 'path':
      return isAbsolute(raw) ? raw : resolve(cwd, raw);
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) return { problem: `must be an integer, got "${raw}"` };
      const n = Number(raw);
      if (s.min !== undefined && n < s.min) return { problem: `must be >= ${s.min}` };
      if (s.max !== undefined && n > s.max) return { problem: `must be <= ${s.max}` };
      return n;
    }
    case 'bool':
      if (['1', 'true', 'yes'].includes(raw)) return 'true';
      if (['0', 'false', 'no'].includes(raw)) return 'false';
      return { problem: 'must be true or false' };
    case 'enum':
      return s.values!.includes(raw) ? raw : { problem: `must be one of ${s.values!.join(', ')}` };
    case 'url':
      try {
        const u = new URL(raw);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') return { problem: 'must be an http(s) URL' };
        return raw.replace(/\/+$/, '');
      } catch {
        // URL parse failure is the validation result itself.
        return { problem: `must be a URL, got "${raw}"` };
      }
  }
}

export function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !(o instanceof Secret)) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/**
 * AIRLOCK_TRUST_PROXY: `none`, or a comma list of IPv4/IPv6 addresses, CIDR ranges and the
 * names express knows (loopback, linklocal, uniquelocal). Hop counts and `true` are refused on
 * purpose: they would believe whatever the client put first in X-Forwarded-For.
 */
export function parseTrustProxy(raw: string): string[] | { problem: string } {
  const v = raw.trim().toLowerCase();
  if (v === '' || v === 'none') return [];
  const out: string[] = [];
  for (const part of v
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(part)) {
      out.push(part);
      continue;
    }
    const [addr, bits, ...rest] = part.split('/');
    const family = isIP(addr);
    const maxBits = family === 4 ? 32 : 128;
    if (!family || rest.length || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits))) {
      return { problem: `"${part}" is not none, loopback, linklocal, uniquelocal, an IP address or a CIDR range` };
    }
    out.push(part);
  }
  return out;
}
