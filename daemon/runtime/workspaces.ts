/**
 * Per-user workspaces with a disk quota.
 *
 * A user's workspace `<data dir>/workspaces/<user id>/` is the mount point of an ext4 file system
 * in a sparse image file `<data dir>/workspace-images/<user id>.ext4` (root only, 0600), made
 * with the size `AIRLOCK_WORKSPACE_QUOTA_MB` and loop-mounted by the (root) daemon. Writes past
 * the quota fail with ENOSPC inside the sandbox and take nothing from the host's other files:
 * the image never holds more than its size. Mounted `nosuid,nodev,noexec,discard` (a deleted
 * file's blocks go back to the host): the sandbox's /workspace inherits the flags under runc, and
 * under runsc gVisor's gofer cannot map a file of it for execution either (docs/security.md).
 *
 * Lifecycle: every existing image is mounted at daemon start (the web app serves chart
 * attachments from the workspace, also for users without a live session) and a new one on the
 * user's first session; all are unmounted when the daemon stops with no sandbox left running
 * (otherwise they stay mounted for the next daemon to adopt). A mount point found already
 * mounted is reused.
 *
 * Quota changes: a larger setting grows each image when it is next mounted (e2fsck, the file
 * extended, `resize2fs` on the unmounted image; online growth is refused on some kernels, so a
 * workspace kept mounted across a restart grows at its next mount); a smaller one is not applied
 * to existing images (ext4 cannot shrink while mounted and the data may not fit): it is logged
 * and applies to new workspaces only.
 *
 * Plain workspace folders from before quotas are migrated on first use: copied (`cp -a`) into a
 * fresh image, then removed and replaced by the mount. One whose data does not fit the quota is
 * left as it is (no quota for that user, logged as an error) until an operator deals with it.
 *
 * Without root, without e2fsprogs, or with `AIRLOCK_WORKSPACE_QUOTA_MB=0`, workspaces are plain
 * folders without a quota (a warning says why, once).
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  ftruncateSync,
} from 'node:fs';
import { join } from 'node:path';
import { AppError, type Logger } from '../../core/index.js';
import { CHILD_GID, CHILD_UID } from '../../core/sandbox-protocol.js';

const MB = 1024 * 1024;
const IMAGE_RE = /^([1-9][0-9]{0,15})\.ext4$/;
/** Mount options of a workspace file system (no setuid files, device nodes or programs from a user's image). */
const MOUNT_OPTS = 'loop,nosuid,nodev,noexec,discard';
/** The same flags on a mount found in place (an earlier daemon's, perhaps without noexec). */
const REMOUNT_OPTS = 'remount,nosuid,nodev,noexec';

function run(cmd: string, args: string[]): { ok: boolean; status: number | null; err: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return {
    ok: r.status === 0,
    status: r.status,
    err: (r.error?.message ?? `${r.stderr ?? ''}${r.stderr ? '' : (r.stdout ?? '')}`).trim(),
  };
}

/** The mount points under a folder (or the folder itself) and their sources, from mountinfo. */
export function mountsOf(path: string): { target: string; source: string; fstype: string }[] {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => {
        const [pre, post] = l.split(' - ');
        const f = pre?.split(' ') ?? [];
        const p = post?.split(' ') ?? [];
        return { target: f[4] ?? '', source: p[1] ?? '', fstype: p[0] ?? '' };
      })
      .filter((m) => m.target === path);
  } catch {
    return [];
  }
}

function isEmptyDir(p: string): boolean {
  try {
    return readdirSync(p).length === 0;
  } catch {
    return false;
  }
}

export class WorkspaceVolumes {
  readonly root: string;
  readonly imagesRoot: string;
  private readonly quotaBytes: number;
  private mode: 'quota' | 'plain' = 'plain';
  private readonly mounted = new Set<string>();
  private readonly warnedShrink = new Set<number>();
  /** Users whose folder from before quotas did not fit (tried once per daemon run). */
  private readonly unmigrated = new Set<number>();

  constructor(
    dataDir: string,
    quotaMb: number,
    private readonly log: Logger,
  ) {
    this.root = join(dataDir, 'workspaces');
    this.imagesRoot = join(dataDir, 'workspace-images');
    this.quotaBytes = quotaMb * MB;
  }

