/**
 * Session manager: one hardened, warm container per chat session.
 *
 * - First prompt of a session: claim a pre-started pool container (or cold-start one), ask the
 *   SessionPreparer for routes/tokens/placeholders, write profile.json (0644) atomically into the
 *   session folder, open the egress socket, and hand the supervisor its tokens in `start`.
 * - Later prompts reuse it (warm). One turn at a time per session (ERR_SESSION_BUSY 409).
 * - Idle sandboxes are reaped after AIRLOCK_SESSION_IDLE_S; sandboxes older than
 *   AIRLOCK_SESSION_STALE_S are stale (`restartStale`). Live sessions are capped per host
 *   (ERR_SESSION_CAPACITY 503).
 * - On start the manager adopts running containers carrying its airlock.owner label and removes
 *   the rest (orphans, dead containers, folders without a container).
 * - A container that died (killed from outside) is replaced on the next prompt, which first gets a
 *   text_delta notice; a turn in flight when it dies ends with ERR_SANDBOX_LOST. Every turn resolves.
 *
 * Docker labels: airlock.owner (per data dir), airlock.session, airlock.user, airlock.slot, and
 * airlock.pool=1 on pool containers (labels cannot change after create, so a claimed pool
 * container's session is recorded in its folder's claim.json, readable by root only).
 */
import { agentSettings } from '../overlay.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { AppError, isAppError, type Config, type Logger, type Metrics } from '../../core/index.js';
import {
  CHILD_GID,
  CHILD_UID,
  SANDBOX_PROXY_PORT,
  SANDBOX_RUN_DIR,
  SANDBOX_WORKSPACE,
  type AgentEvent,
  type EgressGateway,
  type EgressHandle,
  type PreparedSession,
  type SessionPreparer,
  type SessionProfile,
  type StartSpec,
  type StopReason,
  type TurnRequest,
  type TurnResult,
  type TurnRunner,
} from '../../core/sandbox-protocol.js';
import { SandboxClient } from './sandbox-client.js';
import { StartGate } from './start-gate.js';

export const LABEL_OWNER = 'airlock.owner';
export const LABEL_SESSION = 'airlock.session';
export const LABEL_USER = 'airlock.user';
export const LABEL_SLOT = 'airlock.slot';
export const LABEL_POOL = 'airlock.pool';

const STOP_TIMEOUT_S = 2;

export type SandboxState = 'starting' | 'pool' | 'ready' | 'busy' | 'dead' | 'stopping';

/** What `sessions ls` / `inspect` show. Never tokens. */
export interface SandboxInfo {
  slot: string;
  containerId: string;
  containerName: string;
  sessionId: string | null;
  userId: number | null;
  state: SandboxState;
  createdAt: number;
  claimedAt: number | null;
  lastUsedAt: number;
  turns: number;
  stale: boolean;
  adopted: boolean;
  fromPool: boolean;
}

interface Sandbox {
  slot: string;
  dir: string;
  runDir: string;
  containerId: string;
  containerName: string;
  sessionId?: string;
  userId?: number;
  state: SandboxState;
  createdAt: number;
  claimedAt?: number;
  lastUsedAt: number;
  turns: number;
  adopted: boolean;
  fromPool: boolean;
  client?: SandboxClient;
  egress?: EgressHandle;
  /** Workspace bind-mounted into a pool slot at claim (host path), to unmount on removal. */
  boundWorkspace?: string;
}

/**
 * `<slot>/claim.json` (root only, 0600, outside /run/airlock): what a restarted daemon needs to
 * adopt a session. Names only, never a secret value.
 */
interface Claim {
  session_id: string;
  user_id: number;
  claimed_at: number;
  egress_allow: string[];
  /** Env names of the real tokens the supervisor holds (e.g. MAIL_ACCESS_TOKEN), for rotation. */
  token_envs?: string[];
}

const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Sessions whose sandbox died and was removed before their next prompt, remembered for the notice. */
const LOST_REMEMBERED_MAX = 1000;

/** A session's sandbox became live: started on a first prompt, or adopted after a daemon restart. */
export interface SessionLiveInfo {
  sessionId: string;
  userId: number;
  /** Env names of the real tokens its supervisor holds (names only). */
  tokenEnvs: string[];
  adopted: boolean;
}

/**
 * Lifecycle hooks the composition root wires (daemon/serve.ts: token rotation track/untrack).
 * Called synchronously; a hook that throws is logged and ignored.
 */
export interface SessionHooks {
  onSessionLive?(s: SessionLiveInfo): void;
  /**
   * A session's sandbox ended: idle or dead reap, operator kill or restart, the user deactivated
   * or disconnected, lost (killed from outside), a failed start, or removal at shutdown.
   */
  onSessionEnded?(sessionId: string, why: string): void;
  /**
   * Asked on a restart before a session container is adopted: false (the user was deactivated
   * or removed while no daemon ran) removes the container instead. Absent: every one is adopted.
   */
  mayAdopt?(s: { sessionId: string; userId: number }): boolean;
}

