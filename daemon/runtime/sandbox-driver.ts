/**
 * The container engine behind the session runtime. The Docker driver (docker-driver.ts) is the
 * only runtime module that talks to an engine (image building aside); a second engine (a
 * Kubernetes driver on sandbox pods) is a new implementation of this interface, not an edit of
 * the session manager.
 *
 * A driver knows nothing of sessions, pools or users: it creates, starts, inspects, renames,
 * lists and removes hardened sandboxes with the labels it is given.
 */

import type { ShellTerminal } from '../../core/attach-frames.js';

/** Labels on every sandbox: which data dir's runtime owns it, its session, user and slot. */
export const LABEL_OWNER = 'airlock.owner';
export const LABEL_SESSION = 'airlock.session';
export const LABEL_USER = 'airlock.user';
export const LABEL_SLOT = 'airlock.slot';
/** `1` on a pool container (created before its session is known). */
export const LABEL_POOL = 'airlock.pool';

export interface SandboxSpec {
  name: string;
  image: string;
  labels: Record<string, string>;
  /** Container env: nothing secret (an engine shows it to anyone who may inspect the container). */
  env: string[];
  /** Host folder mounted at the sandbox's /workspace. */
  workspace: string;
  /**
   * Mount propagation of /workspace: `rslave` lets a bind mount made later on the host (a pool
   * container claimed by a user) appear inside the running sandbox.
   */
  workspacePropagation?: 'rslave';
  /** Host folder mounted at /run/airlock (control and egress sockets, profile.json). */
  runDir: string;
}

/** A sandbox of one owner, as listed at daemon start (adoption). */
export interface OwnedSandbox {
  id: string;
  name: string;
  labels: Record<string, string>;
  running: boolean;
  /** ms since the epoch. */
  createdAt: number;
}

/** What `sessions inspect` shows of the engine's view: settings, never an env value. */
export interface SandboxDetails {
  name: string;
  image: string;
  status: string;
  startedAt: string;
  labels: Record<string, string>;
  hostConfig: Record<string, unknown>;
}

export interface SandboxDriver {
  /** Create (not start) a hardened sandbox; returns its id. */
  create(spec: SandboxSpec): Promise<string>;
  start(id: string): Promise<void>;
  /** Throws ERR_SESSION_NOT_FOUND (404) when the sandbox is gone. */
  inspect(id: string): Promise<SandboxDetails>;
  /** Force-remove; a sandbox already gone (or being removed) is not an error. */
  remove(id: string): Promise<void>;
  rename(id: string, name: string): Promise<void>;
  /** Every sandbox (running or not) carrying this owner label. */
  listOwned(owner: string): Promise<OwnedSandbox[]>;
  /** The sandbox's last `tail` log lines (supervisor and agent stderr), by stream. */
  logs(id: string, tail: number, out: { stdout(chunk: Buffer): void; stderr(chunk: Buffer): void }): Promise<void>;
  /**
   * An interactive shell in the sandbox on the caller's terminal (`sessions attach`), as the
   * child's uid or, with `root`, as the capability-less root. Resolves with its exit status.
   */
  shell(id: string, o: { root: boolean; term: string }, tty: ShellTerminal): Promise<number>;
}

/** The caller's terminal for `shell` (core/attach-frames.ts: also one carried between nodes). */
export type { ShellTerminal } from '../../core/attach-frames.js';
