/** The Docker implementation of SandboxDriver (dockerode over the engine's unix socket). */
import type Docker from 'dockerode';
import { z } from 'zod';
import { AppError, checkAnswer, type Config } from '../../core/index.js';
import { CHILD_GID, CHILD_UID, SANDBOX_RUN_DIR, SANDBOX_WORKSPACE } from '../../core/sandbox-protocol.js';
import {
  LABEL_OWNER,
  type OwnedSandbox,
  type SandboxDetails,
  type SandboxDriver,
  type SandboxSpec,
  type ShellTerminal,
} from './sandbox-driver.js';

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

/** The engine's HTTP status on a dockerode error (404 gone, 409 conflict), if it has one. */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('statusCode' in err)) return undefined;
  return typeof err.statusCode === 'number' ? err.statusCode : undefined;
}

const optionalList = z.array(z.string()).nullable().optional();
/**
 * The fields of the engine's container inspect answer the daemon reads (it has many more,
 * dropped). The hardening fields are shown, not relied on, so they may be absent.
 */
const ContainerInspectSchema = z.object({
  Name: z.string(),
  Config: z.object({ Image: z.string(), Labels: z.record(z.string(), z.string()).nullable().optional() }),
  State: z.object({ Status: z.string(), StartedAt: z.string() }),
  HostConfig: z.object({
    NetworkMode: z.string().optional(),
    ReadonlyRootfs: z.boolean().optional(),
    CapDrop: optionalList,
    CapAdd: optionalList,
    SecurityOpt: optionalList,
    PidsLimit: z.number().nullable().optional(),
    Memory: z.number().optional(),
    NanoCpus: z.number().optional(),
    Runtime: z.string().optional(),
  }),
});

/** A container inspect answer as SandboxDetails; ERR_RUNTIME_BAD_ANSWER when it lacks a field the daemon reads. */
export function sandboxDetailsOf(inspected: unknown): SandboxDetails {
  const c = checkAnswer(
    ContainerInspectSchema,
    inspected,
    'ERR_RUNTIME_BAD_ANSWER',
    "the engine's container inspect answer",
  );
  const h = c.HostConfig;
  return {
    name: c.Name.replace(/^\//, ''),
    image: c.Config.Image,
    status: c.State.Status,
    startedAt: c.State.StartedAt,
    labels: c.Config.Labels ?? {},
    hostConfig: {
      networkMode: h.NetworkMode,
      readonlyRootfs: h.ReadonlyRootfs,
      capDrop: h.CapDrop,
      capAdd: h.CapAdd,
      securityOpt: h.SecurityOpt,
      pidsLimit: h.PidsLimit,
      memory: h.Memory,
      nanoCpus: h.NanoCpus,
      runtime: h.Runtime,
    },
  };
}

/**
 * Split the engine's multiplexed log answer (no TTY on sandbox containers: 8-byte frame headers,
 * byte 0 the stream, bytes 4-7 the length) by stream. Anything but bytes is ERR_RUNTIME_BAD_ANSWER.
 */
export function demuxLogs(answer: unknown, out: { stdout(chunk: Buffer): void; stderr(chunk: Buffer): void }): void {
  if (!Buffer.isBuffer(answer)) throw new AppError('ERR_RUNTIME_BAD_ANSWER', "the engine's log answer is not bytes");
  let i = 0;
  while (i + 8 <= answer.length) {
    const len = answer.readUInt32BE(i + 4);
    const chunk = answer.subarray(i + 8, i + 8 + len);
    if (answer[i] === 2) out.stderr(chunk);
    else out.stdout(chunk);
    i += 8 + len;
  }
}

export class DockerDriver implements SandboxDriver {
  constructor(
    private readonly docker: Docker,
    private readonly limits: Readonly<Config['sandbox']>,
  ) {}

  async create(spec: SandboxSpec): Promise<string> {
    const workspace: Docker.MountSettings = {
      Type: 'bind',
      Source: spec.workspace,
      Target: SANDBOX_WORKSPACE,
      ReadOnly: false,
    };
    if (spec.workspacePropagation) workspace.BindOptions = { Propagation: spec.workspacePropagation };
    const c = await this.docker.createContainer({
      name: spec.name,
      Image: spec.image,
      Labels: spec.labels,
      User: '0:0',
      WorkingDir: SANDBOX_WORKSPACE,
      Env: spec.env,
      NetworkDisabled: true,
      HostConfig: sandboxHostConfig(this.limits, [
        workspace,
        { Type: 'bind', Source: spec.runDir, Target: SANDBOX_RUN_DIR, ReadOnly: false },
      ]),
    });
    return c.id;
  }

  async start(id: string): Promise<void> {
    await this.docker.getContainer(id).start();
  }

  async inspect(id: string): Promise<SandboxDetails> {
    let inspected: unknown;
    try {
      inspected = await this.docker.getContainer(id).inspect();
    } catch (err) {
      if (statusOf(err) === 404) throw new AppError('ERR_SESSION_NOT_FOUND', 'the container is gone', { cause: err });
      throw err;
    }
    return sandboxDetailsOf(inspected);
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

  async logs(
    id: string,
    tail: number,
    out: { stdout(chunk: Buffer): void; stderr(chunk: Buffer): void },
  ): Promise<void> {
    // follow: false answers the whole log as one Buffer (dockerode's types say a stream).
    const answer: unknown = await this.docker
      .getContainer(id)
      .logs({ stdout: true, stderr: true, tail, follow: false });
    demuxLogs(answer, out);
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
    const resize = () =>
      void exec.resize({ h: tty.stdout.rows || 24, w: tty.stdout.columns || 80 }).catch(() => undefined);
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
