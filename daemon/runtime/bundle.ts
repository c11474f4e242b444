/**
 * The sandbox processes' one-file bundles, made by esbuild for the image (daemon/runtime/image.ts
 * ships them over dist/<name>/main.js), and the startup-snapshot scripts of the agent and the
 * supervisor beside their bundles.
 * docs/runtime.md ("The image", "Cold start, step by step") has the figures behind each choice.
 */
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import type { Logger } from '../../core/index.js';
import { SNAPSHOT_SCRIPT } from '../../core/sandbox-env.js';

/** Sandbox processes whose dist/<name>/main.js is replaced by a one-file bundle in the image. */
const SANDBOX_ENTRIES = ['supervisor', 'agent', 'tools', 'extensions'];
/** Native packages stay out of the bundles: they load from the image's node_modules. */
const BUNDLE_EXTERNAL = ['@napi-rs/canvas', 'better-sqlite3'];
/**
 * Entries that also ship a V8 startup snapshot (docs/runtime.md, "Cold start, step by step"):
 * a CommonJS bundle of the named module, SNAPSHOT_SCRIPT beside main.js, from which the image
 * build makes SNAPSHOT_BLOB with the image's own node (a blob fits only the binary that made it).
 */
const SNAPSHOT_ENTRIES: Record<string, string> = { agent: 'snapshot.js', supervisor: 'snapshot.js' };
/**
 * Entries that do one thing before they load the rest (supervisor/main.ts launches the agent
 * child first: docs/runtime.md, "Cold start, step by step"): their main.js bundle holds only
 * that first part and import()s the named sibling module, itself bundled beside it. One bundle
 * would delay the first act by the whole file's load: its parse and the builtins it imports
 * (node:tls, node:zlib, worker_threads…), ~45 ms in a 1-CPU sandbox.
 */
const LOADS_LATER: Record<string, string> = { supervisor: 'supervisor.js' };
/**
 * The snapshot script's first lines.
 * - `import.meta.url` becomes this file's URL.
 * - `require`: while the snapshot is built, Node's builder loads builtins only, which is all a
 *   module top needs; in a process started from the snapshot, a package left outside the bundle
 *   loads through a real `require` made for this file then.
 * - `randomUUID` (node:crypto's and the global `crypto`'s): Node draws UUIDs from a cache of random
 *   bytes it fills on first use. Filled while the snapshot is built, that cache would be in the
 *   blob, and every agent would hand out the same UUIDs. So a UUID made while building skips the
 *   cache, and the cache is first filled in each process.
 */
export const SNAPSHOT_BANNER = [
  "var __airlockImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
  'var __airlockBuilderRequire = require, __airlockRunRequire;',
  "var __airlockBuilding = () => __airlockBuilderRequire('node:v8').startupSnapshot.isBuildingSnapshot();",
  "require = function (id) { return __airlockBuilding() ? __airlockBuilderRequire(id) : (__airlockRunRequire ??= process.getBuiltinModule('node:module').createRequire(__filename))(id); };",
  "var __airlockCrypto = __airlockBuilderRequire('node:crypto'), __airlockRandomUUID = __airlockCrypto.randomUUID, __airlockWebUUID = globalThis.crypto.randomUUID.bind(globalThis.crypto);",
  '__airlockCrypto.randomUUID = function randomUUID(options) { return __airlockBuilding() ? __airlockRandomUUID({ disableEntropyCache: true }) : __airlockRandomUUID(options); };',
  "Object.defineProperty(globalThis.crypto, 'randomUUID', { value: function randomUUID() { return __airlockBuilding() ? __airlockRandomUUID({ disableEntropyCache: true }) : __airlockWebUUID(); }, configurable: true, writable: true });",
].join('\n');

/**
 * Builtins the bundles take through `require`, not `import`. Node's ESM facade of node:http
 * evaluates every export, the lazy `WebSocket` getter among them, which loads Node's undici:
 * ~25-35 ms of CPU at the start of every process that imports node:http or node:https (the
 * supervisor's proxy does), for a module none of them needs until its first `fetch`.
 */
const BUILTINS_BY_REQUIRE = /^(node:)?https?$/;

/** esbuild plugin: an `import` of a BUILTINS_BY_REQUIRE builtin becomes a CommonJS `require` of it. */
const requireBuiltins = {
  name: 'airlock-require-builtins',
  setup(build: import('esbuild').PluginBuild): void {
    build.onResolve({ filter: BUILTINS_BY_REQUIRE }, (a) =>
      a.namespace === 'airlock-builtin'
        ? { path: a.path, external: true }
        : { path: a.path.replace(/^node:/, ''), namespace: 'airlock-builtin' },
    );
    build.onLoad({ filter: /.*/, namespace: 'airlock-builtin' }, (a) => ({
      contents: `module.exports = require('node:${a.path}');`,
      loader: 'js',
    }));
  },
};

/**
 * esbuild plugin: zod's `locales` namespace holds only English. zod's classic and core modules
 * re-export every locale (`z.locales.de()` …) for `z.config()`, so a bundle carried all ~45 of them
 * (358 KiB, a fifth of the supervisor's bundle and of the agent's snapshot script), while zod's
 * own default messages import `en` directly and nothing here switches language. Without this a
 * bundle behaves the same; it is only larger (more to read, hash and deserialize at each start).
 */
