/**
 * Daemon killed with SIGKILL and restarted adopts the live containers (next prompt reuses them),
 * and the operator CLI (`airlock sessions …`) over the daemon control socket.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { dataDir, dockerOrSkip, ensureTestImage, ROOT, runCli, startRuntimeProc, sweep, uniqueOwner } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const CLI = join(ROOT, 'dist', 'daemon', 'main.js');

const cli = (dataDir: string, args: string[]) => runCli({ AIRLOCK_DATA_DIR: dataDir, AIRLOCK_LOG_LEVEL: 'warn' }, args);
const startProc = startRuntimeProc;

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
    t.teardown(() => { p.child.kill('SIGKILL'); });
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
    t.same(list.filter((s) => s.sessionId).map((s) => s.sessionId).sort(), ['sess-a', 'sess-b']);
    t.equal(list.filter((s) => !s.sessionId).length, 1, 'one pool container');
    const table = await cli(dir, ['sessions', 'ls']);
    t.match(table.stdout, /SESSION\s+USER\s+CONTAINER/);
    t.match(table.stdout, /sess-a/);

    // SIGKILL: no cleanup at all. The restarted daemon adopts by label.
    p.child.kill('SIGKILL');
    await new Promise((r) => p.child.once('exit', r));
    p = startProc(dir, image, owner);
    const ready = await p.ready;
    const adopted = ready.list.filter((s) => s.sessionId).map((s) => s.sessionId).sort();
    t.same(adopted, ['sess-a', 'sess-b'], 'both live sessions adopted');
    t.equal(ready.list.filter((s) => !s.sessionId).length, 1, 'pool adopted, not doubled');
    const a2 = await p.prompt('sess-a', 'second');
    t.equal(a2.containerId, a.containerId, 'next prompt reuses the adopted container');
    t.match((a2.events ?? []).filter((e: { type: string }) => e.type === 'text_delta').map((e: { text?: string }) => e.text).join(''), /message 2 of this conversation/, 'the agent kept its state across the daemon restart');

    const ins = await cli(dir, ['sessions', 'inspect', 'sess-a']);
    t.equal(ins.code, 0, ins.stderr);
    const info = JSON.parse(ins.stdout) as { containerId: string; container: { hostConfig: { networkMode: string } }; adopted: boolean };
    t.equal(info.containerId, a.containerId);
    t.equal(info.adopted, true);
    t.equal(info.container.hostConfig.networkMode, 'none');

    const logs = await cli(dir, ['sessions', 'logs', 'sess-a']);
    t.equal(logs.code, 0, logs.stderr);
    t.match(logs.stdout + logs.stderr, /control socket listening/, 'container log is shown');

    // attach: an interactive shell through a TTY exec, as the agent user.
    const att = spawn(process.execPath, [CLI, 'sessions', 'attach', 'sess-a'], { env: { PATH: process.env.PATH, AIRLOCK_DATA_DIR: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let attOut = '';
    att.stdout!.on('data', (d: Buffer) => (attOut += d.toString()));
    att.stdin!.write('echo "uid=$(id -u)"; ls /sys/class/net; exit\n');
    const attCode = await new Promise((r) => att.once('exit', r));
    t.equal(attCode, 0);
    t.match(attOut, /uid=1001/, 'attach shell runs as the agent user');

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
    await t.rejects(docker.getContainer(a.containerId!).inspect(), { statusCode: 404 } as unknown as Error, 'kill removed the container');
  });
}
