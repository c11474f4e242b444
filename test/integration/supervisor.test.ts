/**
 * The supervisor on the host, without Docker: control protocol over a real unix socket, the
 * child's allow-listed environment, busy guard, child restart, rotation, shutdown.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { waitFor } from '../helpers/wait.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Supervisor } from '../../supervisor/supervisor.js';
import { IDLE_CHILD_CWD, idleChildLaunch } from '../../supervisor/idle-child.js';
import { launchAgent } from '../../core/agent-launch.js';
import { SandboxClient } from '../../daemon/runtime/sandbox-client.js';
import type { AgentEvent, SessionProfile, StopReason } from '../../core/sandbox-protocol.js';

// A child that reports its environment (spawn env plus the session's, from `configure`), can
// crash on request, and ignores "hang".
const CHILD = `
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
let configured;
send({ type: 'ready' });
rl.on('line', (l) => {
  const m = JSON.parse(l);
  if (m.type === 'configure') {
    configured = { env: m.env, cwd: m.cwd, spawnEnv: Object.keys(process.env), spawnCwd: process.cwd() };
    return send({ type: 'configured' });
  }
  if (m.type !== 'prompt') return;
  if (m.prompt === 'die') process.exit(3);
  if (m.prompt === 'hang') return;
  send({ type: 'event', turn_id: m.turn_id, event: { type: 'text_delta', text: JSON.stringify({ env: { ...process.env, ...configured.env }, configured, uid: process.getuid() }) } });
  send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'end_turn' });
});
`;

const dir = mkdtempSync(join(tmpdir(), 'airlock-sup-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const SECRET = 'real-token-value-0123456789';
const profile: SessionProfile = {
  version: 1,
  session_id: 's1',
  proxy: { host: '127.0.0.1', port: 0 },
  routes: [
    {
      name: 'mail',
      prefix: '/mail',
      allow: [{ method: 'POST', path: '/mail/v1/users/me/messages/send' }],
      upstream: 'http://127.0.0.1:9',
      placeholder_env: 'MAIL_API_KEY',
      token_ref: '${MAIL_ACCESS_TOKEN}',
      base_url_env: 'MAIL_BASE_URL',
    },
  ],
};
writeFileSync(join(dir, 'profile.json'), JSON.stringify(profile));
const uid = process.getuid!();
/** A supervisor over the files in `d`, its child running CHILD under our own uid. */
function supervisorOptions(d: string, exitOnShutdown: boolean) {
  return {
    controlSocket: join(d, 'control.sock'),
    profilePath: join(d, 'profile.json'),
    egressSocket: join(d, 'egress.sock'),
    childUid: uid,
    childGid: process.getgid!(),
    childCommand: [process.execPath, '-e', CHILD],
    childCwd: d,
    exitOnShutdown,
  };
}
const sup = new Supervisor(supervisorOptions(dir, false));
await sup.listen();
sup.prestart();
t.teardown(() => sup.shutdown());
const client = await SandboxClient.connect(join(dir, 'control.sock'));
t.teardown(() => client.close());

function turn(
  turnId: string,
  prompt: string,
): Promise<{ stop: StopReason; error?: { code: string }; events: AgentEvent[] }> {
  const events: AgentEvent[] = [];
  return new Promise((resolve, reject) => {
    client.watchTurn(turnId, {
      onEvent: (e) => events.push(e),
      onEnd: (stop, error) => resolve({ stop, error, events }),
    });
    client.request({ type: 'prompt', turn_id: turnId, prompt }).catch(reject);
  });
}

