import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { DRIVER_SOURCE } from './python-driver.js';
import { ToolError } from './result.js';

import type { PythonLimits } from './python-limits.js';

export interface CellResult {
  ok: boolean;
  stdout: string;
  stderr: string;
  /** Set when the output was more than the model is shown. */
  truncated: boolean;
  error?: { type: string; message: string; traceback: string };
  /** The interpreter was started for this call (its state is new). */
  fresh: boolean;
  duration_ms: number;
}

/** What a call's output is cut to for the model (the chat has it streamed whole, up to the cap). */
const MODEL_OUTPUT_CHARS = 20_000;
/** How often the process count of the interpreter's group is checked during a call. */
const PROCS_POLL_MS = 50;

/** Splits a stream at the driver's end-of-cell marker; bytes before it are the cell's output. */
class MarkedStream {
  private held = '';
  marked = false;
  constructor(
    private readonly mark: string,
    private readonly out: (text: string) => void,
  ) {}
  push(chunk: string): void {
    const s = this.held + chunk;
    const i = s.indexOf(this.mark);
    if (i >= 0) {
      if (i > 0) this.out(s.slice(0, i));
      this.held = s.slice(i + this.mark.length);
      this.marked = true;
      return;
    }
    // Keep back only what could be the start of a marker cut across two chunks, so output streams at once.
    const j = s.lastIndexOf(this.mark[0]!);
    const keep = j >= 0 && this.mark.startsWith(s.slice(j)) ? s.length - j : 0;
    if (s.length > keep) this.out(s.slice(0, s.length - keep));
    this.held = s.slice(s.length - keep);
  }
  reset(): void {
    this.marked = false;
  }
}

