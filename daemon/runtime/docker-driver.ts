/** The Docker implementation of SandboxDriver (dockerode over the engine's unix socket). */
import type Docker from 'dockerode';
import { AppError, type Config } from '../../core/index.js';
import { CHILD_GID, CHILD_UID, SANDBOX_RUN_DIR, SANDBOX_WORKSPACE } from '../../core/sandbox-protocol.js';
import { LABEL_OWNER, type OwnedSandbox, type SandboxDetails, type SandboxDriver, type SandboxSpec, type ShellTerminal } from './sandbox-driver.js';

const EXEC_EXIT_WAIT_MS = 5000;
/** /dev/shm of a sandbox (private IPC): a tmpfs of this size. */
export const SHM_BYTES = 16 * 1024 * 1024;

/**
 * The hardening every sandbox container gets: no network, every capability dropped but
 * SETUID/SETGID (the supervisor's drop to the child's uid), no-new-privileges, read-only root
 * with size-limited tmpfs /tmp, /home/agent and /dev/shm (a sandbox cannot fill the host's disk
 * through them; their pages count against the memory limit), the configured pids/memory/cpu
 * limits, an init, private IPC and bounded logs. Exported for the runtime bench's hardened `docker run` baseline.
 */
export function sandboxHostConfig(s: Readonly<Config['sandbox']>, mounts: Docker.MountSettings[]): Docker.HostConfig {
  return {
    Runtime: s.runtime,
    NetworkMode: 'none',
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    CapAdd: ['SETUID', 'SETGID'],
    SecurityOpt: ['no-new-privileges'],
    PidsLimit: hostPidsLimit(s),
    Memory: s.memoryMb * 1024 * 1024,
    MemorySwap: s.memoryMb * 1024 * 1024,
    NanoCpus: Math.round(s.cpus * 1e9),
    Tmpfs: {
      '/tmp': 'rw,noexec,nosuid,nodev,size=64m',
      '/home/agent': `rw,noexec,nosuid,nodev,size=16m,uid=${CHILD_UID},gid=${CHILD_GID},mode=0700`,
    },
    ShmSize: SHM_BYTES,
    Init: true,
    IpcMode: 'private',
    LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '2' } },
    Mounts: mounts,
  };
}

/**
 * The container's pids cgroup limit. Under runc it counts the sandbox's own processes and
 * threads: AIRLOCK_SANDBOX_PIDS. Under runsc it counts gVisor's tasks on the host: the sentry
 * (~60 threads), the gofer and, on the ptrace platform, ~10 stub threads per guest process
 * (measured: an idle session 87 host tasks, 30 more guest processes +300). A sentry that cannot
 * make a thread dies (the sandbox is lost), so the host limit leaves room for AIRLOCK_SANDBOX_PIDS
 * guest processes; this gVisor version has no pids limit of its own inside the sandbox.
 */
export function hostPidsLimit(s: Readonly<Config['sandbox']>): number {
  return s.runtime === 'runsc' ? RUNSC_PIDS_BASE + RUNSC_PIDS_PER_PROCESS * s.pids : s.pids;
}
export const RUNSC_PIDS_BASE = 256;
export const RUNSC_PIDS_PER_PROCESS = 12;

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

export class DockerDriver implements SandboxDriver {
  constructor(
    private readonly docker: Docker,
    private readonly limits: Readonly<Config['sandbox']>,
  ) {}

  async create(spec: SandboxSpec): Promise<string> {
    const workspace: Docker.MountSettings = { Type: 'bind', Source: spec.workspace, Target: SANDBOX_WORKSPACE, ReadOnly: false };
    if (spec.workspacePropagation) workspace.BindOptions = { Propagation: spec.workspacePropagation };
    const c = await this.docker.createContainer({
      name: spec.name,
      Image: spec.image,
      Labels: spec.labels,
      User: '0:0',
      WorkingDir: SANDBOX_WORKSPACE,
      Env: spec.env,
      NetworkDisabled: true,
      HostConfig: sandboxHostConfig(this.limits, [workspace, { Type: 'bind', Source: spec.runDir, Target: SANDBOX_RUN_DIR, ReadOnly: false }]),
    });
    return c.id;
  }

