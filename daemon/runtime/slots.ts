/**
 * Slot folders and workspace mounts on the host.
 *
 * - `<data dir>/sandboxes/<slot>/` (0711) is one container's folder: `run/` is mounted at
 *   /run/airlock (profile.json, control.sock, egress.sock), `claim.json` (0600, root only, not
 *   mounted) records which session and user a container serves, and a pool container's
 *   `workspace/` is the empty folder its /workspace starts from.
 * - `<data dir>/workspaces/<user id>/` (owned by the child's uid, 0711) is the user's workspace,
 *   with its disk quota (workspaces.ts).
 *
 * With a root daemon the sandboxes folder is a tmpfs of its own (`prepareRoot`), mounted shared:
 * a bind from it shows inside the container as `/<slot>/run` on `tmpfs airlock-slots`, never the
 * host path of the data folder (`/proc/self/mountinfo` names the root of every mount inside its
 * file system). Pool containers are created before their user is known, so their /workspace is
 * the slot's empty `workspace/` mounted with rslave propagation; at claim the user's workspace is
 * bind-mounted onto it on the host and the mount propagates into the running container.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { AppError, type Logger } from '../../core/index.js';
import { ProfileRouteSchema, type ProfileRoute, type SessionProfile } from '../../core/sandbox-protocol.js';
import { mountsOf, WorkspaceVolumes } from './workspaces.js';

const SLOT_RE = /^[a-f0-9]{16}$/;
const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * `<slot>/claim.json`: what a restarted daemon needs to adopt a session. Names only, never a
 * secret value.
 */
export interface Claim {
  session_id: string;
  user_id: number;
  claimed_at: number;
  egress_allow: string[];
  /** Env names of the real tokens the egress gateway holds (e.g. MAIL_ACCESS_TOKEN), for rotation and adoption. */
  token_envs: string[];
  /**
   * The session's route table as the daemon made it: a restarted daemon's egress gateway admits
   * against this copy (never profile.json, which root in the container could rewrite).
   */
  routes?: ProfileRoute[];
  /** Digest of the agent env the session started with (its agent policy); see policyChanged. */
  agent_env_digest?: string;
  /** The revision of the chat's model it was prepared for (`<id>:<version>`; docs/chat.md "A model per chat"). */
  model_revision?: string;
}

/** A claim.json as read back: checked field by field; anything malformed is no claim. */
export function parseClaim(text: string): Claim | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.session_id !== 'string' || !o.session_id) return undefined;
  if (typeof o.user_id !== 'number' || !Number.isSafeInteger(o.user_id) || o.user_id <= 0) return undefined;
  if (typeof o.claimed_at !== 'number') return undefined;
  const strings = (x: unknown) => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
  return {
    session_id: o.session_id,
    user_id: o.user_id,
    claimed_at: o.claimed_at,
    egress_allow: strings(o.egress_allow),
    token_envs: strings(o.token_envs).filter((k) => ENV_NAME.test(k)),
    ...(typeof o.agent_env_digest === 'string' ? { agent_env_digest: o.agent_env_digest } : {}),
    ...(typeof o.model_revision === 'string' && o.model_revision.length <= 200
      ? { model_revision: o.model_revision }
      : {}),
    ...(Array.isArray(o.routes)
      ? {
          routes: o.routes.flatMap((r) => {
            const c = ProfileRouteSchema.safeParse(r);
            return c.success ? [c.data] : [];
          }),
        }
      : {}),
  };
}

export function writeFileAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, data, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/**
 * profile.json into a folder (a slot's run/, mounted at /run/airlock), atomically. World-readable
 * by design: routes and token references, never a value. Returns the file's path.
 */
export function writeProfile(dir: string, profile: SessionProfile): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'profile.json');
  writeFileAtomic(file, JSON.stringify(profile, null, 2) + '\n', 0o644);
  return file;
}

/** The airlock.owner label value of a data dir: an id stored in `<data dir>/runtime-owner`. */
export function ownerIdFor(dataDir: string): string {
  const p = join(dataDir, 'runtime-owner');
  try {
    const v = readFileSync(p, 'utf8').trim();
    if (/^[a-z0-9-]{4,64}$/.test(v)) return v;
  } catch {
    // first start: create it below
  }
  const v = `airlock-${randomBytes(6).toString('hex')}`;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(p, v + '\n', { mode: 0o600 });
  return v;
}

export interface Slot {
  slot: string;
  dir: string;
  runDir: string;
}

export class SlotFolders {
  readonly root: string;
  readonly workspaces: WorkspaceVolumes;
  private madeRootMount = false;

  constructor(
    dataDir: string,
    private readonly log: Logger,
    workspaceQuotaMb = 0,
  ) {
    this.root = join(dataDir, 'sandboxes');
    this.workspaces = new WorkspaceVolumes(dataDir, workspaceQuotaMb, log);
  }

  get workspacesRoot(): string {
    return this.workspaces.root;
  }

  /** Make the folders; mount the existing workspace images (quota). */
  init(): void {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    this.workspaces.init();
  }

  /** The folder of a slot label value; undefined for a value that is not one of our slot names. */
  dirOf(slot: string | undefined): Slot | undefined {
    if (!slot || !SLOT_RE.test(slot)) return undefined;
    const dir = join(this.root, slot);
    return { slot, dir, runDir: join(dir, 'run') };
  }

