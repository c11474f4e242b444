/**
 * Shared helpers for the real-engine tests: engine check (never skipped when CI=true), one
 * image build per code version shared by every test file, label sweeps, in-container probes.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { createLogger, loadConfig, type Config, type Logger } from '../../core/index.js';
import { SANDBOX_MALLOC_ENV } from '../../core/sandbox-env.js';
import { ensureSandboxImage } from '../../daemon/runtime/image.js';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { TEST_ORG_MAIL } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The engine the Docker tests use; the runsc pass of `npm test` points it at an engine with gVisor. */
const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';
export const DOCKER_SOCKET = process.env.AIRLOCK_TEST_DOCKER_SOCKET || DEFAULT_DOCKER_SOCKET;
/** The sandbox runtime under test (AIRLOCK_SANDBOX_RUNTIME of the runsc pass), else the default. */
export const SANDBOX_RUNTIME = process.env.AIRLOCK_SANDBOX_RUNTIME === 'runsc' ? 'runsc' : 'runc';
/** The env every daemon a test starts gets: the engine and runtime under test. */
export const ENGINE_ENV: Record<string, string> = {
  AIRLOCK_DOCKER_SOCKET: DOCKER_SOCKET,
  AIRLOCK_SANDBOX_RUNTIME: SANDBOX_RUNTIME,
};

interface TapLike {
  plan(n: number, why?: string): void;
  fail(msg: string): void;
}

/** A docker client, or null after skipping with a reason (never in CI). */
export async function dockerOrSkip(t: TapLike): Promise<Docker | null> {
  const docker = new Docker({ socketPath: DOCKER_SOCKET });
  try {
    await docker.ping();
    return docker;
  } catch (err) {
    const why = `Docker engine not reachable at ${DOCKER_SOCKET}: ${(err as Error).message}`;
    if (process.env.CI === 'true') {
      t.fail(`${why} (CI=true: docker tests must not skip)`);
      return null;
    }
    t.plan(0, why);
    return null;
  }
}

function hashTree(h: ReturnType<typeof createHash>, dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) hashTree(h, p);
    else if (p.endsWith('.js')) h.update(p.slice(ROOT.length)).update(readFileSync(p));
  }
}

/** Tag of the test image for the code now in dist/ (rebuilt only when that code changes). */
export function testImageTag(): string {
  const h = createHash('sha256');
  for (const d of ['core', 'proxy', 'supervisor', 'agent', 'tools', 'extensions']) hashTree(h, join(ROOT, 'dist', d));
  h.update(readFileSync(join(ROOT, 'images', 'Dockerfile.app')));
  // How the image is built (bundling included) changes the image too.
  for (const f of ['image.js', 'bundle.js']) h.update(readFileSync(join(ROOT, 'dist', 'daemon', 'runtime', f)));
  return `airlock/sandbox:test-${h.digest('hex').slice(0, 12)}`;
}

/** Build the test image once; parallel test files wait on a lock file. */
export async function ensureTestImage(
  docker: Docker,
  log: Logger = createLogger({ level: 'warn', destination: process.stderr }),
): Promise<string> {
  const tag = testImageTag();
  const lock = join('/tmp', `airlock-image-${tag.replace(/[^a-z0-9]/gi, '_')}.lock`);
  for (;;) {
    try {
      await docker.getImage(tag).inspect();
      return tag;
    } catch {
      // not built yet
    }
    let fd: number | undefined;
    try {
      fd = openSync(lock, 'wx');
    } catch {
      // Someone else builds it; a lock older than 10 minutes is stale.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 600_000) unlinkSync(lock);
      } catch {
        // lock vanished meanwhile
      }
      await waitFor(
        () => !existsSync(lock) || Date.now() - statSync(lock).mtimeMs > 600_000,
        'the image build another test process holds the lock for',
        660_000,
        500,
      );
      continue;
    }
    try {
      // A second engine (the runsc pass): copy the image the default engine already built.
      const copied = DOCKER_SOCKET !== DEFAULT_DOCKER_SOCKET && (await copyImageFromDefaultEngine(docker, tag));
      if (!copied) await ensureSandboxImage({ docker, tag, root: ROOT, log });

      // Test images of older code versions are of no further use once they are a day old
      // (a younger one may belong to another checkout testing on the same engine).
      const dayAgo = Date.now() / 1000 - 86_400;
      for (const img of await docker.listImages()) {
        if (img.Created > dayAgo) continue;
        for (const old of img.RepoTags ?? []) {
          if (old.startsWith('airlock/sandbox:test-') && old !== tag)
            await docker
              .getImage(old)
              .remove()
              .catch(() => undefined);
        }
      }
      return tag;
    } finally {
      closeSync(fd);
      rmSync(lock, { force: true });
    }
  }
}