  /** Whether workspaces get a quota on this host (decided by `init`). */
  get quota(): boolean {
    return this.mode === 'quota';
  }

  /** Decide quota or plain folders, and mount every existing image. */
  init(): void {
    mkdirSync(this.root, { recursive: true, mode: 0o711 });
    const why =
      this.quotaBytes === 0
        ? 'AIRLOCK_WORKSPACE_QUOTA_MB=0'
        : process.getuid?.() !== 0
          ? 'the daemon is not root (loop mounts need root)'
          : !run('mkfs.ext4', ['-V']).ok
            ? 'mkfs.ext4 is missing (install e2fsprogs)'
            : undefined;
    if (why) {
      this.mode = 'plain';
      if (this.quotaBytes > 0)
        this.log.warn(
          { why },
          'workspace quota off: workspaces are plain folders, a sandbox can fill the disk they are on',
        );
      return;
    }
    this.mode = 'quota';
    mkdirSync(this.imagesRoot, { recursive: true, mode: 0o700 });
    chmodSync(this.imagesRoot, 0o700);
    for (const f of readdirSync(this.imagesRoot)) {
      const m = IMAGE_RE.exec(f);
      if (!m) continue;
      try {
        this.ensure(Number(m[1]));
      } catch (err) {
        this.log.error(
          { userId: Number(m[1]), err: (err as Error).message },
          'workspace image could not be mounted at start',
        );
      }
    }
  }

  private imageOf(userId: number): string {
    return join(this.imagesRoot, `${userId}.ext4`);
  }

  private isMounted(path: string): boolean {
    return mountsOf(path).length > 0;
  }

  /** The user's workspace, ready to be bound into a sandbox: mounted (quota) or a folder (plain). */
  ensure(userId: number): string {
    const ws = join(this.root, String(userId));
    if (this.mode === 'plain' || this.unmigrated.has(userId)) return this.plainFolder(ws);
    if (this.isMounted(ws)) {
      run('mount', ['-o', REMOUNT_OPTS, ws]); // best effort: new sandboxes bind it with these flags
      this.mounted.add(ws);
      this.grow(userId, ws);
      return ws;
    }
    const image = this.imageOf(userId);
    let fresh = false;
    if (!existsSync(image)) {
      const legacy =
        existsSync(ws) && readdirSync(ws).some((e) => e !== '.agent-attachments' || !isEmptyDir(join(ws, e)));
      if (legacy) {
        if (!this.migrate(userId, ws)) {
          this.unmigrated.add(userId);
          return this.plainFolder(ws);
        }
      } else {
        this.makeImage(image, this.quotaBytes);
        fresh = true;
      }
    }
    this.grow(userId);
    mkdirSync(ws, { recursive: true, mode: 0o711 });
    const m = run('mount', ['-o', MOUNT_OPTS, image, ws]);
    if (!m.ok) throw new AppError('ERR_SANDBOX_WORKSPACE', `cannot mount the workspace image: ${m.err}`);
    this.mounted.add(ws);
    // ext4's lost+found is of no use to the agent; removed from a new image only (a folder of
    // that name in a used workspace is the user's).
    if (fresh) rmSync(join(ws, 'lost+found'), { recursive: true, force: true });
    this.prepareRoot(ws);
    return ws;
  }

  /** A workspace without quota: a plain folder owned by the child's uid. */
  private plainFolder(ws: string): string {
    if (!existsSync(ws)) mkdirSync(ws, { recursive: true, mode: 0o711 });
    this.prepareRoot(ws);
    return ws;
  }

  /**
   * The workspace's top folder: owned by the agent child (uid 1001), 0711 (root in the sandbox
   * has no DAC override: it needs x to chdir there before dropping to 1001; other host users
   * cannot list it), with the attachments folder.
   */
  private prepareRoot(ws: string): void {
    const att = join(ws, '.agent-attachments');
    if (!existsSync(att)) {
      mkdirSync(att, { mode: 0o700 });
      chownSync(att, CHILD_UID, CHILD_GID);
    }
    chownSync(ws, CHILD_UID, CHILD_GID);
    chmodSync(ws, 0o711);
  }