  /** A new slot folder; `pool` adds the empty `workspace/` a pool container's /workspace starts from. */
  create(pool: boolean): Slot {
    const slot = randomBytes(8).toString('hex');
    const dir = join(this.root, slot);
    const runDir = join(dir, 'run');
    mkdirSync(runDir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o711);
    chmodSync(runDir, 0o755);
    if (pool) mkdirSync(join(dir, 'workspace'), { mode: 0o711 });
    return { slot, dir, runDir };
  }

  /** The user's workspace, made (and mounted, with its quota) on first use. */
  ensureWorkspace(userId: number): string {
    return this.workspaces.ensure(userId);
  }

  readClaim(dir: string): Claim | undefined {
    try {
      return parseClaim(readFileSync(join(dir, 'claim.json'), 'utf8'));
    } catch {
      return undefined; // no claim.json: an unclaimed (pool) container
    }
  }

  writeClaim(dir: string, claim: Claim): void {
    writeFileAtomic(join(dir, 'claim.json'), JSON.stringify(claim) + '\n', 0o600);
  }

  /**
   * Make the sandboxes folder a shared tmpfs of its own: binds from it hide the data folder's
   * host path from the sandbox, and workspace binds made at claim propagate into pool containers.
   * An existing mount there is kept (a previous daemon's, still serving sandboxes). False without
   * root or when the mount fails (then no pool, and the host path shows in the sandbox).
   */
  prepareRoot(): boolean {
    if (process.getuid?.() !== 0) {
      this.log.warn(
        'pool disabled: the daemon is not root, so it cannot bind workspaces into pool containers (the sandbox also sees the host path of the data folder in /proc/self/mountinfo)',
      );
      return false;
    }
    const existing = mountsOf(this.root).at(-1); // the top one of stacked mounts
    if (!existing) {
      // Slot folders of running sandboxes from a daemon that used a plain folder here: a tmpfs on
      // top would hide them, so bind the folder onto itself (the host path stays visible to those
      // sandboxes until a daemon starts with none running).
      const leftovers = readdirSync(this.root).some((e) => SLOT_RE.test(e));
      const r = leftovers
        ? spawnSync('mount', ['--bind', this.root, this.root])
        : spawnSync('mount', [
            '-t',
            'tmpfs',
            '-o',
            'mode=0700,size=64m,nosuid,nodev,noexec',
            'airlock-slots',
            this.root,
          ]);
      if (r.status !== 0) {
        this.log.warn({ err: r.stderr?.toString().trim() }, 'pool disabled: cannot mount the sandboxes folder');
        return false;
      }
      if (leftovers)
        this.log.warn(
          'sandboxes folder bound onto itself (slot folders from before): the sandboxes see the host path of the data folder until a daemon starts with none running',
        );
      this.madeRootMount = true;
    } else if (existing.fstype === 'tmpfs' && existing.source === 'airlock-slots') {
      // Our tmpfs, left by a daemon that did not stop cleanly (SIGKILL, a lost host): this daemon
      // adopts it with the sandboxes on it, and so releases it at its own clean stop.
      this.madeRootMount = true;
    } else if (existing.fstype !== 'tmpfs') {
      this.log.warn(
        'the sandboxes folder is a bind mount from before: the sandboxes see the host path of the data folder until a daemon starts with none running',
      );
    }
    const r = spawnSync('mount', ['--make-shared', this.root]);
    if (r.status !== 0) {
      this.log.warn({ err: r.stderr?.toString().trim() }, 'pool disabled: cannot make the sandboxes folder shared');
      return false;
    }
    return true;
  }

  /**
   * Undo prepareRoot's own mount and unmount the workspaces (only when no sandbox of ours runs
   * on them any more: unmounting under a live pool-claimed session would propagate into its
   * /workspace).
   */
  releaseMounts(): void {
    if (this.madeRootMount) spawnSync('umount', ['-l', this.root]);
    this.madeRootMount = false;
    this.workspaces.unmountAll();
  }

  /** Bind the user's workspace onto a pool slot's `workspace/`; returns the slot path bound. */
  bindWorkspace(dir: string, ws: string): string {
    const slot = join(dir, 'workspace');
    const r = spawnSync('mount', ['--bind', ws, slot]);
    if (r.status !== 0)
      throw new AppError('ERR_SANDBOX_START', `cannot bind the workspace: ${r.stderr?.toString().trim()}`);
    return slot;
  }

  /**
   * Remove a slot folder. Never recurse through a user's workspace still bound into it: that
   * would delete the user's files. If the unmount failed, keep the folder and say so.
   */
  remove(dir: string): void {
    const slot = join(dir, 'workspace');
    for (let i = 0; i < 4 && this.isMountPoint(slot); i++) spawnSync('umount', ['-l', slot]);
    if (this.isMountPoint(slot)) {
      this.log.error({ dir }, 'workspace still mounted in a slot folder; folder kept');
      return;
    }
    rmSync(dir, { recursive: true, force: true });
  }

  /** Remove every slot folder not in `keep` (leftovers without a live container of ours). */
  removeAllBut(keep: Set<string>): void {
    for (const slot of readdirSync(this.root)) {
      if (keep.has(slot) || !SLOT_RE.test(slot)) continue;
      this.remove(join(this.root, slot));
    }
  }

  private isMountPoint(p: string): boolean {
    return mountsOf(p).length > 0;
  }
}