t.test('hello state, then start', async (t) => {
  t.match(await client.request({ type: 'ping' }), { state: 'hello', session_id: null });
  const warm = await client.request({ type: 'warm' });
  t.match(warm, { state: 'hello', agent_ready: true }, 'warm answers once the idle child is up');
  const idlePid = warm.child_pid;
  t.ok(idlePid, 'the child runs before any session');
  await t.rejects(client.request({ type: 'prompt', turn_id: 'x', prompt: 'p' }), { code: 'ERR_SANDBOX_NOT_STARTED' });
  const r = await client.request({
    type: 'start',
    spec: {
      session_id: 's1',
      user_id: 1,
      placeholders: { MAIL_API_KEY: 'placeholder-1', SHEETS_API_KEY: 'no-such-route' },
      agent_user_token: 'aut-1',
      agent_env: {
        AGENT_MODEL: 'demo',
        AIRLOCK_MODEL: 'demo',
        AGENT_MCP_SERVERS: '[]',
        SNEAKY: SECRET,
        MCP_INTERNAL_SECRET: 'x',
        MAIL_ACCESS_TOKEN: 'y',
        NODE_OPTIONS: '--inspect',
      },
    },
  });
  t.match(r, { state: 'started', session_id: 's1' });
  t.equal(r.child_pid, idlePid, 'start hands the session to the child already running (no new process)');
  t.notOk(process.env.MAIL_ACCESS_TOKEN, 'no real token in the supervisor env: the gateway on the host holds it');
  await t.resolves(
    client.request({ type: 'start', spec: { session_id: 's1', user_id: 1, placeholders: {}, agent_env: {} } }),
    'same session again is a no-op',
  );
  await t.rejects(
    client.request({ type: 'start', spec: { session_id: 's2', user_id: 1, placeholders: {}, agent_env: {} } }),
    { code: 'ERR_SANDBOX_ALREADY_STARTED' },
  );
});

t.test('child env is an allow-list', async (t) => {
  const r = await turn('t1', 'env');
  t.equal(r.stop, 'end_turn');
  const { env } = JSON.parse((r.events[0] as { text: string }).text) as { env: Record<string, string> };
  t.equal(env.MAIL_API_KEY, 'placeholder-1');
  t.match(env.MAIL_BASE_URL, /^http:\/\/127\.0\.0\.1:\d+\/mail$/);
  t.equal(env.AGENT_USER_TOKEN, 'aut-1');
  t.equal(env.AGENT_MODEL, 'demo', 'an agent setting passes');
  t.equal(env.HOME, '/home/agent');
  for (const k of [
    'MAIL_ACCESS_TOKEN',
    'SNEAKY',
    'MCP_INTERNAL_SECRET',
    'AIRLOCK_MODEL',
    'AGENT_MCP_SERVERS',
    'SHEETS_API_KEY',
  ])
    t.notOk(k in env, `${k} refused (not on the allow-list)`);
  t.not(env.NODE_OPTIONS, '--inspect', 'NODE_OPTIONS from the daemon refused');
  t.notOk(Object.values(env).includes(SECRET), 'no env value is the real token');
  const { configured } = JSON.parse((r.events[0] as { text: string }).text) as {
    configured: { spawnEnv: string[]; spawnCwd: string; cwd: string };
  };
  const spawnKeys = configured.spawnEnv.filter((k) => !k.startsWith('_TAPJS_') && k !== 'NODE_OPTIONS');
  // GLIBC_TUNABLES: the malloc settings of every sandbox process (SANDBOX_MALLOC_ENV), no secret.
  t.same(
    spawnKeys.sort(),
    ['GLIBC_TUNABLES', 'HOME', 'LANG', 'PATH'],
    'spawned (idle) with no session or user value in its env',
  );
  t.equal(
    configured.spawnCwd,
    '/',
    'the idle child starts outside the workspace (a claim binds the workspace over that folder)',
  );
  t.equal(configured.cwd, dir, 'configure moves it into the workspace');
  // tap hooks child_process.spawn in this test process and adds its own NODE_OPTIONS/_TAPJS_* to
  // every child; the container has no such hook, so those are left out of the comparison.
  const keys = Object.keys(env).filter(
    (k) => !k.startsWith('_TAPJS_') && !(k === 'NODE_OPTIONS' && env[k] === process.env.NODE_OPTIONS),
  );
  t.same(
    keys.sort(),
    [
      'AGENT_MODEL',
      'AGENT_USER_TOKEN',
      'AIRLOCK_SESSION_ID',
      'GLIBC_TUNABLES',
      'HOME',
      'LANG',
      'MAIL_API_KEY',
      'MAIL_BASE_URL',
      'PATH',
    ],
    'nothing else from the supervisor env',
  );
});

t.test('one turn at a time; a hung turn is cancelled', async (t) => {
  const hung = turn('t2', 'hang');
  await t.rejects(client.request({ type: 'prompt', turn_id: 't3', prompt: 'x' }), { code: 'ERR_SESSION_BUSY' });
  await client.request({ type: 'cancel', turn_id: 't2' });
  const r = await hung;
  t.equal(r.stop, 'cancelled', 'the supervisor ends a turn the child ignores');
});

