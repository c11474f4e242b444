/**
 * The pieces of bench/web-cpu.bench.ts: one `airlock serve` child process per build (this tree's
 * dist/ or another checkout's, e.g. the issue-time main), each with its own data folder, owner
 * label, sandbox image and user; and readings of CPU-seconds so far by component, taken from
 * outside every process so that no reading costs the measured parts anything:
 *
 * - sandbox: every container's cgroup (cpuacct.usage, or cpu.stat's usage_usec on cgroup v2),
 *   attributed to a build afterwards by its owner label;
 * - engine: the default engine's dockerd (/var/run/docker.pid) and its containerd, children reaped
 *   included (global: other work's Docker calls count too; the bench subtracts their rate, measured
 *   while the builds are idle) and the shims of the build's own containers;
 * - daemon: the serve process and its descendants, from a cpuacct cgroup of their own (cgroup v1;
 *   otherwise /proc/<pid>/stat of the process tree, in 10 ms ticks).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type Docker from 'dockerode';
import { Client, ndjsonObjects } from '../test/helpers/client.js';
import { freePort } from '../test/helpers/app.js';
import { waitFor } from '../test/helpers/wait.js';
import { LABEL_OWNER } from '../daemon/runtime/session-manager.js';

/** USER_HZ: /proc/<pid>/stat counts clock ticks of 1/100 s on Linux. */
const TICK_S = 0.01;
/** comm is cut at 15 characters: containerd-shim-runc-v2 reads as containerd-shim. */
const SHIM = 'containerd-shim';
const PASSWORD = 'web-cpu-user-password-0123';

export interface Reading {
  /** container id → CPU-seconds of its cgroup */
  cgroups: Map<string, number>;
  /** the default engine's dockerd and containerd, CPU-seconds (children reaped included) */
  engine: number;
  /** shim pid → CPU-seconds (children reaped included) and its container's id */
  shims: Map<number, { cpu: number; cid?: string }>;
  /** the serve process tree's CPU-seconds */
  daemon: number;
  /** wall clock, ms */
  at: number;
}