/** `docker save | docker load` from the default engine into `docker`; false when it has no such image. */
async function copyImageFromDefaultEngine(docker: Docker, tag: string): Promise<boolean> {
  const from = new Docker({ socketPath: DEFAULT_DOCKER_SOCKET });
  try {
    await from.getImage(tag).inspect();
  } catch {
    return false;
  }
  const stream = await from.getImage(tag).get();
  const res = await docker.loadImage(stream);
  await new Promise<void>((resolve, reject) => {
    res.on('end', resolve).on('error', reject);
    res.resume();
  });
  await docker.getImage(tag).inspect();
  return true;
}

/** A file of a container's cgroup on the host (cgroup v1 or v2, the engine's default parent `docker`). */
export function hostCgroup(containerId: string, controller: string, file: string): string {
  const v2 = { 'memory.limit_in_bytes': 'memory.max', 'pids.max': 'pids.max' } as Record<string, string>;
  for (const p of [
    `/sys/fs/cgroup/${controller}/docker/${containerId}/${file}`,
    `/sys/fs/cgroup/docker/${containerId}/${v2[file] ?? file}`,
    `/sys/fs/cgroup/system.slice/docker-${containerId}.scope/${v2[file] ?? file}`,
  ]) {
    try {
      return readFileSync(p, 'utf8').trim();
    } catch {
      // next layout
    }
  }
  return '';
}

export function uniqueOwner(name: string): string {
  return `airlock-test-${name}-${randomBytes(4).toString('hex')}`;
}

/** Remove every container carrying this owner label. */
export async function sweep(docker: Docker, owner: string): Promise<void> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } });
  await Promise.all(
    list.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
}

export function runtimeConfig(dataDir: string, image: string, env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_IMAGE: image,
    AIRLOCK_LOG_LEVEL: 'warn',
    AIRLOCK_POOL_SIZE: '1',
    ...TEST_ORG_MAIL,
    ...ENGINE_ENV,
    ...env,
  });
}

