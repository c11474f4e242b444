/**
 * What goes into the sandbox image's file tree: the production packages it ships (the host-only
 * ones left out) and a base root without setuid/setgid bits. Used by image.ts (`airlock image build`).
 */
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Production dependencies only the host needs; everything else in `dependencies` ships.
 * better-sqlite3 is the host's database: no sandbox process loads it, and its addon is compiled
 * for the host's Node, which need not be the image's. The one list: images/Dockerfile removes the
 * same packages (test/unit/image-contents.test.ts holds the two together).
 */
export const HOST_ONLY_DEPS: ReadonlySet<string> = new Set([
  'dockerode',
  'express',
  'express-session',
  'openid-client',
  'commander',
  'better-sqlite3',
]);

/**
 * Clear the setuid and setgid bits of every regular file under root (symlinks are not followed;
 * /proc, /sys and /dev of a debootstrap target are skipped). The sandbox runs with no_new_privs,
 * so such binaries are inert there, but they have no use in it either. Returns the paths changed,
 * relative to root.
 */
export function stripSetidBits(root: string): string[] {
  const changed: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (!rel && (name === 'proc' || name === 'sys' || name === 'dev')) continue;
      const st = lstatSync(join(root, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile() && st.mode & 0o6000) {
        chmodSync(join(root, r), st.mode & 0o1777);
        changed.push(r);
      }
    }
  };
  walk('');
  return changed.sort();
}

interface LockPackage {
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The production packages the sandbox needs: the closure of package.json dependencies minus
 * HOST_ONLY_DEPS, resolved through package-lock.json the way node resolves them. Optional
 * platform packages (@napi-rs/canvas-linux-x64-gnu) are kept when installed.
 */
export function sandboxPackages(root: string, nodeModulesDir: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockPackage>;
  };
  const seen = new Set<string>();
  const resolveFrom = (from: string, name: string): string | undefined => {
    let base = from;
    for (;;) {
      const cand = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
      if (lock.packages[cand]) return cand;
      if (!base) return undefined;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
  };
  const visit = (path: string): void => {
    if (seen.has(path)) return;
    const entry = lock.packages[path];
    if (!entry || !existsSync(join(dirname(nodeModulesDir), path))) return;
    seen.add(path);
    for (const d of Object.keys({ ...(entry.dependencies ?? {}), ...(entry.optionalDependencies ?? {}) })) {
      const r = resolveFrom(path, d);
      if (r) visit(r);
    }
  };
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    if (HOST_ONLY_DEPS.has(name)) continue;
    const r = resolveFrom('', name);
    if (r) visit(r);
  }
  // Nested paths are inside their top-level package's folder already.
  return [...seen].filter((p) => p.split('node_modules/').length === 2).sort();
}