const zodEnglishOnly = {
  name: 'airlock-zod-english-only',
  setup(build: import('esbuild').PluginBuild): void {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (a) =>
      /[\\/]zod[\\/]v4[\\/]/.test(a.importer)
        ? { path: join(dirname(a.importer), '..', 'locales', 'en.js'), namespace: 'airlock-zod-locales' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'airlock-zod-locales' }, (a) => ({
      contents: `export { default as en } from ${JSON.stringify(a.path)};`,
      loader: 'js',
      resolveDir: dirname(a.path),
    }));
  },
};

/**
 * esbuild plugin for snapshot scripts: node:http loads on first use of one of its exports, not
 * when the bundle is evaluated. Node cannot serialize the HTTP parser binding node:http sets up
 * at load, so a snapshot whose heap held it would not build; the supervisor's proxy only needs it
 * at `start`. Its exports are read through getters, which is all an ESM import of it compiles to.
 */
const lazyHttp = {
  name: 'airlock-lazy-http',
  setup(build: import('esbuild').PluginBuild): void {
    build.onResolve({ filter: /^(node:)?http$/ }, (a) =>
      a.namespace === 'airlock-lazy-http'
        ? { path: 'node:http', external: true }
        : { path: 'http', namespace: 'airlock-lazy-http' },
    );
    build.onLoad({ filter: /.*/, namespace: 'airlock-lazy-http' }, () => ({
      contents: [
        'let http;',
        `for (const k of ${JSON.stringify(Object.keys(process.getBuiltinModule('node:http')))})`,
        "  Object.defineProperty(module.exports, k, { enumerable: true, get: () => (http ??= require('node:http'))[k] });",
      ].join('\n'),
      loader: 'js',
    }));
  },
};

/** esbuild plugin: an import of `spec` (a sibling module, bundled on its own) stays an import. */
function keepSibling(spec: string): import('esbuild').Plugin {
  const filter = new RegExp(`^${spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);
  return {
    name: 'airlock-keep-sibling',
    setup: (build) => build.onResolve({ filter }, (a) => ({ path: a.path, external: true })),
  };
}

/**
 * Bundle each sandbox entry point (dist/<name>/main.js) into outDir/<name>/main.js with esbuild.
 * The bundles sit where the entries did, so their import.meta.url lookups (fonts, dist root) still
 * resolve. CommonJS packages inside an ESM bundle need `require`: the banner provides it. Without
 * esbuild (a production-only install) the image ships the unbundled entries, which behave the same
 * and start slower; returns the names bundled.
 */
export async function bundleSandboxEntries(root: string, outDir: string, log: Logger): Promise<string[]> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    log.warn(
      'esbuild is not installed (npm ci installs it): the sandbox ships unbundled entry points, and sessions start slower',
    );
    return [];
  }
  const bundled: string[] = [];
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    external: BUNDLE_EXTERNAL,
    legalComments: 'none',
    logLevel: 'silent',
  } as const;
  const esm = (
    entry: string,
    out: { outfile: string } | { outdir: string },
    plugins: import('esbuild').Plugin[] = [],
  ) =>
    esbuild.build({
      ...common,
      entryPoints: [entry],
      ...out,
      // A module the bundle import()s (the proxy's mail policy: libmime, iconv-lite) becomes a
      // chunk of its own beside it, loaded on first use, instead of text every start reads.
      ...('outdir' in out ? { splitting: true, entryNames: '[name]', chunkNames: '[name]-[hash]' } : {}),
      format: 'esm',
      plugins: [requireBuiltins, zodEnglishOnly, ...plugins],
      banner: {
        js: "import { createRequire as __airlockCreateRequire } from 'node:module'; const require = __airlockCreateRequire(import.meta.url);",
      },
    });
  for (const name of SANDBOX_ENTRIES) {
    const entry = join(root, 'dist', name, 'main.js');
    if (!existsSync(entry)) continue;
    const later = LOADS_LATER[name];
    if (later) {
      await esm(join(root, 'dist', name, later), { outdir: join(outDir, name) });
      await esm(entry, { outfile: join(outDir, name, 'main.js') }, [keepSibling(`./${later}`)]);
    } else await esm(entry, { outfile: join(outDir, name, 'main.js') });
    bundled.push(name);
    const snapshotEntry = SNAPSHOT_ENTRIES[name];
    if (snapshotEntry) {
      await esbuild.build({
        ...common,
        entryPoints: [join(root, 'dist', name, snapshotEntry)],
        outfile: join(outDir, name, SNAPSHOT_SCRIPT),
        format: 'cjs',
        plugins: [lazyHttp, zodEnglishOnly],
        define: { 'import.meta.url': '__airlockImportMetaUrl' },
        banner: { js: SNAPSHOT_BANNER },
        // The script's source lives on in the blob and in every agent's heap: without its
        // whitespace the blob is 11.0 MiB, not 14.1 (names stay, for stack traces).
        minifyWhitespace: true,
        minifySyntax: true,
      });
    }
  }
  return bundled;
}