  /** A sparse image of `bytes` with an empty ext4 whose root the child owns. */
  private makeImage(image: string, bytes: number): void {
    const tmp = `${image}.new`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      ftruncateSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    // -m 0: no blocks reserved for root; lazy init keeps the creation fast.
    const r = run('mkfs.ext4', [
      '-q',
      '-F',
      '-m',
      '0',
      '-E',
      `root_owner=${CHILD_UID}:${CHILD_GID},lazy_itable_init=1,lazy_journal_init=1,nodiscard`,
      tmp,
    ]);
    if (!r.ok) {
      rmSync(tmp, { force: true });
      throw new AppError('ERR_SANDBOX_WORKSPACE', `cannot make the workspace image: ${r.err}`);
    }
    renameSync(tmp, image);
  }

  /** Copy a plain workspace folder from before quotas into a new image; false when it does not fit. */
  private migrate(userId: number, ws: string): boolean {
    const image = this.imageOf(userId);
    const staging = `${image}.migrating`;
    const mnt = join(this.imagesRoot, `.mnt-${userId}`);
    rmSync(staging, { force: true });
    this.makeImage(staging, this.quotaBytes);
    mkdirSync(mnt, { recursive: true, mode: 0o700 });
    const m = run('mount', ['-o', MOUNT_OPTS, staging, mnt]);
    if (!m.ok) {
      rmSync(staging, { force: true });
      throw new AppError('ERR_SANDBOX_WORKSPACE', `cannot mount the workspace image: ${m.err}`);
    }
    rmSync(join(mnt, 'lost+found'), { recursive: true, force: true });
    const cp = run('cp', ['-a', `${ws}/.`, `${mnt}/`]);
    run('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
    if (!cp.ok) {
      rmSync(staging, { force: true });
      this.log.error(
        { userId, err: cp.err.slice(0, 300) },
        'workspace from before quotas does not fit AIRLOCK_WORKSPACE_QUOTA_MB; it stays a plain folder without quota',
      );
      return false;
    }
    renameSync(staging, image);
    for (const e of readdirSync(ws)) rmSync(join(ws, e), { recursive: true, force: true });
    this.log.info({ userId }, 'workspace from before quotas moved into its quota image');
    return true;
  }

  /**
   * Grow an image to the quota when the setting went up; a smaller setting is only logged.
   * Offline (before mounting: e2fsck, then resize2fs on the file). A workspace that is mounted
   * already (sessions kept running across a daemon restart) grows at a later mount.
   */
  private grow(userId: number, mountedOn?: string): void {
    const image = this.imageOf(userId);
    let size: number;
    try {
      size = statSync(image).size;
    } catch {
      return; // a plain folder (mounted by someone else)
    }
    if (size > this.quotaBytes) {
      if (!this.warnedShrink.has(userId))
        this.log.warn(
          { userId, imageMb: Math.round(size / MB) },
          'workspace image is larger than AIRLOCK_WORKSPACE_QUOTA_MB; it is not shrunk (the smaller quota applies to new workspaces)',
        );
      this.warnedShrink.add(userId);
      return;
    }
    if (size === this.quotaBytes) return;
    if (mountedOn) {
      this.log.info({ userId }, 'workspace image is mounted; it grows to the new quota at its next mount');
      return;
    }
    // e2fsck -p: 0 clean, 1 errors corrected; anything else leaves the image as it is.
    const fsck = run('e2fsck', ['-f', '-p', image]);
    if (fsck.status !== 0 && fsck.status !== 1) {
      this.log.error({ userId, err: fsck.err.slice(0, 300) }, 'workspace image not grown: e2fsck found problems');
      return;
    }
    const fd = openSync(image, 'r+');
    try {
      ftruncateSync(fd, this.quotaBytes);
    } finally {
      closeSync(fd);
    }
    const r = run('resize2fs', [image]);
    if (!r.ok)
      this.log.error({ userId, err: r.err.slice(0, 300) }, 'workspace image could not be grown to the new quota');
    else this.log.info({ userId, mb: this.quotaBytes / MB }, 'workspace image grown to the new quota');
  }

  /** Unmount every workspace this daemon mounted (daemon stop with no sandbox left). */
  unmountAll(): void {
    for (const ws of this.mounted) {
      if (!run('umount', [ws]).ok) run('umount', ['-l', ws]);
    }
    this.mounted.clear();
  }
}