t.test('a dying child ends the turn with an error and is restarted', async (t) => {
  const r = await turn('t4', 'die');
  t.equal(r.stop, 'error');
  t.equal(r.error?.code, 'ERR_SANDBOX_CHILD_EXITED');
  const again = await turn('t5', 'env');
  t.equal(again.stop, 'end_turn', 'the restarted child answers');
  t.ok(((await client.request({ type: 'ping' })).child_restarts as number) >= 1);
});

t.test('rotate-token is no request of the protocol any more (tokens never enter the sandbox)', async (t) => {
  await t.rejects(client.request({ type: 'rotate-token', tokens: { MAIL_ACCESS_TOKEN: 'rotated-value' } } as never), {
    code: /^ERR_PROTOCOL_/,
  });
  t.notOk(process.env.MAIL_ACCESS_TOKEN);
});

t.test('operator shell: the connection becomes a pipe to /bin/sh', async (t) => {
  const { createConnection } = await import('node:net');
  const sock = createConnection(join(dir, 'control.sock'));
  t.teardown(() => sock.destroy());
  let out = '';
  sock.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => sock.once('connect', r));
  sock.write(JSON.stringify({ id: 'sh1', type: 'shell' }) + '\n');
  await waitFor(() => out.includes('"sh1"'), 'the answer to the shell request');
  t.match(out, /"ok":true/);
  sock.write('echo "shell-uid=$(id -u)"; exit\n');
  await new Promise((r) => sock.once('close', r));
  t.match(out, new RegExp(`shell-uid=${uid}`), 'the shell runs as the child uid');
});

t.test('shutdown over the control socket stops the child and ends the supervisor process', async (t) => {
  // A supervisor of its own, in its own process, exiting on shutdown as in the container.
  const d = mkdtempSync(join(tmpdir(), 'airlock-sup-stop-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  writeFileSync(
    join(d, 'profile.json'),
    JSON.stringify({
      version: 1,
      session_id: 's9',
      proxy: { host: '127.0.0.1', port: 0 },
      routes: [],
    } satisfies SessionProfile),
  );
  const opts = supervisorOptions(d, true);
  const module = new URL('../../supervisor/supervisor.js', import.meta.url).href;
  const main = `import { Supervisor } from ${JSON.stringify(module)};
const sup = new Supervisor(JSON.parse(process.env.SUP_OPTS));
await sup.listen();
process.stdout.write('listening\\n');`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', main], {
    env: { PATH: process.env.PATH ?? '', SUP_OPTS: JSON.stringify(opts) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.once('exit', (code, signal) => r({ code, signal })),
  );
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (b: Buffer) => b.toString().includes('listening') && resolve());
    proc.once('exit', () => reject(new Error('the supervisor process exited before listening')));
  });
  const c = await SandboxClient.connect(opts.controlSocket);
  t.teardown(() => c.close());
  await c.request({ type: 'start', spec: { session_id: 's9', user_id: 1, placeholders: {}, agent_env: {} } });
  const childPid = (await c.request({ type: 'ping' })).child_pid as number;
  t.type(childPid, 'number', 'the child runs');
  t.doesNotThrow(() => process.kill(childPid, 0), 'the child process exists before shutdown');

  await c.request({ type: 'shutdown' });
  const guard = new Promise<'hang'>((r) => setTimeout(() => r('hang'), 20_000).unref());
  const end = await Promise.race([exited, guard]);
  t.not(end, 'hang', 'the supervisor process ended');
  t.same(end, { code: 0, signal: null }, 'it exited 0');
  t.throws(() => process.kill(childPid, 0), { code: 'ESRCH' }, 'the child process is gone');
  t.notOk(existsSync(opts.controlSocket), 'the control socket is removed');
  await new Promise<void>((r) => c.onClosed(r));
  t.ok(c.closed, 'the daemon side sees the connection closed');
});