export interface Split {
  sandbox: number;
  engine: number;
  daemon: number;
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** Every container cgroup's CPU-seconds (cgroup v1 cgroupfs, v2 systemd or cgroupfs). */
export function cgroupCpu(): Map<string, number> {
  const out = new Map<string, number>();
  const v1 = '/sys/fs/cgroup/cpuacct/docker';
  const tryDir = (id: string, file: string) => {
    const text = readText(file);
    if (text === undefined) return;
    const usec = /^usage_usec (\d+)$/m.exec(text);
    out.set(id, usec ? Number(usec[1]) / 1e6 : Number(text.trim()) / 1e9);
  };
  const list = (dir: string) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  for (const id of list(v1)) if (/^[0-9a-f]{64}$/.test(id)) tryDir(id, `${v1}/${id}/cpuacct.usage`);
  for (const d of list('/sys/fs/cgroup/system.slice')) {
    const m = /^docker-([0-9a-f]{64})\.scope$/.exec(d);
    if (m) tryDir(m[1], `/sys/fs/cgroup/system.slice/${d}/cpu.stat`);
  }
  for (const id of list('/sys/fs/cgroup/docker'))
    if (/^[0-9a-f]{64}$/.test(id)) tryDir(id, `/sys/fs/cgroup/docker/${id}/cpu.stat`);
  return out;
}

/** Every process: its comm, parent and CPU-seconds with its reaped children. */
function processes(): Map<number, { comm: string; ppid: number; cpu: number }> {
  const out = new Map<number, { comm: string; ppid: number; cpu: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readText(`/proc/${name}/stat`);
    if (!stat) continue; // gone meanwhile
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    // After the comm: state, ppid, …; utime 14, stime 15, cutime 16, cstime 17 (1-based, proc(5)).
    const f = stat.slice(close + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    out.set(Number(name), { comm, ppid: Number(f[1]), cpu: ticks * TICK_S });
  }
  return out;
}

const shimIds = new Map<number, string | undefined>();
function shimContainer(pid: number): string | undefined {
  if (!shimIds.has(pid)) {
    const args = (readText(`/proc/${pid}/cmdline`) ?? '').split('\0');
    const i = args.indexOf('-id');
    shimIds.set(pid, i >= 0 ? args[i + 1] : undefined);
  }
  return shimIds.get(pid);
}

/** The default engine's dockerd (its pid file) and the containerd it runs. */
function enginePids(procs: ReturnType<typeof processes>): number[] {
  const dockerd = Number(readText('/var/run/docker.pid')?.trim());
  return [...procs]
    .filter(([pid, p]) => pid === dockerd || (p.comm === 'containerd' && p.ppid === dockerd))
    .map(([pid]) => pid);
}

/** CPU-seconds so far of every container, the engine's processes and the serve process tree of `serve`. */
export function reading(serve: { pid: number; cgroup?: string }): Reading {
  const cgroups = cgroupCpu();
  const procs = processes();
  const shims = new Map<number, { cpu: number; cid?: string }>();
  let daemon = 0;
  for (const [pid, p] of procs) {
    if (p.comm === SHIM) shims.set(pid, { cpu: p.cpu, cid: shimContainer(pid) });
    if (serve.cgroup) continue;
    let q: number | undefined = pid;
    for (let hops = 0; q && q !== 1 && hops < 20; hops++) {
      if (q === serve.pid) {
        daemon += p.cpu;
        break;
      }
      q = procs.get(q)?.ppid;
    }
  }
  if (serve.cgroup) daemon = Number(readText(`${serve.cgroup}/cpuacct.usage`)?.trim()) / 1e9;
  const engine = enginePids(procs).reduce((s, pid) => s + procs.get(pid)!.cpu, 0);
  return { cgroups, engine, shims, daemon, at: Date.now() };
}

/**
 * What each component of a build used between two readings; `mine` = the build's containers,
 * `background` = the engine's CPU-seconds a second when the builds are idle (subtracted). A
 * container or shim new since `a` counts from 0; one gone by `b` is not counted.
 */
export function spent(
  a: Reading,
  b: Reading,
  mine: Set<string>,
  background = 0,
): Split & { byContainer: Map<string, number> } {
  const byContainer = new Map<string, number>();
  for (const [id, v] of b.cgroups) if (mine.has(id)) byContainer.set(id, Math.max(0, v - (a.cgroups.get(id) ?? 0)));
  let shims = 0;
  for (const [pid, e] of b.shims)
    if (e.cid && mine.has(e.cid)) shims += Math.max(0, e.cpu - (a.shims.get(pid)?.cpu ?? 0));
  return {
    sandbox: [...byContainer.values()].reduce((s, x) => s + x, 0),
    engine: b.engine - a.engine - (background * (b.at - a.at)) / 1000 + shims,
    daemon: b.daemon - a.daemon,
    byContainer,
  };
}

/** One build's `airlock serve` child: its CLI, image, data folder, owner label, user and browser-like client. */
export class Build {
  readonly dir = mkdtempSync(join(tmpdir(), 'airlock-web-cpu-'));
  readonly owner = `airlock-web-cpu-${randomBytes(4).toString('hex')}`;
  /** Its containers so far (by the owner label). */
  readonly mine = new Set<string>();
  url = '';
  client?: Client;
  private proc?: ChildProcess;
  private out = '';

  constructor(
    readonly name: 'old' | 'new',
    /** A checkout with a built dist/ (the serve CLI and the modules that make the user). */
    readonly root: string,
    readonly image: string,
  ) {}

  /** The serve process and, where one could be made, its cpuacct cgroup. */
  serve: { pid: number; cgroup?: string } = { pid: 0 };

  /** The user in the build's own database (its own modules, so its schema), then the serve process, then the login. */
  async start(env: Record<string, string>, googleToken: string): Promise<void> {
    writeFileSync(join(this.dir, 'runtime-owner'), this.owner + '\n', { mode: 0o600 });
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    const full = { ...env, AIRLOCK_IMAGE: this.image, AIRLOCK_DATA_DIR: this.dir, AIRLOCK_PORT: String(port) };
    await this.makeUser(full, googleToken);
    const p = spawn(process.execPath, [join(this.root, 'dist', 'daemon', 'main.js'), 'serve'], {
      env: { PATH: process.env.PATH ?? '', ...full },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = p;
    this.serve = { pid: p.pid!, cgroup: ownCgroup(this.owner, p.pid!) };
    const keep = (d: Buffer) => (this.out = (this.out + d.toString()).slice(-20_000));
    p.stdout!.on('data', keep);
    p.stderr!.on('data', keep);
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`${this.name} serve exited: ${this.out.slice(-2000)}`);
        return fetch(`${this.url}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
      },
      `${this.name} serve to listen`,
      120_000,
      100,
    );
    this.client = new Client(this.url);
    const r = await this.client.login('webcpu', PASSWORD);
    if (r.status !== 200) throw new Error(`${this.name} login: ${r.status}`);
  }

  private async makeUser(env: Record<string, string>, googleToken: string): Promise<void> {
    const mod = (p: string) => import(pathToFileURL(join(this.root, 'dist', p)).href);
    const core = await mod('core/index.js');
    const { openDatabase } = await mod('domain/db/index.js');
    const { AccountStore } = await mod('domain/accounts.js');
    const { createUser } = await mod('domain/users.js');
    const database = await openDatabase({ file: join(this.dir, 'airlock.db') });
    try {
      const accounts = new AccountStore(database.sql, core.atRestEncryptor(core.loadConfig(env)));
      const passwordHash = await core.hashPassword(PASSWORD);
      const u = await createUser(database.sql, { username: 'webcpu', email: 'webcpu@example.test', passwordHash });
      await accounts.connect(u.id, {
        email: 'webcpu@example.test',
        scopes: [...core.WORKSPACE_SCOPES],
        accessToken: googleToken,
        expiresAt: Date.now() + 24 * 3600_000,
      });
    } finally {
      await database.close();
    }
  }

  /** Add the build's containers (by its owner label) to `mine`: a Docker API call, so only between readings. */
  async refreshMine(docker: Docker): Promise<void> {
    const all = await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${this.owner}`] } });
    for (const c of all) this.mine.add(c.Id);
  }