/** pids whose process group is `pgid` (from /proc; a process that ends while read is left out). */
export function groupPids(pgid: number, proc = '/proc'): number[] {
  const out: number[] = [];
  for (const name of readdirSync(proc)) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    try {
      const stat = readFileSync(`${proc}/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after the last ')'.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[2]) === pgid) out.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/** Threads of a process (the pids limit of the sandbox counts them too). */
function threadsOf(pid: number): number {
  try {
    return Number(/^Threads:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 1);
  } catch {
    return 0;
  }
}

interface Pending {
  id: number;
  resolve: (r: { ok: boolean; error?: CellResult['error'] }) => void;
  reject: (e: ToolError) => void;
}

/**
 * One Python interpreter of a chat (run_python): started on the first call, kept for the
 * session, its state in one namespace. Runs in a process group of its own, so a call that goes
 * over a bound, or a Stop, ends it and everything it started with one SIGKILL; the next call
 * starts a fresh interpreter and says so (`fresh`).
 */
export class PythonSession {
  private child?: ChildProcess;
  private ready?: Promise<void>;
  private next = 1;
  private pending?: Pending;
  private control = '';
  private readonly mark = `\u001eAIRLOCK-CELL-END-${randomBytes(9).toString('base64url')}\u001e`;
  /** Set when an interpreter was lost (killed, crashed) since the last call: the model is told. */
  private lost?: string;
  private started = false;

  constructor(
    private readonly opts: {
      python: string;
      cwd: string;
      env: Record<string, string>;
      limits: () => PythonLimits;
      preload: string[];
    },
  ) {}

  /** Why the state of an earlier interpreter is gone, once (then cleared). */
  takeLost(): string | undefined {
    const l = this.lost;
    this.lost = undefined;
    return l;
  }

  private start(): Promise<void> {
    const limits = this.opts.limits();
    const env = {
      ...this.opts.env,
      AIRLOCK_PY_MARK: this.mark,
      AIRLOCK_PY_LIMITS: JSON.stringify({
        memory_mb: limits.memoryMb,
        cpu_s: limits.cpuS,
        file_mb: limits.fileMb,
        procs: limits.procs,
        preload: this.opts.preload,
      }),
    };
    const child = spawn(this.opts.python, ['-u', '-I', '-c', DRIVER_SOURCE], {
      cwd: this.opts.cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    this.started = true;
    const ctlOut = child.stdio[4] as Readable;
    ctlOut.setEncoding('utf8');
    let onReady: () => void;
    let onFail: (e: ToolError) => void;
    const ready = new Promise<void>((res, rej) => ((onReady = res), (onFail = rej)));
    ctlOut.on('data', (d: string) => {
      this.control += d;
      let nl: number;
      while ((nl = this.control.indexOf('\n')) >= 0) {
        const line = this.control.slice(0, nl);
        this.control = this.control.slice(nl + 1);
        let msg: {
          ready?: boolean;
          proc_limit?: boolean;
          memory?: boolean;
          id?: number;
          ok?: boolean;
          error?: CellResult['error'];
        };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          continue;
        }
        if (msg.proc_limit && this.pending) {
          const what = msg.memory
            ? "processes until the sandbox's memory ran low"
            : `more than ${this.opts.limits().procs} processes`;
          const why = new ToolError(
            'ERR_PYTHON_PROCESS_LIMIT',
            `the code started ${what}; it was stopped and the interpreter was ended`,
          );
          this.kill(why.message);
          this.pending.reject(why);
        } else if (msg.ready) onReady();
        else if (this.pending && msg.id === this.pending.id)
          this.pending.resolve({ ok: msg.ok === true, ...(msg.error ? { error: msg.error } : {}) });
      }
    });
    child.on('error', (err) =>
      onFail(new ToolError('ERR_PYTHON_UNAVAILABLE', `Python could not be started (${err.message})`)),
    );
    child.on('exit', (code, sig) => {
      if (this.child === child) {
        this.child = undefined;
        this.ready = undefined;
        this.lost = `the interpreter ended (${sig ?? `exit code ${code}`})`;
      }
      onFail(new ToolError('ERR_PYTHON_UNAVAILABLE', `Python exited while starting (${sig ?? code})`));
      const why = sig === 'SIGXCPU' ? 'ERR_PYTHON_CPU_LIMIT' : 'ERR_PYTHON_EXITED';
      this.pending?.reject(
        new ToolError(
          why,
          why === 'ERR_PYTHON_CPU_LIMIT'
            ? 'the code went over its CPU time limit; the interpreter was ended'
            : `the Python interpreter ended (${sig ?? `exit code ${code}`})`,
        ),
      );
    });
    (child.stdio[2] as Readable).on('data', () => undefined);
    return ready;
  }

  /** Kill the interpreter's whole process group (SIGKILL); its state is gone. */
  kill(why: string): void {
    const c = this.child;
    if (!c?.pid) return;
    this.child = undefined;
    this.ready = undefined;
    this.lost = why;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  /** Run one cell. Resolves with its result; a bound that ends the interpreter throws a ToolError. */
  async run(
    code: string,
    onOutput: (stream: 'stdout' | 'stderr', text: string) => void,
    signal: AbortSignal,
  ): Promise<CellResult> {
    const limits = this.opts.limits();
    const t0 = performance.now();
    let fresh = false;
    if (!this.child) {
      fresh = true;
      this.ready = this.start();
    }
    await this.ready;
    const child = this.child!;
    const id = this.next++;
    let bytes = 0;
    const text = { stdout: '', stderr: '' };
    let over: ToolError | undefined;
    const outputOver = () =>
      new ToolError(
        'ERR_PYTHON_OUTPUT_LIMIT',
        `the code printed more than ${limits.outputBytes} bytes; it was stopped and the interpreter was ended`,
      );
    const sink = (stream: 'stdout' | 'stderr') => (t: string) => {
      bytes += Buffer.byteLength(t);
      if (bytes > limits.outputBytes) {
        over ??= outputOver();
        return;
      }
      if (text[stream].length < MODEL_OUTPUT_CHARS) text[stream] += t;
      onOutput(stream, t);
    };
    const streams = {
      stdout: new MarkedStream(this.mark, sink('stdout')),
      stderr: new MarkedStream(this.mark, sink('stderr')),
    };
    for (const s of ['stdout', 'stderr'] as const) {
      (child.stdio[s === 'stdout' ? 1 : 2] as Readable)
        .removeAllListeners('data')
        .on('data', (chunk: Buffer) => streams[s].push(chunk.toString('utf8')));
    }
    const timers: NodeJS.Timeout[] = [];
    let done!: (r: { ok: boolean; error?: CellResult['error'] }) => void;
    let fail!: (e: ToolError) => void;
    const finished = new Promise<{ ok: boolean; error?: CellResult['error'] }>(
      (res, rej) => ((done = res), (fail = rej)),
    );
    const stop = (e: ToolError) => {
      this.kill(e.message);
      fail(e);
    };
    this.pending = { id, resolve: done, reject: fail };
    const onAbort = () => stop(new ToolError('ERR_PYTHON_CANCELLED', 'stopped by the user; the interpreter was ended'));
    signal.addEventListener('abort', onAbort, { once: true });
    timers.push(...this.watch(limits, child, stop, () => over));
    try {
      (child.stdio[3] as Writable).write(JSON.stringify({ id, code, cpu_s: limits.cpuS }) + '\n');
      const r = await finished;
      // The answer came on fd 4: wait until both streams have passed the marker (all output read).
      await new Promise<void>((res) => {
        const check = () =>
          (streams.stdout.marked && streams.stderr.marked) || !this.child ? res() : setTimeout(check, 2);
        check();
      });
      if (over) {
        this.kill(over.message);
        throw over;
      }
      return {
        ok: r.ok,
        stdout: text.stdout,
        stderr: text.stderr,
        truncated: bytes > MODEL_OUTPUT_CHARS,
        ...(r.error ? { error: r.error } : {}),
        fresh: fresh,
        duration_ms: Math.round(performance.now() - t0),
      };
    } finally {
      this.pending = undefined;
      for (const t of timers) clearTimeout(t);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * The bounds a cell runs under besides its output: the wall clock, and every PROCS_POLL_MS the
   * output limit and the processes and threads of the interpreter's group. Each breach stops it.
   */
  private watch(
    limits: PythonLimits,
    child: ChildProcess,
    stop: (e: ToolError) => void,
    over: () => ToolError | undefined,
  ): NodeJS.Timeout[] {
    const wall = `the code ran longer than ${limits.wallS} s; it was stopped and the interpreter was ended`;
    const procs = `the code started more than ${limits.procs} processes or threads; it was stopped and the interpreter was ended`;
    return [
      setTimeout(() => stop(new ToolError('ERR_PYTHON_TIMEOUT', wall)), limits.wallS * 1000),
      setInterval(() => {
        const o = over();
        if (o) return stop(o);
        const pids = child.pid ? groupPids(child.pid) : [];
        const count = pids.reduce((n, p) => n + threadsOf(p), 0);
        if (count > limits.procs) stop(new ToolError('ERR_PYTHON_PROCESS_LIMIT', procs));
      }, PROCS_POLL_MS),
    ];
  }

  /** True once an interpreter has been started in this session (the bench and tests read it). */
  get everStarted(): boolean {
    return this.started;
  }

  close(): void {
    this.kill('closed');
    this.lost = undefined;
  }
}