t.test('an idle child that dies retires the sandbox: start is refused and the supervisor ends', async (t) => {
  const d = mkdtempSync(join(tmpdir(), 'airlock-sup-idle-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  writeFileSync(
    join(d, 'profile.json'),
    JSON.stringify({
      version: 1,
      session_id: 's8',
      proxy: { host: '127.0.0.1', port: 0 },
      routes: [],
    } satisfies SessionProfile),
  );
  const s = new Supervisor(supervisorOptions(d, false));
  await s.listen();
  t.teardown(() => s.shutdown());
  s.prestart();
  const c = await SandboxClient.connect(join(d, 'control.sock'));
  t.teardown(() => c.close());
  const pid = (await c.request({ type: 'warm' })).child_pid as number;
  const closed = new Promise<void>((r) => c.onClosed(r));
  process.kill(pid, 'SIGKILL');
  await closed;
  t.ok(c.closed, 'the control connection ends (in the container the supervisor exits: the daemon replaces the member)');
  t.notOk(existsSync(join(d, 'control.sock')), 'the control socket is gone');
  t.match(s.status(), { state: 'hello', session_id: null, agent_ready: false }, 'no session was ever bound');
});

// The container's entry point launches the idle child before it loads the supervisor
// (launchFirst in supervisor/boot.ts); the supervisor takes that process over, whatever it did meanwhile.
t.test('a child launched before the supervisor existed is taken over, not spawned again', async (t) => {
  const d = mkdtempSync(join(tmpdir(), 'airlock-sup-early-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  const o = supervisorOptions(d, false);
  const prestarted = launchAgent(
    idleChildLaunch({ command: o.childCommand, uid: o.childUid, gid: o.childGid, cwd: IDLE_CHILD_CWD }),
  );
  // Its `ready` line is written before anyone reads it: it waits, unread, in the stream's buffer
  // ('readable' takes it off the pipe without consuming it; the supervisor reads it from there).
  await new Promise((r) => prestarted.proc.stdout!.once('readable', r));
  const s = new Supervisor({ ...o, prestarted });
  await s.listen();
  t.teardown(() => s.shutdown());
  s.prestart();
  const c = await SandboxClient.connect(join(d, 'control.sock'));
  t.teardown(() => c.close());
  const warm = await c.request({ type: 'warm' });
  t.match(warm, { state: 'hello', agent_ready: true }, 'the launched child is up and idle');
  t.equal(warm.child_pid, prestarted.proc.pid, 'it is the process launched before the supervisor');
});

t.test('a child launched early that does not match the spawn is ended, and the right one spawned', async (t) => {
  const d = mkdtempSync(join(tmpdir(), 'airlock-sup-mismatch-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  const o = supervisorOptions(d, false);
  const prestarted = launchAgent(
    idleChildLaunch({ command: o.childCommand, uid: o.childUid, gid: o.childGid, cwd: tmpdir() }),
  );
  const ended = new Promise<number | null>((r) => prestarted.proc.once('exit', (code) => r(code)));
  const warnings: string[] = [];
  const s = new Supervisor({ ...o, prestarted, log: (level, msg) => void (level === 'warn' && warnings.push(msg)) });
  await s.listen();
  t.teardown(() => s.shutdown());
  s.prestart();
  const c = await SandboxClient.connect(join(d, 'control.sock'));
  t.teardown(() => c.close());
  const warm = await c.request({ type: 'warm' });
  t.not(warm.child_pid, prestarted.proc.pid, 'another process serves (the launch had another cwd)');
  t.equal(await ended, 0, 'the mismatched one exits (its stdin was closed)');
  t.match(warnings, [/does not match/], 'and the supervisor says why');
});

t.test('a child launched early that died before the supervisor existed retires the sandbox', async (t) => {
  const d = mkdtempSync(join(tmpdir(), 'airlock-sup-early-dead-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  const o = { ...supervisorOptions(d, false), childCommand: [process.execPath, '-e', 'process.exit(3)'] };
  const prestarted = launchAgent(
    idleChildLaunch({ command: o.childCommand, uid: o.childUid, gid: o.childGid, cwd: IDLE_CHILD_CWD }),
  );
  await new Promise((r) => prestarted.proc.once('exit', r));
  const warnings: { msg: string; data?: Record<string, unknown> }[] = [];
  const s = new Supervisor({
    ...o,
    prestarted,
    log: (level, msg, data) => void (level === 'warn' && warnings.push({ msg, data })),
  });
  await s.listen();
  t.teardown(() => s.shutdown());
  s.prestart();
  await waitFor(
    () => warnings.length > 0 && !existsSync(join(d, 'control.sock')),
    'the supervisor to see the exit and retire',
  );
  t.match(
    warnings,
    [{ msg: /exited while idle/, data: { code: 3 } }],
    'its exit reaches the supervisor (replayed), with its code',
  );
  t.match(s.status(), { state: 'hello', session_id: null, agent_ready: false }, 'no session can be bound to it');
  t.notOk(existsSync(join(d, 'control.sock')), 'the sandbox retires (control socket gone)');
});
