/**
 * The in-container supervisor (root, with only SETUID/SETGID). It:
 * - listens on /run/airlock/control.sock (root, 0600: the agent child cannot connect);
 * - on `start`, keeps the real tokens in its own process.env, reads profile.json, starts the
 *   credential-injection proxy and spawns the agent child as uid/gid 1001 with an allow-listed env;
 * - relays prompts to the child and its events back; restarts the child if it dies;
 * - handles cancel, ping, rotate-token, shutdown and an operator shell.
 *
 * Security: tokens never go to argv, the child env, a file, or a log line. The child runs under
 * another uid, so it cannot read this process's /proc/<pid>/environ (see MACHINE-NOTES.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { startCredentialProxy, type RunningProxy } from '../proxy/index.js';
import {
  CHILD_GID,
  CHILD_UID,
  SANDBOX_CONTROL_SOCKET,
  SANDBOX_EGRESS_SOCKET,
  SANDBOX_PROFILE,
  SANDBOX_PROXY_PORT,
  AGENT_SETTING_ENVS,
  SANDBOX_WORKSPACE,
  type ChildInbound,
  type ChildOutbound,
  type ControlMessage,
  type ControlRequest,
  type SessionProfile,
  type StartSpec,
  type StopReason,
} from '../core/sandbox-protocol.js';
import { readLines, writeLine } from './ndjson.js';

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
  /** Exit the process after `shutdown` (true in the container; false for in-process tests). */
  exitOnShutdown?: boolean;
  log?: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
}

const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
const CHILD_READY_TIMEOUT_MS = 15_000;
const CANCEL_GRACE_MS = 5_000;
/** Env names the child may never receive, whatever the daemon sends. */
const FORBIDDEN_CHILD_ENV = new Set(['MCP_INTERNAL_SECRET', 'AGENT_USER_TOKEN_SECRET', 'NODE_OPTIONS', 'LD_PRELOAD', 'LD_LIBRARY_PATH']);

type Conn = { socket: Socket; shell?: ChildProcess };

export class Supervisor {
  private readonly o: Required<Omit<SupervisorOptions, 'log'>> & Pick<SupervisorOptions, 'log'>;
  private server?: Server;
  private conns = new Set<Conn>();
  private spec?: StartSpec;
  private profile?: SessionProfile;
  private proxy?: RunningProxy;
  private child?: ChildProcess;
  private childReady?: Promise<void>;
  private childRestarts = 0;
  private turn?: { id: string; cancelTimer?: NodeJS.Timeout };
  private tokenNames = new Set<string>();
  private stopping = false;
  private readonly startedAt = Date.now();

