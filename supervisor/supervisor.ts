/**
 * The in-container supervisor (root, with only SETUID/SETGID). It:
 * - listens on /run/airlock/control.sock (root, 0600: the agent child cannot connect);
 * - at boot spawns the agent child idle, as uid/gid 1001 with no user's env (it starts its MCP
 *   servers), so a pool member is ready to answer before anyone claims it; an idle child that
 *   dies retires the whole sandbox (the daemon replaces a pool member, never hands it out);
 * - on `start`, reads profile.json, starts the in-sandbox proxy (first wall; it holds no token:
 *   the daemon's egress gateway injects them on the host) and hands the child the session's
 *   allow-listed env (`configure`);
 * - relays prompts to the child and its events back; restarts the child if it dies;
 * - handles cancel, ping, shutdown and an operator shell;
 * - when a turn ends, ends the processes of the child's uid the turn left behind (strays.ts).
 *
 * Every control line is checked against ControlRequestSchema and every child stdout line
 * against ChildOutboundSchema (core/ndjson.ts) before it is acted on; a bad line is refused
 * with an ERR_PROTOCOL_* code and logged without its payload. The child itself is driven
 * through core/agent-host.ts, the same host the daemon's local runner uses.
 *
 * Security: no real token ever enters the sandbox (docs/security.md, "root in the container"): root
 * here, a container escape or a checkpoint finds placeholders only. The child runs under another
 * uid, so it cannot read this process's memory or /proc/<pid>/environ (its placeholders).
 */
import { chmodSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { startCredentialProxy, type RunningProxy } from '../proxy/index.js';
import {
  CHILD_GID,
  CHILD_UID,
  SANDBOX_CONTROL_SOCKET,
  SANDBOX_EGRESS_SOCKET,
  SANDBOX_PROFILE,
  SANDBOX_PROXY_PORT,
  SANDBOX_WORKSPACE,
  ControlRequestSchema,
  type ControlMessage,
  type ControlRequest,
  type SessionProfile,
  type StartSpec,
  type StopReason,
  type PromptContext,
  type TurnEndExtras,
  type SupervisorStatus,
} from '../core/sandbox-protocol.js';
import { LineWriter, protocolLogFields, readMessages, rejectedRequestId } from '../core/ndjson.js';
import { AgentProcess } from '../core/agent-host.js';
import { sameLaunch, type AgentLaunch, type LaunchedAgent } from '../core/agent-launch.js';
import { agentCommand, idleChildLaunch, IDLE_CHILD_CWD } from './idle-child.js';
import { endStrays } from './strays.js';
import { coded, errorCode, readProfile, sessionEnv } from './session-env.js';
import { operatorShell, type Conn } from './operator-shell.js';

export interface SupervisorOptions {
  controlSocket?: string;
  profilePath?: string;
  egressSocket?: string;
  /** uid/gid the agent child runs as. Always 1001 in production. */
  childUid?: number;
  childGid?: number;
  /** argv of the agent child. */
  childCommand?: string[];
  childCwd?: string;
  /**
   * Where the idle child starts (before its session): not the workspace, whose folder a claim
   * replaces by a bind mount (a process inside the old folder would keep seeing the empty one).
   */
  childIdleCwd?: string;
  /**
   * The idle child, launched by the entry point before it loaded this module (idleChildLaunch
   * with these options); taken over by the first spawn. One launched otherwise is ended.
   */
  prestarted?: LaunchedAgent;
  /** Exit the process after `shutdown` (true in the container; false for in-process tests). */
  exitOnShutdown?: boolean;
  /** End the processes of the child's uid a turn left behind (strays.ts); the container only. */
  endStrays?: boolean;
  log?: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
}

const CHILD_READY_TIMEOUT_MS = 15_000;
const CANCEL_GRACE_MS = 5_000;

export class Supervisor {
  private readonly o: Required<Omit<SupervisorOptions, 'log' | 'prestarted'>> & Pick<SupervisorOptions, 'log'>;
  private prestarted?: LaunchedAgent;
  private server?: Server;
  private conns = new Set<Conn>();
  private spec?: StartSpec;
  private profile?: SessionProfile;
  private proxy?: RunningProxy;
  private child?: AgentProcess;
  private childRestarts = 0;
  private turn?: { id: string };
  private stopping = false;
  /** The idle child died before any session: this sandbox takes none (it shuts down). */
  private retired = false;
  private readonly startedAt = Date.now();

  constructor(opts: SupervisorOptions = {}) {
    this.o = {
      controlSocket: opts.controlSocket ?? SANDBOX_CONTROL_SOCKET,
      profilePath: opts.profilePath ?? SANDBOX_PROFILE,
      egressSocket: opts.egressSocket ?? SANDBOX_EGRESS_SOCKET,
      childUid: opts.childUid ?? CHILD_UID,
      childGid: opts.childGid ?? CHILD_GID,
      childCommand: opts.childCommand ?? agentCommand(),
      childCwd: opts.childCwd ?? SANDBOX_WORKSPACE,
      childIdleCwd: opts.childIdleCwd ?? IDLE_CHILD_CWD,
      exitOnShutdown: opts.exitOnShutdown ?? true,
      endStrays: opts.endStrays ?? false,
      log: opts.log,
    };
    this.prestarted = opts.prestarted;
  }

  private readonly warn = (msg: string, data?: Record<string, unknown>): void => this.log('warn', msg, data);

  private log(level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>): void {
    this.o.log?.(level, msg, data);
    // Operators see warnings over the control socket too (never tokens: callers pass none).
    if (level !== 'info') this.broadcast({ type: 'log', level, msg, data });
  }

  async listen(): Promise<void> {
    try {
      unlinkSync(this.o.controlSocket);
    } catch {
      // no stale socket: nothing to remove
    }
    const server = createServer((s) => this.onConnection(s));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.controlSocket, () => resolve());
    });
    // Root only: the agent child (uid 1001) must not reach the control socket.
    chmodSync(this.o.controlSocket, 0o600);
    this.o.log?.('info', 'control socket listening', { path: this.o.controlSocket });
  }

  private broadcast(m: ControlMessage): void {
    for (const c of this.conns) if (!c.shell) c.out.write(m);
  }

  private onConnection(socket: Socket): void {
    const conn: Conn = { socket, out: new LineWriter<ControlMessage>(socket) };
    this.conns.add(conn);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.conns.delete(conn);
      conn.shell?.kill('SIGKILL');
    });
    conn.reader = readMessages(socket, {
      schema: ControlRequestSchema,
      onMessage: (m) => {
        if (conn.shell) return;
        void this.handle(conn, m);
      },
      onReject: (err) => {
        if (conn.shell) return;
        this.log('warn', 'bad control line', protocolLogFields(err, 'control'));
        // A request whose id could be read still gets its (error) reply, so the caller does not hang.
        const id = rejectedRequestId(err);
        if (id !== undefined) this.replyError(conn, id, err.code, err.message);
      },
    });
  }

  private reply(conn: Conn, id: string, data?: Record<string, unknown>): void {
    conn.out.write({ type: 'reply', id, ok: true, ...(data ? { data } : {}) });
  }

  private replyError(conn: Conn, id: string, code: string, message: string): void {
    conn.out.write({ type: 'reply', id, ok: false, error: { code, message } });
  }

  private async handle(conn: Conn, m: ControlRequest): Promise<void> {
    const id = m.id;
    try {
      switch (m.type) {
        case 'ping':
          return this.reply(conn, id, { ...this.status() });
        case 'warm':
          await this.waitChild('booted');
          return this.reply(conn, id, { ...this.status() });
        case 'start':
          await this.start(m.spec);
          return this.reply(conn, id, { ...this.status() });
        case 'prompt':
          await this.prompt(m.turn_id, m.prompt, {
            ...(m.base !== undefined ? { base: m.base } : {}),
            ...(m.context ? { context: m.context } : {}),
          });
          return this.reply(conn, id);
        case 'cancel':
          this.cancel(m.turn_id);
          return this.reply(conn, id);
        case 'shutdown':
          this.reply(conn, id);
          await this.shutdown();
          return;
        case 'shell':
          return operatorShell(conn, { uid: this.o.childUid, gid: this.o.childGid, cwd: this.o.childCwd }, (data) =>
            this.reply(conn, id, data),
          );
      }
    } catch (err) {
      const code = errorCode(err);
      this.replyError(
        conn,
        id,
        code?.startsWith('ERR_') ? code : 'ERR_SANDBOX_INTERNAL',
        err instanceof Error ? err.message : 'internal error',
      );
    }
  }

  status(): SupervisorStatus {
    return {
      state: this.spec ? 'started' : 'hello',
      session_id: this.spec?.session_id ?? null,
      child_pid: this.child?.pid ?? null,
      child_restarts: this.childRestarts,
      turn_id: this.turn?.id ?? null,
      proxy_port: this.proxy?.port ?? null,
      uptime_ms: Date.now() - this.startedAt,
      agent_ready: !!this.child?.usable && this.child.isBooted,
    };
  }

  /** Spawn the idle agent child (its MCP servers start with it) while no session is known. */
  prestart(): void {
    if (!this.child && !this.stopping && !this.retired) this.spawnChild();
  }

  private async start(spec: StartSpec): Promise<void> {
    if (this.spec) {
      if (this.spec.session_id === spec.session_id) return; // idempotent (daemon re-sent after reconnect)
      throw coded('ERR_SANDBOX_ALREADY_STARTED', 'this sandbox already belongs to another session');
    }
    if (this.retired || this.stopping)
      throw coded('ERR_SANDBOX_CHILD_EXITED', 'the agent of this sandbox stopped before its session');
    const profile = readProfile(this.o.profilePath, this.warn);
    if (profile.session_id !== spec.session_id)
      throw coded('ERR_SANDBOX_PROFILE', 'profile.json is for another session');
    this.spec = spec;
    this.profile = profile;
    this.proxy = await startCredentialProxy({
      profile,
      getPlaceholder: (name) => this.spec?.placeholders[name],
      egressSocket: this.o.egressSocket,
      host: '127.0.0.1',
      port: profile.proxy.port,
      log: (level, msg, data) => this.log(level, msg, data),
      onDecision: (d) => this.broadcast({ type: 'proxy_decision', ...d }),
      ...(spec.mail_policy ? { mailPolicy: spec.mail_policy } : {}),
      currentTurn: () => this.turn?.id ?? null,
    });
    // The child is usually up already (spawned idle at boot): only the session's parts go to it.
    if (this.child)
      void this.child
        .configure(
          sessionEnv(this.spec!, this.profile, this.proxy?.port ?? SANDBOX_PROXY_PORT, this.warn),
          this.o.childCwd,
        )
        .catch(() => undefined);
    else this.spawnChild();
    await this.waitChild('ready');
    this.o.log?.('info', 'sandbox started', { session_id: spec.session_id, routes: profile.routes.length });
  }

  /** The entry point's launched child, for the first idle spawn of the same launch; else ended (stdin closed). */
  private takePrestarted(launch: AgentLaunch): LaunchedAgent | undefined {
    const p = this.prestarted;
    this.prestarted = undefined;
    if (!p || (!this.spec && sameLaunch(p.launch, launch))) return p;
    this.log('warn', 'the agent launched at boot does not match this spawn; it is ended and spawned anew');
    p.proc.stdin?.end();
    return undefined;
  }

  private spawnChild(): void {
    const launch = idleChildLaunch({
      command: this.o.childCommand,
      uid: this.o.childUid,
      gid: this.o.childGid,
      cwd: this.o.childIdleCwd,
    });
    const launched = this.takePrestarted(launch);
    const child = new AgentProcess({
      ...launch,
      ...(launched ? { launched } : {}),
      // A child (re)started for a running session is configured as soon as it is up.
      ...(this.spec
        ? {
            settings: {
              env: sessionEnv(this.spec!, this.profile, this.proxy?.port ?? SANDBOX_PROXY_PORT, this.warn),
              cwd: this.o.childCwd,
            },
          }
        : {}),
      readyTimeoutMs: CHILD_READY_TIMEOUT_MS,
      cancelGraceMs: CANCEL_GRACE_MS,
      exitedError: {
        code: 'ERR_SANDBOX_CHILD_EXITED',
        message: 'the agent process stopped during the turn; it has been restarted',
      },
      log: (level, msg, data) => this.log(level, msg, data),
      // Child stderr goes to the container log (docker logs), capped per chunk.
      onStderr: (d) => process.stderr.write(d.length > 8192 ? d.slice(0, 8192) + '…\n' : d),
    });
    this.child = child;
    child.onExit((code, signal) => {
      if (this.child !== child) return;
      this.child = undefined; // prompts wait for the restarted child
      if (this.stopping) return;
      if (!this.spec) {
        // Idle (a pool member, or a cold start before its `start`): never hand it out half-ready.
        this.retired = true;
        this.log('warn', 'agent child exited while idle; the sandbox retires', { code, signal });
        void this.shutdown();
        return;
      }
      this.log('warn', 'agent child exited', { code, signal });
      this.childRestarts++;
      const delay = Math.min(5000, 100 * 2 ** Math.min(this.childRestarts, 6));
      setTimeout(() => {
        if (!this.stopping && !this.child) this.spawnChild();
      }, delay).unref();
    });
  }

  /**
   * Wait for the child to be up ('booted': idle, its MCP servers started) or up and configured
   * for the session ('ready'). A child that dies meanwhile is waited for again once restarted
   * (a session's child is); a refusal from a living child (settings refused, timeout) is thrown.
   */
  private async waitChild(what: 'booted' | 'ready'): Promise<AgentProcess> {
    const deadline = Date.now() + CHILD_READY_TIMEOUT_MS;
    this.prestart();
    for (;;) {
      if (this.retired || this.stopping) throw coded('ERR_SANDBOX_CHILD_EXITED', 'the agent of this sandbox stopped');
      const child = this.child;
      if (child) {
        const timer = new Promise<never>((_r, rej) =>
          setTimeout(
            () => rej(coded('ERR_SANDBOX_CHILD_TIMEOUT', 'agent did not become ready')),
            Math.max(1, deadline - Date.now()),
          ).unref(),
        );
        try {
          await Promise.race([what === 'booted' ? child.booted : child.ready, timer]);
          if (child.usable) return child;
        } catch (err) {
          if (Date.now() >= deadline || !child.exited) throw err;
        }
      }
      // The child died while starting: wait for the restart.
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async prompt(turnId: string, prompt: string, context: PromptContext): Promise<void> {
    if (!this.spec) throw coded('ERR_SANDBOX_NOT_STARTED', 'sandbox not started');
    if (this.turn) throw coded('ERR_SESSION_BUSY', 'a turn is already running');
    const turn = { id: turnId };
    this.turn = turn;
    try {
      const child = await this.waitChild('ready');
      const ended = child.runTurn(
        turnId,
        prompt,
        (event) => {
          if (this.turn === turn) this.broadcast({ type: 'event', turn_id: turnId, event });
        },
        undefined,
        context,
      );
      void ended.then((r) => {
        if (this.turn === turn)
          this.endTurn(r.stop_reason, r.error, {
            ...(r.items ? { items: r.items } : {}),
            ...(r.usage ? { usage: r.usage } : {}),
          });
      });
    } catch (err) {
      this.turn = undefined;
      throw err;
    }
  }

  private cancel(turnId: string): void {
    if (!this.turn || this.turn.id !== turnId) return;
    // The host sends the cancel, and after the grace period ends the turn and kills the child
    // (which is then restarted like any child that exits).
    this.child?.cancel(turnId);
  }

  private endTurn(stop: StopReason, error?: { code: string; message: string }, extras: TurnEndExtras = {}): void {
    const t = this.turn;
    if (!t) return;
    this.turn = undefined;
    const send = () =>
      this.broadcast({ type: 'turn_end', turn_id: t.id, stop_reason: stop, ...(error ? { error } : {}), ...extras });
    if (!this.o.endStrays) return send();
    // Before turn_end: the next turn never meets what this one left running.
    endStrays(this.o.childUid, this.o.childGid, process.pid)
      .then(
        (n) => n > 0 && this.log('warn', 'processes of the agent uid left by the turn were ended', { count: n }),
        (err: unknown) =>
          this.log('warn', 'could not end processes left by the turn', {
            err: err instanceof Error ? err.message : String(err),
          }),
      )
      .finally(send);
  }

  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await this.child?.stop();
    await this.proxy?.close();
    for (const c of this.conns) {
      c.out.flush();
      c.socket.end();
    }
    this.server?.close();
    try {
      unlinkSync(this.o.controlSocket);
    } catch {
      // already gone
    }
    if (this.o.exitOnShutdown) setTimeout(() => process.exit(0), 50).unref();
  }
}

export type { ControlRequest };
