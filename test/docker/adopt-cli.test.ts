/**
 * Daemon killed with SIGKILL and restarted adopts the live containers (next prompt reuses them),
 * and the operator CLI (`airlock sessions …`) over the daemon control socket.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { waitFor } from '../helpers/wait.js';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { startRuntime } from '../../daemon/runtime/index.js';
import { TestClock } from '../helpers/clock.js';
import {
  attachOnPty,
  dataDir,
  dockerOrSkip,
  ensureTestImage,
  execIn,
  ROOT,
  runCli,
  runtimeConfig,
  startRuntimeProc,
  sweep,
  uniqueOwner,
  ENGINE_ENV,
  SANDBOX_RUNTIME,
} from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const CLI = join(ROOT, 'dist', 'daemon', 'main.js');

const cli = (dataDir: string, args: string[]) => runCli({ AIRLOCK_DATA_DIR: dataDir, AIRLOCK_LOG_LEVEL: 'warn' }, args);
const startProc = startRuntimeProc;

async function until(fn: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  await waitFor(fn, what, ms, 50);
}

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('CLI without a running daemon gives a clear error', async (t) => {
    const dir = dataDir(t);
    const r = await cli(dir, ['sessions', 'ls']);
    t.equal(r.code, 1);
    t.match(r.stderr, /ERR_DAEMON_NOT_RUNNING/);
  });

  t.test('SIGKILLed daemon restarts, adopts, reuses; CLI ls/inspect/restart/kill', async (t) => {
    const dir = dataDir(t);
    const owner = uniqueOwner('adopt');
    t.teardown(() => sweep(docker, owner));

    let p = startProc(dir, image, owner);
    t.teardown(() => {
      p.child.kill('SIGKILL');
    });
    await p.ready;
    const a = await p.prompt('sess-a', 'first');
    t.equal(a.stop_reason, 'end_turn');
    const b = await p.prompt('sess-b', 'first');
    t.not(b.containerId, a.containerId);

    const sock = statSync(join(dir, 'control.sock'));
    t.equal(sock.mode & 0o777, 0o600, 'daemon control socket is 0600');

    const ls = await cli(dir, ['sessions', 'ls', '--json']);
    t.equal(ls.code, 0, ls.stderr);
    const list = JSON.parse(ls.stdout) as { sessionId: string | null; containerId: string }[];
    t.same(
      list
        .filter((s) => s.sessionId)
        .map((s) => s.sessionId)
        .sort(),
      ['sess-a', 'sess-b'],
    );
    t.equal(
      list.filter((s) => !s.sessionId).length,
      SANDBOX_RUNTIME === 'runc' ? 1 : 0,
      SANDBOX_RUNTIME === 'runc' ? 'one pool container' : 'runsc: no pool',
    );
    const table = await cli(dir, ['sessions', 'ls']);
    t.match(table.stdout, /SESSION\s+USER\s+CONTAINER/);
    t.match(table.stdout, /sess-a/);

    // SIGKILL: no cleanup at all. The restarted daemon adopts by label.
    p.child.kill('SIGKILL');
    await new Promise((r) => p.child.once('exit', r));
    p = startProc(dir, image, owner);
    const ready = await p.ready;
    const adopted = ready.list
      .filter((s) => s.sessionId)
      .map((s) => s.sessionId)
      .sort();
    t.same(adopted, ['sess-a', 'sess-b'], 'both live sessions adopted');
    t.equal(
      ready.list.filter((s) => !s.sessionId).length,
      SANDBOX_RUNTIME === 'runc' ? 1 : 0,
      SANDBOX_RUNTIME === 'runc' ? 'pool adopted, not doubled' : 'runsc: no pool',
    );
    const a2 = await p.prompt('sess-a', 'second');
    t.equal(a2.containerId, a.containerId, 'next prompt reuses the adopted container');
    t.match(
      (a2.events ?? [])
        .filter((e: { type: string }) => e.type === 'text_delta')
        .map((e: { text?: string }) => e.text)
        .join(''),
      /message 2 of this conversation/,
      'the agent kept its state across the daemon restart',
    );

    const ins = await cli(dir, ['sessions', 'inspect', 'sess-a']);
    t.equal(ins.code, 0, ins.stderr);
    const info = JSON.parse(ins.stdout) as {
      containerId: string;
      container: { hostConfig: { networkMode: string } };
      adopted: boolean;
    };
    t.equal(info.containerId, a.containerId);
    t.equal(info.adopted, true);
    t.equal(info.container.hostConfig.networkMode, 'none');

    const logs = await cli(dir, ['sessions', 'logs', 'sess-a']);
    t.equal(logs.code, 0, logs.stderr);
    t.match(logs.stdout + logs.stderr, /control socket listening/, 'container log is shown');

    // attach: an interactive shell through a TTY exec, as the agent user.
    const att = spawn(process.execPath, [CLI, 'sessions', 'attach', 'sess-a'], {
      env: { PATH: process.env.PATH, ...ENGINE_ENV, AIRLOCK_DATA_DIR: dir },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let attOut = '';
    att.stdout!.on('data', (d: Buffer) => (attOut += d.toString()));
    att.stdin!.write('echo "uid=$(id -u)"; cat /proc/net/dev >/dev/null; exit\n');
    const attCode = await new Promise((r) => att.once('exit', r));
    t.equal(attCode, 0, 'piped stdin: the shell exited 0, so does the CLI');
    t.match(attOut, /uid=1001/, 'attach shell runs as the agent user');

    // The same through a real terminal. Markers (NAME=value) keep the terminal's echo of the
    // typed line from matching: the echo shows `$(…)`, only the output shows the value.
    const pty = await attachOnPty({ AIRLOCK_DATA_DIR: dir }, 'sess-a', async (io) => {
      await until(() => /\$ $/.test(io.out()), 'the shell prompt');
      // isatty, not tty(1): coreutils' statx fails under gVisor (docs/runtime.md, Sandbox runtimes).
      io.write('[ -t 0 ] && echo "TTY="yes\r');
      io.write('echo "UID=$(id -u)"\r');
      io.write("echo \"NET=[$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')]\"\r");
      io.write('echo "SIZE=$(stty size)"\r');
      await until(() => /^SIZE=\d/m.test(io.out()), 'the probe output');
      // Ctrl-C must reach the remote foreground job (raw mode), not end the CLI.
      io.write('echo "SLEEP""ING"; sleep 300\r');
      await until(() => /^SLEEPING\r*$/m.test(io.out()), 'the echo before the sleep');
      // The shell prints before it starts `sleep`: wait for the sleep process itself (its argv in /proc).
      await until(
        async () =>
          /^sleep 300 $/m.test(
            (
              await execIn(
                docker,
                info.containerId,
                ['/bin/sh', '-c', 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done'],
                { user: '0' },
              )
            ).stdout,
          ),
        'the remote sleep to run',
      );
      io.write('\x03');
      io.write('echo "AFTER=$((40+2))"\r');
      await until(() => /^AFTER=42/m.test(io.out()), 'the shell after Ctrl-C');
      io.write('exit 3\r');
    });
    t.match(pty.out, /^TTY=yes\r*$/m, 'the shell has a terminal');
    t.match(pty.out, /^UID=1001\r*$/m, 'as the agent user');
    t.match(pty.out, /^NET=\[lo \]\r*$/m, 'only the loopback interface');
    t.match(pty.out, /^SIZE=37 101\r*$/m, "the remote terminal has the operator's window size");
    t.match(pty.out, /^AFTER=42\r*$/m, 'Ctrl-C interrupted the remote sleep and the session went on');
    t.equal(pty.code, 3, "the CLI exits with the remote shell's status (exit 3)");

    const missing = await cli(dir, ['sessions', 'inspect', 'no-such-session']);
    t.equal(missing.code, 1);
    t.match(missing.stderr, /ERR_SESSION_NOT_FOUND/);

    const rs = await cli(dir, ['sessions', 'restart', 'sess-b']);
    t.equal(rs.code, 0, rs.stderr);
    const b2 = await p.prompt('sess-b', 'after restart');
    t.not(b2.containerId, b.containerId, 'restarted session runs in a new container');

    const stale = await cli(dir, ['sessions', 'restart', '--stale']);
    t.equal(stale.code, 0, stale.stderr);
    t.match(stale.stdout, /restarted 0 stale session/);

    const kill = await cli(dir, ['sessions', 'kill', 'sess-a']);
    t.equal(kill.code, 0, kill.stderr);
    await t.rejects(
      docker.getContainer(a.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      'kill removed the container',
    );
  });

  t.test('restart --stale through the CLI replaces a stale session', async (t) => {
    // The real runtime and control socket in this process, with a 1 h staleness threshold and a
    // clock the test advances past it.
    const dir = dataDir(t);
    const owner = uniqueOwner('stale');
    t.teardown(() => sweep(docker, owner));
    const config = runtimeConfig(dir, image, { AIRLOCK_POOL_SIZE: '0', AIRLOCK_SESSION_STALE_S: '3600' });
    const clock = new TestClock();
    const rt = await startRuntime({
      config,
      log: createLogger({ level: 'warn', destination: process.stderr }),
      owner,
      clock,
    });
    if (!rt) return t.fail('the runtime did not start');
    t.teardown(() => rt.close({ removeContainers: true }));
    const turn = (prompt: string) =>
      rt.sessions.runTurn({
        userId: 5,
        sessionId: 'stale-a',
        turnId: randomUUID(),
        prompt,
        signal: new AbortController().signal,
        onEvent: () => undefined,
      });
    const first = await turn('one');
    t.equal(first.stop_reason, 'end_turn');
    type Row = { sessionId: string | null; containerId: string; stale: boolean };
    const ls = async () => JSON.parse((await cli(dir, ['sessions', 'ls', '--json'])).stdout) as Row[];
    t.same(
      (await ls()).map((s) => [s.sessionId, s.stale]),
      [['stale-a', false]],
      'not stale yet',
    );
    clock.advance(3601_000);
    t.same(
      (await ls()).map((s) => [s.sessionId, s.stale]),
      [['stale-a', true]],
      '`sessions ls` shows it stale',
    );
    const r = await cli(dir, ['sessions', 'restart', '--stale']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^restarted 1 stale session\(s\): stale-a$/m, 'the CLI reports the one restart');
    const after = await ls();
    t.same(
      after.map((s) => s.sessionId),
      ['stale-a'],
      'still one session',
    );
    t.not(after[0].containerId, first.containerId, 'in a new container');
    await t.rejects(
      docker.getContainer(first.containerId!).inspect(),
      { statusCode: 404 } as unknown as Error,
      'the stale container is removed',
    );
    const next = await turn('two');
    t.equal(next.containerId, after[0].containerId, 'the next prompt runs in the new container');
  });
}