  async start(id: string): Promise<void> {
    await this.docker.getContainer(id).start();
  }

  async inspect(id: string): Promise<SandboxDetails> {
    try {
      const c = await this.docker.getContainer(id).inspect();
      return {
        name: c.Name.replace(/^\//, ''),
        image: c.Config.Image,
        status: c.State.Status,
        startedAt: c.State.StartedAt,
        labels: c.Config.Labels,
        hostConfig: {
          networkMode: c.HostConfig.NetworkMode,
          readonlyRootfs: c.HostConfig.ReadonlyRootfs,
          capDrop: c.HostConfig.CapDrop,
          capAdd: c.HostConfig.CapAdd,
          securityOpt: c.HostConfig.SecurityOpt,
          pidsLimit: c.HostConfig.PidsLimit,
          memory: c.HostConfig.Memory,
          nanoCpus: c.HostConfig.NanoCpus,
          runtime: (c.HostConfig as { Runtime?: string }).Runtime,
        },
      };
    } catch (err) {
      if (statusOf(err) === 404) throw new AppError('ERR_SESSION_NOT_FOUND', 'the container is gone', { status: 404, cause: err });
      throw err;
    }
  }

  async remove(id: string): Promise<void> {
    await this.docker
      .getContainer(id)
      .remove({ force: true })
      .catch((err) => {
        // 404: already gone; 409: a removal is already in progress.
        if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
      });
  }

  async rename(id: string, name: string): Promise<void> {
    await this.docker.getContainer(id).rename({ name });
  }

  async listOwned(owner: string): Promise<OwnedSandbox[]> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } });
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      labels: c.Labels ?? {},
      running: c.State === 'running',
      createdAt: c.Created * 1000,
    }));
  }

  async logs(id: string, tail: number, out: { stdout(chunk: Buffer): void; stderr(chunk: Buffer): void }): Promise<void> {
    const buf = (await this.docker.getContainer(id).logs({ stdout: true, stderr: true, tail, follow: false })) as unknown as Buffer;
    // Demultiplex the engine's 8-byte frame headers (no TTY on sandbox containers).
    let i = 0;
    while (i + 8 <= buf.length) {
      const len = buf.readUInt32BE(i + 4);
      const chunk = buf.subarray(i + 8, i + 8 + len);
      if (buf[i] === 2) out.stderr(chunk);
      else out.stdout(chunk);
      i += 8 + len;
    }
  }

  async shell(id: string, o: { root: boolean; term: string }, tty: ShellTerminal): Promise<number> {
    const exec = await this.docker.getContainer(id).exec({
      Cmd: ['/bin/bash', '-i'],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
      User: o.root ? '0' : String(CHILD_UID),
      WorkingDir: SANDBOX_WORKSPACE,
      Env: ['HOME=/home/agent', 'TERM=' + o.term, 'PS1=sandbox:\\w\\$ '],
    });
    const stream = await exec.start({ hijack: true, stdin: true, Tty: true });
    const resize = () => void exec.resize({ h: tty.stdout.rows || 24, w: tty.stdout.columns || 80 }).catch(() => undefined);
    if (tty.stdin.isTTY) tty.stdin.setRawMode?.(true);
    tty.stdin.pipe(stream);
    stream.pipe(tty.stdout);
    tty.stdout.on('resize', resize);
    resize();
    await new Promise<void>((resolve) => stream.on('end', resolve).on('close', resolve));
    if (tty.stdin.isTTY) tty.stdin.setRawMode?.(false);
    tty.stdin.unpipe(stream);
    return execExitCode(exec);
  }
}

/**
 * The exit status of a finished exec. The engine may report it a moment after the stream
 * closes; if it never does (the container was removed meanwhile), 1.
 */
async function execExitCode(exec: Docker.Exec): Promise<number> {
  const deadline = Date.now() + EXEC_EXIT_WAIT_MS;
  for (;;) {
    const info = await exec.inspect().catch(() => undefined);
    if (info && !info.Running && typeof info.ExitCode === 'number') return info.ExitCode;
    if (!info || Date.now() > deadline) {
      process.stderr.write("attach: the shell's exit status is unknown\n");
      return 1;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