  /** One turn as a browser sends it: POST the prompt, read the NDJSON stream to its `done`. */
  async turn(message: string, sessionId?: string): Promise<{ sessionId: string; stop: string }> {
    const res = await this.client!.request('POST', '/api/chat/messages', {
      message,
      ...(sessionId ? { session_id: sessionId } : {}),
    });
    if (res.status !== 200) throw new Error(`${this.name} turn: HTTP ${res.status} ${await res.text()}`);
    const sid = res.headers.get('x-chat-session-id') ?? sessionId;
    let stop = '';
    for await (const e of ndjsonObjects(res.body!.getReader()))
      if (e.type === 'done') stop = `${e.stop_reason}${e.error?.code ? ` ${e.error.code}` : ''}`;
    if (!sid || stop !== 'end_turn') throw new Error(`${this.name} turn "${message}": ${stop || 'no done'}`);
    return { sessionId: sid, stop };
  }

  async deleteChat(sessionId: string): Promise<void> {
    const r = await this.client!.request('DELETE', `/api/chat/sessions/${sessionId}`);
    if (r.status !== 204) throw new Error(`${this.name} delete: HTTP ${r.status}`);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('close', r));
    p.kill('SIGTERM');
    await gone;
    try {
      if (this.serve.cgroup) rmdirSync(this.serve.cgroup);
    } catch {
      // a child still in it: left for the host's clean-up
    }
  }
}

/** A cpuacct cgroup (v1) of the process's own, so that its CPU and its children's reads in ns; undefined where none can be made. */
function ownCgroup(name: string, pid: number): string | undefined {
  const dir = `/sys/fs/cgroup/cpuacct/${name}`;
  try {
    mkdirSync(dir);
    writeFileSync(`${dir}/cgroup.procs`, String(pid));
    return dir;
  } catch {
    return undefined;
  }
}