  constructor(opts: SupervisorOptions = {}) {
    this.o = {
      controlSocket: opts.controlSocket ?? SANDBOX_CONTROL_SOCKET,
      profilePath: opts.profilePath ?? SANDBOX_PROFILE,
      egressSocket: opts.egressSocket ?? SANDBOX_EGRESS_SOCKET,
      childUid: opts.childUid ?? CHILD_UID,
      childGid: opts.childGid ?? CHILD_GID,
      childCommand: opts.childCommand ?? [process.execPath, new URL('../agent/main.js', import.meta.url).pathname],
      childCwd: opts.childCwd ?? SANDBOX_WORKSPACE,
      exitOnShutdown: opts.exitOnShutdown ?? true,
      log: opts.log,
    };
  }

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
    for (const c of this.conns) if (!c.shell) writeLine(c.socket, m);
  }

  private onConnection(socket: Socket): void {
    const conn: Conn = { socket };
    this.conns.add(conn);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.conns.delete(conn);
      conn.shell?.kill('SIGKILL');
    });
    readLines(
      socket,
      (m) => {
        if (conn.shell) return;
        void this.handle(conn, m as ControlRequest);
      },
      (why) => this.log('warn', 'bad control line', { why }),
    );
  }

  private reply(conn: Conn, id: string, data?: Record<string, unknown>): void {
    writeLine(conn.socket, { type: 'reply', id, ok: true, ...(data ? { data } : {}) } satisfies ControlMessage);
  }

  private replyError(conn: Conn, id: string, code: string, message: string): void {
    writeLine(conn.socket, { type: 'reply', id, ok: false, error: { code, message } } satisfies ControlMessage);
  }

  private async handle(conn: Conn, m: ControlRequest): Promise<void> {
    const id = typeof m?.id === 'string' ? m.id : '';
    try {
      switch (m?.type) {
        case 'ping':
          return this.reply(conn, id, this.status());
        case 'start':
          await this.start(m.spec);
          return this.reply(conn, id, this.status());
        case 'prompt':
          await this.prompt(m.turn_id, m.prompt);
          return this.reply(conn, id);
        case 'cancel':
          this.cancel(m.turn_id);
          return this.reply(conn, id);
        case 'rotate-token':
          this.setTokens(m.tokens);
          return this.reply(conn, id, { rotated: Object.keys(m.tokens ?? {}).length });
        case 'shutdown':
          this.reply(conn, id);
          await this.shutdown();
          return;
        case 'shell':
          return this.shell(conn, id);
        default:
          return this.replyError(conn, id, 'ERR_SANDBOX_BAD_REQUEST', 'unknown request type');
      }
    } catch (err) {
      const e = err as { code?: string; message?: string };
      this.replyError(conn, id, typeof e.code === 'string' && e.code.startsWith('ERR_') ? e.code : 'ERR_SANDBOX_INTERNAL', e.message ?? 'internal error');
    }
  }

  status(): Record<string, unknown> {
    return {
      state: this.spec ? 'started' : 'hello',
      session_id: this.spec?.session_id ?? null,
      child_pid: this.child?.pid ?? null,
      child_restarts: this.childRestarts,
      turn_id: this.turn?.id ?? null,
      proxy_port: this.proxy?.port ?? null,
      uptime_ms: Date.now() - this.startedAt,
    };
  }

  private setTokens(tokens: Record<string, string> | undefined): void {
    for (const [k, v] of Object.entries(tokens ?? {})) {
      if (!ENV_NAME.test(k) || typeof v !== 'string') throw coded('ERR_SANDBOX_BAD_REQUEST', 'bad token name');
      // The supervisor's own environment is where real tokens live (the proxy reads them per request).
      process.env[k] = v;
      this.tokenNames.add(k);
    }
  }

  private async start(spec: StartSpec): Promise<void> {
    if (this.spec) {
      if (this.spec.session_id === spec?.session_id) return; // idempotent (daemon re-sent after reconnect)
      throw coded('ERR_SANDBOX_ALREADY_STARTED', 'this sandbox already belongs to another session');
    }
    if (!spec || typeof spec.session_id !== 'string') throw coded('ERR_SANDBOX_BAD_REQUEST', 'start needs a spec');
    const profile = JSON.parse(readFileSync(this.o.profilePath, 'utf8')) as SessionProfile;
    if (profile.session_id !== spec.session_id) throw coded('ERR_SANDBOX_PROFILE', 'profile.json is for another session');
    this.setTokens(spec.tokens);
    this.spec = spec;
    this.profile = profile;
    this.proxy = await startCredentialProxy({
      profile,
      getToken: (name) => (this.tokenNames.has(name) ? process.env[name] : undefined),
      getPlaceholder: (name) => this.spec?.placeholders[name],
      egressSocket: this.o.egressSocket,
      host: '127.0.0.1',
      port: profile.proxy?.port ?? SANDBOX_PROXY_PORT,
      log: (level, msg, data) => this.log(level, msg, data),
      onDecision: (d) => this.broadcast({ type: 'proxy_decision', ...d }),
    });
    this.spawnChild();
    await this.waitChildReady();
    this.o.log?.('info', 'sandbox started', { session_id: spec.session_id, routes: profile.routes.length });
  }

  /** The child's environment: an allow-list, never the supervisor's own env. */
  childEnv(): Record<string, string> {
    const spec = this.spec!;
    const secrets = new Set(Object.values(spec.tokens ?? {}).filter((v) => v.length > 0));
    const env: Record<string, string> = {};
    const put = (k: string, v: unknown) => {
      if (!ENV_NAME.test(k) || typeof v !== 'string') return;
      if (this.tokenNames.has(k) || FORBIDDEN_CHILD_ENV.has(k) || secrets.has(v)) {
        this.log('warn', 'refused child env entry', { name: k });
        return;
      }
      env[k] = v;
    };
    const settings = new Set(AGENT_SETTING_ENVS);
    const placeholderNames = new Set((this.profile?.routes ?? []).map((r) => r.placeholder_env));
    const refuse = (k: string) => this.log('warn', 'refused child env entry', { name: ENV_NAME.test(k) ? k : '(malformed)' });
    for (const [k, v] of Object.entries(spec.agent_env ?? {})) (settings.has(k) ? put(k, v) : refuse(k));
    for (const [k, v] of Object.entries(spec.placeholders ?? {})) (placeholderNames.has(k) ? put(k, v) : refuse(k));
    const port = this.proxy?.port ?? SANDBOX_PROXY_PORT;
    for (const r of this.profile?.routes ?? []) if (r.base_url_env) put(r.base_url_env, `http://127.0.0.1:${port}${r.prefix}`);
    if (spec.agent_user_token) put('AGENT_USER_TOKEN', spec.agent_user_token);
    put('AIRLOCK_SESSION_ID', spec.session_id);
    env.HOME = '/home/agent';
    env.PATH = '/usr/local/bin:/usr/bin:/bin';
    env.LANG = 'C.UTF-8';
    return env;
  }

  private spawnChild(): void {
    const [cmd, ...args] = this.o.childCommand;
    const child = spawn(cmd, args, {
      uid: this.o.childUid,
      gid: this.o.childGid,
      cwd: this.o.childCwd,
      env: this.childEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    let resolveReady!: () => void;
    let rejectReady!: (e: Error) => void;
    this.childReady = new Promise<void>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    this.childReady.catch(() => undefined);
    child.stdin!.on('error', () => undefined); // the exit handler deals with a dead child
    readLines(child.stdout!, (m) => {
      const msg = m as ChildOutbound;
      if (msg?.type === 'ready') resolveReady();
      else if (msg?.type === 'event' && this.turn && msg.turn_id === this.turn.id) this.broadcast({ type: 'event', turn_id: msg.turn_id, event: msg.event });
      else if (msg?.type === 'turn_end' && this.turn && msg.turn_id === this.turn.id) this.endTurn(msg.stop_reason, msg.error);
    });
    let errTail = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      // Child stderr goes to the container log (docker logs), capped per chunk.
      process.stderr.write(d.length > 8192 ? d.slice(0, 8192) + '…\n' : d);
      errTail = (errTail + d).slice(-512);
    });
    const onGone = (code: number | null, signal: NodeJS.Signals | null) => {
      rejectReady(coded('ERR_SANDBOX_CHILD_EXITED', `agent exited (${code ?? signal})`));
      if (this.child !== child) return;
      this.child = undefined;
      this.childReady = undefined; // prompts wait for the restarted child
      if (this.stopping) return;
      this.log('warn', 'agent child exited', { code, signal });
      if (this.turn) this.endTurn('error', { code: 'ERR_SANDBOX_CHILD_EXITED', message: 'the agent process stopped during the turn; it has been restarted' });
      this.childRestarts++;
      const delay = Math.min(5000, 100 * 2 ** Math.min(this.childRestarts, 6));
      setTimeout(() => {
        if (!this.stopping && !this.child) this.spawnChild();
      }, delay).unref();
    };
    child.on('exit', onGone);
    child.on('error', (err) => {
      rejectReady(coded('ERR_SANDBOX_CHILD_SPAWN', `agent could not be spawned: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      // A failed spawn emits no 'exit': treat it as one (restart with backoff).
      if (child.pid === undefined) onGone(null, null);
    });
  }

  private async waitChildReady(): Promise<void> {
    const deadline = Date.now() + CHILD_READY_TIMEOUT_MS;
    for (;;) {
      const ready = this.childReady;
      if (ready) {
        const timer = new Promise<never>((_r, rej) => setTimeout(() => rej(coded('ERR_SANDBOX_CHILD_TIMEOUT', 'agent did not become ready')), Math.max(1, deadline - Date.now())).unref());
        try {
          await Promise.race([ready, timer]);
          return;
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (Date.now() >= deadline || code === 'ERR_SANDBOX_CHILD_TIMEOUT' || code === 'ERR_SANDBOX_CHILD_SPAWN') throw err;
        }
      }
      // The child died while starting: wait for the restart.
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private send(m: ChildInbound): void {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) throw coded('ERR_SANDBOX_CHILD_EXITED', 'agent is not running');
    stdin.write(JSON.stringify(m) + '\n');
  }

  private async prompt(turnId: string, prompt: string): Promise<void> {
    if (!this.spec) throw coded('ERR_SANDBOX_NOT_STARTED', 'sandbox not started');
    if (typeof turnId !== 'string' || typeof prompt !== 'string') throw coded('ERR_SANDBOX_BAD_REQUEST', 'prompt needs turn_id and prompt');
    if (this.turn) throw coded('ERR_SESSION_BUSY', 'a turn is already running');
    this.turn = { id: turnId };
    try {
      await this.waitChildReady();
      this.send({ type: 'prompt', turn_id: turnId, prompt });
    } catch (err) {
      this.turn = undefined;
      throw err;
    }
  }

  private cancel(turnId: string): void {
    if (!this.turn || this.turn.id !== turnId) return;
    try {
      this.send({ type: 'cancel', turn_id: turnId });
    } catch {
      // child already gone: the exit handler ends the turn
    }
    const t = this.turn;
    t.cancelTimer ??= setTimeout(() => {
      // The child did not honour the cancel in time: end the turn and restart the child.
      if (this.turn === t) {
        this.endTurn('cancelled');
        this.child?.kill('SIGKILL');
      }
    }, CANCEL_GRACE_MS);
    t.cancelTimer.unref();
  }

  private endTurn(stop: StopReason, error?: { code: string; message: string }): void {
    const t = this.turn;
    if (!t) return;
    if (t.cancelTimer) clearTimeout(t.cancelTimer);
    this.turn = undefined;
    this.broadcast({ type: 'turn_end', turn_id: t.id, stop_reason: stop, ...(error ? { error } : {}) });
  }

  /** Operator shell: after the reply the connection is a raw pipe to /bin/sh as the agent user. */
  private shell(conn: Conn, id: string): void {
    const sh = spawn('/bin/sh', ['-i'], {
      uid: this.o.childUid,
      gid: this.o.childGid,
      cwd: this.o.childCwd,
      env: { HOME: '/home/agent', PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', PS1: 'sandbox$ ' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    conn.shell = sh;
    this.reply(conn, id, { pid: sh.pid ?? null });
    conn.socket.pipe(sh.stdin!);
    sh.stdout!.pipe(conn.socket, { end: false });
    sh.stderr!.pipe(conn.socket, { end: false });
    sh.stdin!.on('error', () => undefined);
    sh.on('exit', () => conn.socket.end());
  }

  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const child = this.child;
    if (child) {
      child.stdin?.end();
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 2000);
      t.unref();
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
      clearTimeout(t);
    }
    await this.proxy?.close();
    for (const c of this.conns) c.socket.end();
    this.server?.close();
    try {
      unlinkSync(this.o.controlSocket);
    } catch {
      // already gone
    }
    if (this.o.exitOnShutdown) setTimeout(() => process.exit(0), 50).unref();
  }
}

function coded(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

export type { ControlRequest };