export interface SessionManagerOptions {
  config: Readonly<Config>;
  docker: Docker;
  log: Logger;
  preparer?: SessionPreparer;
  egress?: EgressGateway;
  /** airlock.owner label value; defaults to an id stored in <data dir>/runtime-owner. */
  owner?: string;
  /** Image tag; defaults to config AIRLOCK_IMAGE. */
  image?: string;
  /** TEST ONLY: run the agent child under this uid (the negative token-isolation check). */
  childUid?: number;
  /** Reaper period; defaults to a quarter of the idle time, between 0.5 s and 30 s. */
  reapIntervalMs?: number;
  /** Clock for session age (staleness); tests inject one instead of sleeping. */
  now?: () => number;
  /** Prometheus metrics (sessions live/started/reaped, start seconds, pool ready). */
  metrics?: Metrics;
  /** Session lifecycle hooks (token rotation). */
  hooks?: SessionHooks;
}

/**
 * `airlock-session-<session id>-<slot>` (DESIGN.md's `airlock-session-<id>`, plus the slot: a
 * restarted session's new container may be created before the old one is gone). Characters
 * Docker does not take in a name become `_`.
 */
export function sessionContainerName(sessionId: string, slot: string): string {
  return `airlock-session-${sessionId.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 100)}-${slot}`;
}

/**
 * The hardening every sandbox container gets (DESIGN.md): no network, every capability dropped
 * but SETUID/SETGID (the supervisor's drop to the child's uid), no-new-privileges, read-only root
 * with tmpfs /tmp and /home/agent, the configured pids/memory/cpu limits, an init, private IPC and
 * bounded logs. Exported for the runtime bench's hardened `docker run` baseline.
 */
export function sandboxHostConfig(s: Readonly<Config['sandbox']>, mounts: Docker.MountSettings[]): Docker.HostConfig {
  return {
    NetworkMode: 'none',
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    CapAdd: ['SETUID', 'SETGID'],
    SecurityOpt: ['no-new-privileges'],
    PidsLimit: s.pids,
    Memory: s.memoryMb * 1024 * 1024,
    MemorySwap: s.memoryMb * 1024 * 1024,
    NanoCpus: Math.round(s.cpus * 1e9),
    Tmpfs: {
      '/tmp': 'rw,noexec,nosuid,nodev,size=64m',
      '/home/agent': `rw,noexec,nosuid,nodev,size=16m,uid=${CHILD_UID},gid=${CHILD_GID},mode=0700`,
    },
    Init: true,
    IpcMode: 'private',
    LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '2' } },
    Mounts: mounts,
  };
}

/** The default preparer: no routes and no tokens, only the agent settings from config. */
export function defaultPreparer(config: Readonly<Config>): SessionPreparer {
  return {
    async prepare(): Promise<PreparedSession> {
      return {
        routes: [],
        tokens: {},
        placeholders: {},
        agentEnv: agentSettings(config),
        egressAllow: [],
      };
    },
  };
}