/** Run a command in a container as `user`; returns exit code and output. */
export async function execIn(
  docker: Docker,
  containerId: string,
  cmd: string[],
  opts: { user?: string; env?: string[] } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const exec = await docker
    .getContainer(containerId)
    .exec({ Cmd: cmd, User: opts.user ?? '1001', AttachStdout: true, AttachStderr: true, Env: opts.env ?? [] });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    docker.modem.demuxStream(
      stream,
      { write: (b: Buffer) => out.push(b) } as unknown as NodeJS.WritableStream,
      { write: (b: Buffer) => err.push(b) } as unknown as NodeJS.WritableStream,
    );
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const info = await exec.inspect();
  return { code: info.ExitCode ?? -1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

/**
 * A node script run inside the sandbox as a given uid: looks for a secret (passed hex-encoded
 * so the raw value is in no argv or env) in every /proc/<pid>/environ, /proc/<pid>/cmdline,
 * the writable memory of every process it may read (/proc/<pid>/mem, allowed for the same uid;
 * every readable region with SCAN_ALL=1), and every readable file under /run/airlock (or under
 * SCAN_ROOT, /proc, /sys and /dev excluded). Prints JSON {hits, checked}.
 *
 * Memory: only RESIDENT pages are read. /proc/<pid>/pagemap (bit 63: present) says which pages
 * of a region are in RAM; a page not present is skipped, never read. Reading it through
 * /proc/<pid>/mem would fault it in: the supervisor reserves ~537 MiB it never touches, and
 * faulting that in took the sandbox past its memory limit (OOM-killed mid-scan, empty JSON). A
 * page not present holds nothing a process wrote (zero-fill or unread file pages), and a
 * swapped page (bit 62) is not read either: the sandboxes run without swap. A process whose
 * pagemap cannot be read is not read at all (checked.unpaged): never an unbounded read. The
 * callers prove the scan still reads memory with a canary planted in a process's heap.
 */
export const SECRET_SCAN = `
const fs = require('fs');
const needle = Buffer.from(process.env.NEEDLE_HEX, 'hex');
const self = String(process.pid);
const hits = []; const checked = { environ: 0, cmdline: 0, mem: 0, residentBytes: 0, unpaged: 0, files: 0, denied: 0 };
const PAGE = Number(/KernelPageSize:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/self/smaps', 'utf8'))[1]) * 1024;
// One run of present pages [from, to), read 4 MiB at a time with an overlap of the needle's length
// (a hit across two reads), never past the run: the page after it is not present.
const readRun = (fd, from, to) => {
  for (let at = from; at < to; at += 1 << 22) {
    const len = Math.min((1 << 22) + needle.length, to - at);
    const buf = Buffer.alloc(len);
    let n = 0;
    try { n = fs.readSync(fd, buf, 0, len, at); } catch { return false; }
    if (buf.subarray(0, n).includes(needle)) return true;
  }
  return false;
};
for (const pid of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
  if (pid === self) continue;
  for (const f of ['environ', 'cmdline']) {
    try { const b = fs.readFileSync('/proc/' + pid + '/' + f); checked[f]++; if (b.includes(needle)) hits.push(pid + '/' + f); }
    catch { checked.denied++; }
  }
  try {
    const maps = fs.readFileSync('/proc/' + pid + '/maps', 'utf8').split('\\n');
    const fd = fs.openSync('/proc/' + pid + '/mem', 'r');
    let pm;
    try { pm = fs.openSync('/proc/' + pid + '/pagemap', 'r'); } catch { fs.closeSync(fd); checked.unpaged++; continue; }
    checked.mem++;
    let found = false;
    for (const line of maps) {
      const m = (process.env.SCAN_ALL ? /^([0-9a-f]+)-([0-9a-f]+) r/ : /^([0-9a-f]+)-([0-9a-f]+) rw-p/).exec(line);
      if (!m || found) continue;
      const first = parseInt(m[1], 16) / PAGE, last = parseInt(m[2], 16) / PAGE;
      // Runs of present pages, found through pagemap (8 bytes a page) a window at a time.
      for (let w = first; w < last && !found; w += 1 << 16) {
        const count = Math.min(1 << 16, last - w);
        const ents = Buffer.alloc(count * 8);
        let got = 0;
        try { got = fs.readSync(pm, ents, 0, ents.length, w * 8); } catch { break; }
        for (let i = 0; i < got / 8 && !found; ) {
          if (!(ents.readBigUInt64LE(i * 8) >> 63n)) { i++; continue; }
          let j = i;
          while (j < got / 8 && ents.readBigUInt64LE(j * 8) >> 63n) j++;
          found = readRun(fd, (w + i) * PAGE, (w + j) * PAGE);
          checked.residentBytes += (j - i) * PAGE;
          i = j;
        }
      }
    }
    fs.closeSync(pm);
    fs.closeSync(fd);
    if (found) hits.push(pid + '/mem');
  } catch { checked.denied++; }
}
const skip = new Set(['/proc', '/sys', '/dev']);
const walk = (d) => { let es = []; try { es = fs.readdirSync(d, { withFileTypes: true }); } catch { checked.denied++; return; }
  for (const e of es) { const p = (d === '/' ? '' : d) + '/' + e.name;
    if (skip.has(p)) continue;
    if (e.isDirectory()) walk(p);
    else if (e.isFile()) { try { const b = fs.readFileSync(p); checked.files++; if (b.includes(needle)) hits.push(p); } catch { checked.denied++; } } } };
walk(process.env.SCAN_ROOT || '/run/airlock');
console.log(JSON.stringify({ hits, checked }));
`;

/**
 * The scan's control, run as `user`: plants the secret in a process's environment (`sleep`) and,
 * apart, in a process's heap only (a node process holding the decoded bytes; its environment
 * holds the hex form), then runs SECRET_SCAN. Returns the scan's result and the heap planter's
 * pid, so a caller can require that memory (not just an environ) was found.
 */
export async function plantAndScan(
  docker: Docker,
  id: string,
  user: string,
  secret: string,
  env: string[] = [],
): Promise<{ hits: string[]; checked: Record<string, number>; plantPid: string }> {
  const hex = Buffer.from(secret).toString('hex');
  const plant =
    "const b = Buffer.from(process.env.PLANT_HEX, 'hex'); process.stdout.write('ready ' + b.length); setInterval(() => b.length, 1000);";
  const sh = [
    'R=$(mktemp -p /tmp plant.XXXXXX)',
    'env -u LEAK PLANT_HEX="$NEEDLE_HEX" /usr/local/bin/node -e "$PLANT" > "$R" & P=$!',
    'NEEDLE_LEAK="$LEAK" sleep 30 & S=$!',
    'i=0; until [ -s "$R" ] || [ $i -ge 400 ]; do sleep 0.05; i=$((i + 1)); done',
    'echo "$P"',
    'env -u LEAK /usr/local/bin/node -e "$SCAN"',
    'kill "$P" "$S"; rm -f "$R"',
  ].join('\n');
  const r = await execIn(docker, id, ['/bin/sh', '-c', sh], {
    user,
    env: [`NEEDLE_HEX=${hex}`, `LEAK=${secret}`, `SCAN=${SECRET_SCAN}`, `PLANT=${plant}`, ...env],
  });
  const [plantPid, json] = r.stdout.split('\n');
  return { ...(JSON.parse(json) as { hits: string[]; checked: Record<string, number> }), plantPid };
}

/** Unmount anything mounted under dir (the runtime's workspace binds), deepest first. */
export function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m) => m && (m === dir || m.startsWith(dir + '/')));
  for (const m of mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}

/** A temp data dir whose teardown unmounts leftovers (a SIGKILLed daemon leaves its binds) before removing it. */
export function dataDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-docker-'));
  t.teardown(() => {
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

export interface RuntimeProc {
  child: ChildProcess;
  ready: Promise<{ list: { sessionId: string | null; containerId: string }[] }>;
  /** One turn in the stand-in daemon (user 5 unless given). */
  prompt(
    session: string,
    prompt: string,
    userId?: number,
  ): Promise<{
    containerId?: string;
    stop_reason?: string;
    events?: { type: string; text?: string }[];
    error?: string;
  }>;
}

/** A daemon stand-in: the real runtime and operator control socket (fixtures/runtime-proc.ts). */
export function startRuntimeProc(dataDir: string, image: string, owner: string): RuntimeProc {
  const fixture = join(ROOT, 'dist', 'test', 'docker', 'fixtures', 'runtime-proc.js');
  const child = spawn(process.execPath, [fixture, dataDir, image, owner], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: ((v: unknown) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.shift()?.(JSON.parse(l)));
  const next = () => new Promise<never>((resolve) => lines.push(resolve as (v: unknown) => void));
  const ready = next();
  return {
    child,
    ready,
    prompt(session, prompt, userId) {
      const p = next();
      child.stdin!.write(JSON.stringify({ session, prompt, ...(userId === undefined ? {} : { userId }) }) + '\n');
      return p;
    },
  };
}

/** Run `airlock <args>` (dist/daemon/main.js) with only PATH and `env`; exit code and output. */
export async function runCli(
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [join(ROOT, 'dist', 'daemon', 'main.js'), ...args], {
      env: { PATH: process.env.PATH ?? '', ...ENGINE_ENV, ...env },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * `airlock sessions attach <id>` on a real pseudo-terminal (node-pty), as an operator types it:
 * the CLI sees a TTY on stdin (raw mode, window size 101×37). `env` names the node (its data
 * folder, and in a fleet its database and secret). `session` drives it; the PTY is killed after
 * a generous hang guard.
 */
export async function attachOnPty(
  env: Record<string, string>,
  id: string,
  session: (io: { write(s: string): void; out(): string; resize(cols: number, rows: number): void }) => Promise<void>,
): Promise<{ code: number; out: string }> {
  const { spawn: ptySpawn } = await import('node-pty');
  const pty = ptySpawn(process.execPath, [join(ROOT, 'dist', 'daemon', 'main.js'), 'sessions', 'attach', id], {
    name: 'xterm',
    cols: 101,
    rows: 37,
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...ENGINE_ENV, ...env, TERM: 'xterm' },
  });
  let out = '';
  pty.onData((d) => (out += d));
  const exited = new Promise<number>((r) => pty.onExit(({ exitCode }) => r(exitCode)));
  const guard = setTimeout(() => pty.kill('SIGKILL'), 90_000);
  try {
    await session({ write: (s) => pty.write(s), out: () => out, resize: (cols, rows) => pty.resize(cols, rows) });
    return { code: await exited, out };
  } finally {
    clearTimeout(guard);
  }
}

/**
 * The lines glibc leaves in a sandbox process's /proc/<pid>/environ beside `GLIBC_TUNABLES`: it
 * splits the variable's settings in the process's own env block as it reads them, so each setting
 * after the first shows as a line of its own ("glibc.malloc.…=…"). Exactly these, no others.
 */
export const GLIBC_TUNABLE_LINES: ReadonlySet<string> = new Set(SANDBOX_MALLOC_ENV.GLIBC_TUNABLES.split(':').slice(1));