function ownerIdFor(dataDir: string): string {
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

function writeFileAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, data, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

export class SessionManager implements TurnRunner {
  readonly owner: string;
  private readonly config: Readonly<Config>;
  private readonly docker: Docker;
  private readonly log: Logger;
  private readonly preparer: SessionPreparer;
  private readonly egress?: EgressGateway;
  private readonly now: () => number;
  private readonly image: string;
  private readonly childUid?: number;
  private readonly root: string;
  private readonly workspacesRoot: string;
  /** Session sandboxes by session id. */
  private sessions = new Map<string, Sandbox>();
  private pool: Sandbox[] = [];
  private poolStarting = 0;
  /** Sessions whose sandbox is being acquired or which run a turn (synchronous busy guard). */
  private busy = new Set<string>();
  /** Sessions whose dead sandbox was reaped before their next prompt (that prompt gets the notice). */
  private lost = new Map<string, number>();
  private acquiring = 0;
  /** Sandbox starts in progress are limited (AIRLOCK_MAX_STARTING); the rest queue. */
  private readonly startGate: StartGate;
  private reaper?: NodeJS.Timeout;
  private closed = false;
  private poolEnabled: boolean;
  private fillPromise?: Promise<void>;
  private madeRootMount = false;

  constructor(private readonly o: SessionManagerOptions) {
    this.config = o.config;
    this.docker = o.docker;
    this.log = o.log.child({ area: 'runtime' });
    this.preparer = o.preparer ?? defaultPreparer(o.config);
    this.egress = o.egress;
    this.now = o.now ?? Date.now;
    this.image = o.image ?? o.config.docker.image;
    this.childUid = o.childUid;
    this.owner = o.owner ?? ownerIdFor(o.config.dataDir);
    this.root = join(o.config.dataDir, 'sandboxes');
    this.workspacesRoot = join(o.config.dataDir, 'workspaces');
    this.poolEnabled = o.config.sandbox.poolSize > 0;
    this.startGate = new StartGate(o.config.sandbox.maxStarting, (g) => o.metrics?.sessionStartsWaiting.set(g.waiting));
  }

  // ------------------------------------------------------------------ lifecycle

  /** Adopt or remove existing containers, then fill the pool and start the reaper. */
  async start(): Promise<void> {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    mkdirSync(this.workspacesRoot, { recursive: true, mode: 0o711 });
    if (this.poolEnabled) this.poolEnabled = this.preparePropagation();
    await this.adopt();
    this.gauges();
    const idleMs = this.config.sandbox.idleS * 1000;
    const every = this.o.reapIntervalMs ?? Math.min(30_000, Math.max(500, Math.floor(idleMs / 4)));
    this.reaper = setInterval(() => void this.reap(), every);
    this.reaper.unref();
    void this.fillPool();
  }

  /**
   * Stop the manager. By default session containers keep running (a restarted daemon adopts them:
   * no live session is lost); `removeContainers` removes them and the pool (tests, uninstall).
   */
  async close(opts: { removeContainers?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reaper) clearInterval(this.reaper);
    await this.fillPromise?.catch(() => undefined);
    const sessions = [...this.sessions.values()];
    // Pool containers hold no session: remove them (a restarted daemon refills the pool).
    await Promise.all(this.pool.map((s) => this.remove(s, 'shutdown')));
    if (opts.removeContainers) {
      await Promise.all(sessions.map((s) => this.remove(s, 'shutdown')));
    } else {
      for (const s of sessions) {
        s.client?.close();
        await s.egress?.close().catch(() => undefined);
      }
    }
    const keptSessions = opts.removeContainers ? 0 : sessions.length;
    this.sessions.clear();
    this.pool = [];
    // Our own shared bind of the sandboxes folder goes when nothing of ours runs on it any more
    // (unmounting it under live pool-claimed sessions would propagate into their /workspace).
    if (keptSessions === 0 && this.madeRootMount) spawnSync('umount', ['-l', this.root]);
  }

  // ------------------------------------------------------------------ turns

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    if (this.closed) throw new AppError('ERR_SESSION_UNAVAILABLE', 'the daemon is shutting down', { status: 503, retryable: true });
    if (this.busy.has(req.sessionId)) throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session', { status: 409 });
    let sb = this.sessions.get(req.sessionId);
    if (sb && sb.userId !== req.userId) throw new AppError('ERR_SESSION_NOT_FOUND', 'no such session', { status: 404 });
    const needsNew = !sb || sb.state === 'dead' || !sb.client || sb.client.closed;
    // Its dead sandbox was already reaped: the user is still told it was lost.
    const wasLost = !sb && this.lost.get(req.sessionId) === req.userId;
    if (needsNew && !sb && this.liveSessionCount() + this.acquiring >= this.config.sandbox.maxSessions) {
      throw new AppError('ERR_SESSION_CAPACITY', 'this host runs as many sessions as it may; try again later', { status: 503, retryable: true });
    }
    this.busy.add(req.sessionId);
    try {
      if (needsNew) {
        if (sb || wasLost) {
          // The container went away behind our back (killed from outside, crashed, OOM).
          req.onEvent({ type: 'text_delta', text: '[sandbox] The previous sandbox of this session stopped unexpectedly; a new one was started. Earlier context in the sandbox is gone.\n' });
          this.lost.delete(req.sessionId);
        }
        if (sb) {
          this.log.warn({ sessionId: req.sessionId, containerId: sb.containerId }, 'sandbox lost; replacing');
          await this.remove(sb, 'lost');
        }
        this.acquiring++;
        try {
          sb = await this.acquire(req.sessionId, req.userId);
        } catch (err) {
          // A refusal meant for the user (4xx AppError, e.g. ERR_POLICY_MODEL_DENIED) keeps its
          // code and message; anything else is an internal failure, said without details.
          if (isAppError(err) && err.status >= 400 && err.status < 500) {
            this.log.warn({ sessionId: req.sessionId, userId: req.userId, code: err.code }, 'session start refused');
            return { stop_reason: 'error', error: { code: err.code, message: err.message } };
          }
          this.log.error({ sessionId: req.sessionId, err: { code: (err as AppError).code, message: (err as Error).message } }, 'sandbox start failed');
          return { stop_reason: 'error', error: { code: 'ERR_SANDBOX_START', message: 'the sandbox could not be started' } };
        } finally {
          this.acquiring--;
        }
      }
      return await this.turnIn(sb!, req);
    } finally {
      this.busy.delete(req.sessionId);
    }
  }

  private turnIn(sb: Sandbox, req: TurnRequest): Promise<TurnResult> {
    const client = sb.client!;
    sb.state = 'busy';
    sb.lastUsedAt = Date.now();
    return new Promise<TurnResult>((resolve) => {
      let finished = false;
      const finish = (stop: StopReason, error?: { code: string; message: string }) => {
        if (finished) return;
        finished = true;
        unwatch();
        clearTimeout(deadline);
        req.signal.removeEventListener('abort', onAbort);
        sb.turns++;
        sb.lastUsedAt = Date.now();
        if (sb.state === 'busy') sb.state = client.closed ? 'dead' : 'ready';
        resolve({ stop_reason: stop, ...(error ? { error } : {}), containerId: sb.containerId });
      };
      const unwatch = client.watchTurn(req.turnId, {
        onEvent: (e: AgentEvent) => {
          try {
            req.onEvent(e);
          } catch (err) {
            this.log.warn({ err: (err as Error).message }, 'onEvent threw');
          }
        },
        onEnd: (stop, error) => finish(stop, error),
      });
      const onAbort = () => {
        client.request({ type: 'cancel', turn_id: req.turnId }).catch(() => undefined);
      };
      // Backstop so a wedged agent cannot hold a turn forever: cancel after every model call could
      // have timed out; the supervisor kills a child that ignores the cancel and ends the turn.
      const m = this.config.model;
      const deadline = setTimeout(onAbort, (m.timeoutS * (m.maxSteps + 1) + 60) * 1000);
      deadline.unref();
      if (req.signal.aborted) onAbort();
      else req.signal.addEventListener('abort', onAbort, { once: true });
      client.request({ type: 'prompt', turn_id: req.turnId, prompt: req.prompt }).catch((err: AppError) => {
        finish('error', { code: err.code ?? 'ERR_SANDBOX_INTERNAL', message: err.code === 'ERR_SESSION_BUSY' ? 'a turn is already running in this session' : 'the sandbox refused the prompt' });
      });
    });
  }

  // ------------------------------------------------------------------ acquire

  private liveSessionCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.state !== 'dead') n++;
    return n;
  }

  /** Live-session and pool gauges, after every change. */
  private gauges(): void {
    this.o.metrics?.sessionsLive.set(this.liveSessionCount());
    this.o.metrics?.poolReady.set(this.pool.length);
  }

  private async acquire(sessionId: string, userId: number): Promise<Sandbox> {
    try {
      return await this.acquireInner(sessionId, userId);
    } catch (err) {
      // The preparer may already have registered the session (token rotation): undo that.
      this.ended(sessionId, 'start failed');
      throw err;
    }
  }

  private async acquireInner(sessionId: string, userId: number): Promise<Sandbox> {
    const t0 = process.hrtime.bigint();
    // The overlay first: a refusal (an agent policy forbidding the model) costs no container.
    const prepared = await this.preparer.prepare({ userId, sessionId, proxyPort: SANDBOX_PROXY_PORT });
    const ws = this.ensureWorkspace(userId);
    const release = await this.startGate.enter();
    try {
      return await this.startSandbox(sessionId, userId, ws, prepared, t0);
    } finally {
      release();
    }
  }

  /** Claim a pool container or cold-start one, and start the session in it (inside the start gate). */
  private async startSandbox(sessionId: string, userId: number, ws: string, prepared: PreparedSession, t0: bigint): Promise<Sandbox> {
    if (this.closed) throw new AppError('ERR_SESSION_UNAVAILABLE', 'the daemon is shutting down', { status: 503, retryable: true });
    let sb: Sandbox | undefined;
    while (this.poolEnabled && this.pool.length) {
      const cand = this.pool.shift()!;
      if (cand.client && !cand.client.closed) {
        sb = cand;
        break;
      }
      void this.remove(cand, 'pool member lost');
    }
    if (sb) {
      sb.fromPool = true;
      try {
        this.bindWorkspace(sb, ws);
      } catch (err) {
        await this.remove(sb, 'workspace bind failed');
        throw err;
      }
      // Labels cannot change after create, but names can: a claimed pool container is named
      // after its session like a cold-started one, so `docker ps` shows whose it is.
      await this.nameAfterSession(sb, sessionId);
      void this.fillPool();
    } else {
      sb = await this.createSandbox({ sessionId, userId, workspace: ws });
    }
    try {
      await this.startSession(sb, sessionId, userId, prepared);
    } catch (err) {
      await this.remove(sb, 'start failed');
      throw err;
    }
    const kind = sb.fromPool ? 'pool' : 'cold';
    this.o.metrics?.sessionsStarted.inc({ kind });
    this.o.metrics?.sessionStartSeconds.observe({ kind }, Number(process.hrtime.bigint() - t0) / 1e9);
    this.gauges();
    return sb;
  }

  private async nameAfterSession(sb: Sandbox, sessionId: string): Promise<void> {
    const name = sessionContainerName(sessionId, sb.slot);
    try {
      await this.docker.getContainer(sb.containerId).rename({ name });
      sb.containerName = name;
    } catch (err) {
      // Cosmetic: the session still runs; `sessions ls` and claim.json know the mapping.
      this.log.warn({ containerId: sb.containerId.slice(0, 12), err: (err as Error).message }, 'could not rename the claimed pool container');
    }
  }

  private async startSession(sb: Sandbox, sessionId: string, userId: number, prepared: PreparedSession): Promise<void> {
    const profile: SessionProfile = { version: 1, session_id: sessionId, proxy: { host: '127.0.0.1', port: SANDBOX_PROXY_PORT }, routes: prepared.routes };
    // World-readable by design (DESIGN.md): routes and token *references* only, never values.
    writeFileAtomic(join(sb.runDir, 'profile.json'), JSON.stringify(profile, null, 2) + '\n', 0o644);
    const claim: Claim = {
      session_id: sessionId,
      user_id: userId,
      claimed_at: this.now(),
      egress_allow: prepared.egressAllow,
      // Names only: the values go to the supervisor over the control socket and nowhere else.
      token_envs: Object.keys(prepared.tokens).filter((k) => ENV_NAME.test(k)),
    };
    writeFileAtomic(join(sb.dir, 'claim.json'), JSON.stringify(claim) + '\n', 0o600);
    if (this.egress) sb.egress = await this.egress.open(sessionId, join(sb.runDir, 'egress.sock'), prepared.egressAllow);
    const spec: StartSpec = {
      session_id: sessionId,
      user_id: userId,
      tokens: prepared.tokens,
      placeholders: prepared.placeholders,
      ...(prepared.agentUserToken ? { agent_user_token: prepared.agentUserToken } : {}),
      agent_env: prepared.agentEnv,
    };
    await sb.client!.request({ type: 'start', spec });
    sb.sessionId = sessionId;
    sb.userId = userId;
    sb.claimedAt = claim.claimed_at;
    sb.lastUsedAt = Date.now();
    sb.state = 'ready';
    this.sessions.set(sessionId, sb);
    this.lost.delete(sessionId);
    this.log.info({ sessionId, userId, containerId: sb.containerId.slice(0, 12), fromPool: sb.fromPool }, 'session sandbox started');
    this.hook('onSessionLive', () => this.o.hooks?.onSessionLive?.({ sessionId, userId, tokenEnvs: claim.token_envs!, adopted: false }));
  }

  private ensureWorkspace(userId: number): string {
    const ws = join(this.workspacesRoot, String(userId));
    if (!existsSync(ws)) {
      mkdirSync(join(ws, '.agent-attachments'), { recursive: true, mode: 0o700 });
      // The agent child (uid 1001) owns the user's workspace; other host users cannot enter it.
      chownSync(ws, CHILD_UID, CHILD_GID);
      chownSync(join(ws, '.agent-attachments'), CHILD_UID, CHILD_GID);
      chmodSync(ws, 0o711); // root in the sandbox has no DAC override: it needs x to chdir there before dropping to 1001
    }
    return ws;
  }

  // ------------------------------------------------------------------ workspace binding for pool containers

  /**
   * Pool containers are created before their user is known, so their /workspace is an empty slot
   * folder mounted with rslave propagation; at claim the daemon bind-mounts the user's workspace
   * onto the slot on the host and the mount propagates into the running container. This needs
   * the sandboxes folder to be a shared mount (set up here) and a root daemon; without them the
   * pool is disabled and every session cold-starts.
   */
  private preparePropagation(): boolean {
    if (process.getuid?.() !== 0) {
      this.log.warn('pool disabled: the daemon is not root, so it cannot bind workspaces into pool containers');
      return false;
    }
    if (!this.isMountPoint(this.root)) {
      const r = spawnSync('mount', ['--bind', this.root, this.root]);
      if (r.status !== 0) {
        this.log.warn({ err: r.stderr?.toString().trim() }, 'pool disabled: cannot bind-mount the sandboxes folder');
        return false;
      }
      this.madeRootMount = true;
    }
    const r = spawnSync('mount', ['--make-shared', this.root]);
    if (r.status !== 0) {
      this.log.warn({ err: r.stderr?.toString().trim() }, 'pool disabled: cannot make the sandboxes folder shared');
      return false;
    }
    return true;
  }

  private isMountPoint(p: string): boolean {
    try {
      return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === p);
    } catch {
      return false;
    }
  }

  private bindWorkspace(sb: Sandbox, ws: string): void {
    const slot = join(sb.dir, 'workspace');
    const r = spawnSync('mount', ['--bind', ws, slot]);
    if (r.status !== 0) throw new AppError('ERR_SANDBOX_START', `cannot bind the workspace: ${r.stderr?.toString().trim()}`);
    sb.boundWorkspace = slot;
  }

  private unbindWorkspace(dir: string): void {
    const slot = join(dir, 'workspace');
    for (let i = 0; i < 4 && this.isMountPoint(slot); i++) spawnSync('umount', ['-l', slot]);
  }

  /**
   * Remove a slot folder. Never recurse through a user's workspace still bound into it: that
   * would delete the user's files. If the unmount failed, keep the folder and say so.
   */
  private removeSlotDir(dir: string): void {
    this.unbindWorkspace(dir);
    if (this.isMountPoint(join(dir, 'workspace'))) {
      this.log.error({ dir }, 'workspace still mounted in a slot folder; folder kept');
      return;
    }
    rmSync(dir, { recursive: true, force: true });
  }

  // ------------------------------------------------------------------ containers

  private newSlot(): { slot: string; dir: string; runDir: string } {
    const slot = randomBytes(8).toString('hex');
    const dir = join(this.root, slot);
    const runDir = join(dir, 'run');
    mkdirSync(runDir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o711);
    chmodSync(runDir, 0o755);
    return { slot, dir, runDir };
  }

  private async createSandbox(target?: { sessionId: string; userId: number; workspace: string }): Promise<Sandbox> {
    const { slot, dir, runDir } = this.newSlot();
    const name = target ? sessionContainerName(target.sessionId, slot) : `airlock-pool-${slot}`;
    const labels: Record<string, string> = {
      [LABEL_OWNER]: this.owner,
      [LABEL_SLOT]: slot,
      [LABEL_SESSION]: target?.sessionId ?? '',
      [LABEL_USER]: target ? String(target.userId) : '',
    };
    let workspaceMount: Docker.MountSettings;
    if (target) {
      workspaceMount = { Type: 'bind', Source: target.workspace, Target: SANDBOX_WORKSPACE, ReadOnly: false };
    } else {
      labels[LABEL_POOL] = '1';
      mkdirSync(join(dir, 'workspace'), { mode: 0o711 });
      workspaceMount = { Type: 'bind', Source: join(dir, 'workspace'), Target: SANDBOX_WORKSPACE, ReadOnly: false, BindOptions: { Propagation: 'rslave' } };
    }
    const t0 = Date.now();
    let container: Docker.Container | undefined;
    try {
      container = await this.docker.createContainer({
        name,
        Image: this.image,
        Labels: labels,
        User: '0:0',
        WorkingDir: SANDBOX_WORKSPACE,
        // Nothing secret here: Config.Env is visible to `docker inspect` and to docker-init.
        Env: this.childUid !== undefined ? [`AIRLOCK_SANDBOX_CHILD_UID=${this.childUid}`] : [],
        NetworkDisabled: true,
        HostConfig: sandboxHostConfig(this.config.sandbox, [workspaceMount, { Type: 'bind', Source: runDir, Target: SANDBOX_RUN_DIR, ReadOnly: false }]),
      });
      await container.start();
      const client = await SandboxClient.connect(join(runDir, 'control.sock'));
      const sb: Sandbox = {
        slot,
        dir,
        runDir,
        containerId: container.id,
        containerName: name,
        state: target ? 'starting' : 'pool',
        createdAt: Date.now(),
        lastUsedAt: Date.now(),
        turns: 0,
        adopted: false,
        fromPool: false,
        client,
      };
      this.watchClient(sb);
      this.log.debug({ containerId: container.id.slice(0, 12), ms: Date.now() - t0, pool: !target }, 'container started');
      return sb;
    } catch (err) {
      // A failed start is cleaned up: the engine does not remove such a container by itself.
      if (container) await container.remove({ force: true }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      throw new AppError('ERR_SANDBOX_START', 'the sandbox container could not be started', { status: 503, cause: err });
    }
  }

  private watchClient(sb: Sandbox): void {
    const client = sb.client!;
    // The in-container proxy's decisions: counted in /metrics, refusals logged with the session.
    client.onProxyDecision((d) => {
      const route = typeof d.route === 'string' && /^[a-z0-9_-]{1,32}$/.test(d.route) ? d.route : 'none';
      const outcome = d.outcome === 'forwarded' || d.outcome === 'refused' || d.outcome === 'upstream_error' ? d.outcome : 'refused';
      this.o.metrics?.proxyDecisions.inc({ route, outcome });
      if (outcome !== 'forwarded') {
        const code = typeof d.code === 'string' && /^ERR_[A-Z_]{1,40}$/.test(d.code) ? d.code : undefined;
        this.log.warn({ sessionId: sb.sessionId, containerId: sb.containerId.slice(0, 12), route, outcome, status: Number(d.status) || 0, code }, 'sandbox proxy refused a request');
      }
    });
    client.onClosed(() => {
      if (sb.client !== client || sb.state === 'stopping') return;
      sb.state = 'dead';
      this.log.warn({ containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId }, 'sandbox control connection lost');
      if (!sb.sessionId) {
        this.pool = this.pool.filter((p) => p !== sb);
        void this.remove(sb, 'pool member lost').then(() => this.fillPool());
      }
    });
  }

  private async remove(sb: Sandbox, why: string): Promise<void> {
    if (sb.state === 'stopping') return;
    sb.state = 'stopping';
    if (sb.sessionId && this.sessions.get(sb.sessionId) === sb) {
      this.sessions.delete(sb.sessionId);
      if (why === 'dead' && sb.userId !== undefined) this.rememberLost(sb.sessionId, sb.userId);
      this.ended(sb.sessionId, why);
    }
    this.pool = this.pool.filter((p) => p !== sb);
    try {
      // Ask the supervisor to stop the child cleanly; the container is removed either way.
      if (sb.client && !sb.client.closed) await sb.client.request({ type: 'shutdown' }, 1000).catch(() => undefined);
      sb.client?.close();
      await sb.egress?.close().catch(() => undefined);
      await this.docker
        .getContainer(sb.containerId)
        .remove({ force: true })
        .catch((err) => {
          if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
        });
    } catch (err) {
      this.log.warn({ containerId: sb.containerId.slice(0, 12), err: (err as Error).message }, 'container remove failed');
    } finally {
      this.removeSlotDir(sb.dir);
    }
    this.log.info({ containerId: sb.containerId.slice(0, 12), sessionId: sb.sessionId, why }, 'sandbox removed');
    if (sb.sessionId) this.o.metrics?.sessionsReaped.inc({ reason: why.replace(/[^a-z]+/gi, '_') });
    this.gauges();
  }

  /** Call a hook; a hook failure must not break the runtime. */
  private hook(name: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.warn({ hook: name, err: (err as Error).message }, 'session hook threw');
    }
  }

  private ended(sessionId: string, why: string): void {
    this.hook('onSessionEnded', () => this.o.hooks?.onSessionEnded?.(sessionId, why));
  }

  private rememberLost(sessionId: string, userId: number): void {
    this.lost.delete(sessionId);
    this.lost.set(sessionId, userId);
    // Bounded: the oldest entries go first (a user who never comes back costs nothing for long).
    for (const k of this.lost.keys()) {
      if (this.lost.size <= LOST_REMEMBERED_MAX) break;
      this.lost.delete(k);
    }
  }

  // ------------------------------------------------------------------ pool

  /** Top the pool up to AIRLOCK_POOL_SIZE hello containers (one fill at a time). */
  fillPool(): Promise<void> {
    if (!this.poolEnabled || this.closed) return Promise.resolve();
    this.fillPromise ??= (async () => {
      try {
        while (!this.closed && this.pool.length + this.poolStarting < this.config.sandbox.poolSize) {
          this.poolStarting++;
          const release = await this.startGate.enter();
          try {
            const sb = await this.createSandbox();
            await sb.client!.request({ type: 'ping' });
            if (this.closed) {
              await this.remove(sb, 'shutdown');
              break;
            }
            this.pool.push(sb);
            this.gauges();
          } catch (err) {
            this.log.error({ err: (err as Error).message }, 'pool container start failed');
            break;
          } finally {
            release();
            this.poolStarting--;
          }
        }
      } finally {
        this.fillPromise = undefined;
      }
    })();
    return this.fillPromise;
  }

  /** Resolves when the pool is full (tests, bench). */
  async poolReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.poolEnabled && this.pool.length < this.config.sandbox.poolSize) {
      if (Date.now() > deadline) throw new AppError('ERR_SANDBOX_POOL', 'the pool did not fill in time');
      await (this.fillPromise ?? this.fillPool());
      if (this.pool.length < this.config.sandbox.poolSize) await new Promise((r) => setTimeout(r, 50));
    }
  }

  get poolActive(): boolean {
    return this.poolEnabled;
  }

  // ------------------------------------------------------------------ adoption

  /** Adopt running containers with our owner label; remove dead ones, orphans and stray folders. */
  private async adopt(): Promise<void> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${this.owner}`] } });
    const keep = new Set<string>();
    await Promise.all(
      list.map(async (c) => {
        const slot = c.Labels[LABEL_SLOT];
        const dir = slot && /^[a-f0-9]{16}$/.test(slot) ? join(this.root, slot) : undefined;
        const drop = async (why: string) => {
          await this.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
          if (dir) this.removeSlotDir(dir);
          this.log.info({ containerId: c.Id.slice(0, 12), why }, 'removed container at start');
        };
        if (!dir || c.State !== 'running' || !existsSync(join(dir, 'run'))) return drop('not running or no folder');
        let client: SandboxClient;
        try {
          client = await SandboxClient.connect(join(dir, 'run', 'control.sock'), 2000);
        } catch {
          return drop('control socket unreachable');
        }
        let status: Record<string, unknown>;
        try {
          status = await client.request({ type: 'ping' }, 3000);
        } catch {
          client.close();
          return drop('no answer to ping');
        }
        let claim: Claim | undefined;
        try {
          claim = JSON.parse(readFileSync(join(dir, 'claim.json'), 'utf8')) as Claim;
        } catch {
          claim = undefined;
        }
        const created = c.Created * 1000;
        const sb: Sandbox = {
          slot: slot!,
          dir,
          runDir: join(dir, 'run'),
          containerId: c.Id,
          containerName: (c.Names[0] ?? '').replace(/^\//, ''),
          state: 'ready',
          createdAt: created,
          lastUsedAt: Date.now(),
          turns: 0,
          adopted: true,
          fromPool: c.Labels[LABEL_POOL] === '1',
          client,
        };
        if (status.state === 'hello' && !claim && c.Labels[LABEL_POOL] === '1' && this.poolEnabled) {
          sb.state = 'pool';
          this.pool.push(sb);
        } else if (status.state === 'started' && claim && status.session_id === claim.session_id && !this.sessions.has(claim.session_id)) {
          if (this.o.hooks?.mayAdopt && !this.o.hooks.mayAdopt({ sessionId: claim.session_id, userId: claim.user_id })) {
            client.close();
            this.o.metrics?.sessionsReaped.inc({ reason: 'user_deactivated' });
            return drop('its user is no longer active');
          }
          sb.sessionId = claim.session_id;
          sb.userId = claim.user_id;
          sb.claimedAt = claim.claimed_at;
          if (sb.fromPool) sb.boundWorkspace = join(dir, 'workspace');
          if (this.egress) sb.egress = await this.egress.open(claim.session_id, join(dir, 'run', 'egress.sock'), claim.egress_allow ?? []);
          this.sessions.set(claim.session_id, sb);
          const live: SessionLiveInfo = { sessionId: claim.session_id, userId: claim.user_id, tokenEnvs: (claim.token_envs ?? []).filter((k) => typeof k === 'string' && ENV_NAME.test(k)), adopted: true };
          // Token rotation is in memory only: the restarted daemon registers the session again.
          this.hook('onSessionLive', () => this.o.hooks?.onSessionLive?.(live));
        } else {
          client.close();
          return drop('unclaimed or inconsistent');
        }
        keep.add(slot!);
        this.watchClient(sb);
        this.log.info({ containerId: c.Id.slice(0, 12), sessionId: sb.sessionId ?? null }, 'adopted container');
      }),
    );
    // Folders without a live container of ours are leftovers.
    for (const slot of readdirSync(this.root)) {
      if (keep.has(slot) || !/^[a-f0-9]{16}$/.test(slot)) continue;
      this.removeSlotDir(join(this.root, slot));
    }
  }

  // ------------------------------------------------------------------ reaping, staleness

  private isStale(sb: Sandbox): boolean {
    return !!sb.sessionId && this.now() - (sb.claimedAt ?? sb.createdAt) > this.config.sandbox.staleS * 1000;
  }

  /**
   * Remove sandboxes idle longer than AIRLOCK_SESSION_IDLE_S and dead ones (container killed from
   * outside, crashed, OOM: its exited container and slot folder would otherwise stay until the
   * session's next prompt). The next prompt of a session reaped dead still gets the notice.
   */
  async reap(): Promise<string[]> {
    const idleMs = this.config.sandbox.idleS * 1000;
    const reaped: string[] = [];
    for (const sb of [...this.sessions.values()]) {
      if (this.busy.has(sb.sessionId!)) continue;
      if (sb.state === 'dead') {
        reaped.push(sb.sessionId!);
        await this.remove(sb, 'dead');
      } else if (sb.state === 'ready' && Date.now() - sb.lastUsedAt > idleMs) {
        reaped.push(sb.sessionId!);
        await this.remove(sb, 'idle');
      }
    }
    return reaped;
  }

  /**
   * Whether this session has a live sandbox of this user (the agent API accepts an
   * AGENT_USER_TOKEN only then: a token of an ended session is refused).
   */
  isLive(sessionId: string, userId: number): boolean {
    const sb = this.sessions.get(sessionId);
    return !!sb && sb.userId === userId && (sb.state === 'ready' || sb.state === 'busy') && !!sb.client && !sb.client.closed;
  }

  // ------------------------------------------------------------------ operator API

  private info(sb: Sandbox): SandboxInfo {
    return {
      slot: sb.slot,
      containerId: sb.containerId,
      containerName: sb.containerName,
      sessionId: sb.sessionId ?? null,
      userId: sb.userId ?? null,
      state: sb.state,
      createdAt: sb.createdAt,
      claimedAt: sb.claimedAt ?? null,
      lastUsedAt: sb.lastUsedAt,
      turns: sb.turns,
      stale: this.isStale(sb),
      adopted: sb.adopted,
      fromPool: sb.fromPool,
    };
  }

  list(): SandboxInfo[] {
    return [...this.sessions.values(), ...this.pool].map((s) => this.info(s)).sort((a, b) => a.createdAt - b.createdAt);
  }

  private find(id: string): Sandbox {
    const bySession = this.sessions.get(id);
    if (bySession) return bySession;
    if (id.length >= 6) {
      const all = [...this.sessions.values(), ...this.pool];
      const hit = all.filter((s) => s.containerId.startsWith(id) || s.containerName === id);
      if (hit.length === 1) return hit[0];
    }
    throw new AppError('ERR_SESSION_NOT_FOUND', `no live session or container ${id}`, { status: 404 });
  }

  async inspect(id: string): Promise<SandboxInfo & { container: Record<string, unknown>; supervisor: Record<string, unknown> | null }> {
    const sb = this.find(id);
    let container: Record<string, unknown> = {};
    try {
      const c = await this.docker.getContainer(sb.containerId).inspect();
      container = {
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
        },
      };
    } catch (err) {
      if (statusOf(err) === 404) throw new AppError('ERR_SESSION_NOT_FOUND', 'the container is gone', { status: 404, cause: err });
      throw err;
    }
    const supervisor = sb.client && !sb.client.closed ? await sb.client.request({ type: 'ping' }, 3000).catch(() => null) : null;
    return { ...this.info(sb), container, supervisor };
  }

  /** Stop and remove one session's sandbox (next prompt starts a fresh one). */
  async kill(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    const info = this.info(sb);
    await this.remove(sb, 'killed by operator');
    if (!sb.sessionId) void this.fillPool();
    return info;
  }

  /** Replace a session's sandbox with a fresh one (fresh tokens from the preparer). */
  async restart(id: string): Promise<SandboxInfo> {
    const sb = this.find(id);
    if (!sb.sessionId || sb.userId === undefined) {
      await this.remove(sb, 'restart of a pool container');
      void this.fillPool();
      return this.info(sb);
    }
    const { sessionId, userId } = sb;
    if (this.busy.has(sessionId)) throw new AppError('ERR_SESSION_BUSY', 'a turn is running in this session', { status: 409 });
    this.busy.add(sessionId);
    try {
      await this.remove(sb, 'restart');
      const fresh = await this.acquire(sessionId, userId);
      return this.info(fresh);
    } finally {
      this.busy.delete(sessionId);
    }
  }

  /** Restart every stale, idle session. */
  async restartStale(): Promise<{ restarted: string[]; skipped: string[] }> {
    const restarted: string[] = [];
    const skipped: string[] = [];
    for (const sb of [...this.sessions.values()]) {
      if (!this.isStale(sb)) continue;
      if (this.busy.has(sb.sessionId!)) {
        skipped.push(sb.sessionId!);
        continue;
      }
      await this.restart(sb.sessionId!);
      restarted.push(sb.sessionId!);
    }
    return { restarted, skipped };
  }

  /** Hand a session's supervisor fresh real tokens (token rotation). */
  async rotateTokens(sessionId: string, tokens: Record<string, string>): Promise<void> {
    const sb = this.sessions.get(sessionId);
    if (!sb?.client || sb.client.closed) throw new AppError('ERR_SESSION_NOT_FOUND', 'no live sandbox for this session', { status: 404 });
    await sb.client.request({ type: 'rotate-token', tokens });
  }

  /** Remove every sandbox of a user (deactivated users). */
  async killForUser(userId: number, why = 'user deactivated'): Promise<number> {
    const mine = [...this.sessions.values()].filter((s) => s.userId === userId);
    await Promise.all(mine.map((s) => this.remove(s, why)));
    return mine.length;
  }

  async onUsersDeactivated(userIds: number[]): Promise<void> {
    for (const id of userIds) await this.killForUser(id);
  }

  /** The operator control API handler. */
  async handleControl(req: { cmd: string; id?: string; userId?: unknown }): Promise<unknown> {
    switch (req.cmd) {
      case 'kill-user': {
        const userId = req.userId;
        if (typeof userId !== 'number' || !Number.isSafeInteger(userId) || userId <= 0) {
          throw new AppError('ERR_CLI_USAGE', 'kill-user needs a positive integer userId', { status: 400 });
        }
        return { userId, killed: await this.killForUser(userId) };
      }
      case 'ls':
        return this.list();
      case 'inspect':
        return this.inspect(String(req.id ?? ''));
      case 'kill':
        return this.kill(String(req.id ?? ''));
      case 'restart':
        return this.restart(String(req.id ?? ''));
      case 'restart-stale':
        return this.restartStale();
      default:
        throw new AppError('ERR_CLI_USAGE', 'unknown command', { status: 400 });
    }
  }

  /** A fresh turn id (for callers that have none). */
  static turnId(): string {
    return randomUUID();
  }
}
