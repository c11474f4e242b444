/**
 * A malformed message at every sandbox-protocol boundary is refused with an ERR_PROTOCOL_* code
 * and a log line (without its payload), and the channel keeps working for the next good message:
 * daemon ← supervisor (control socket), supervisor ← daemon, supervisor ← agent child (the core
 * agent host the supervisor and the local runner use), agent child ← supervisor (the real
 * dist/agent/main.js), and both ends of the operator control socket (daemon ← CLI, CLI ← daemon).
 * Real unix sockets and real child processes; nothing of ours is stubbed.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { createConnection, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { AgentProcess, createLogger, type AgentEvent } from '../../core/index.js';
import { SandboxClient } from '../../daemon/runtime/sandbox-client.js';
import { Supervisor } from '../../supervisor/supervisor.js';
import {
  CONTROL_SOCKET_NAME,
  controlRequest,
  KillUserReplySchema,
  startControlApi,
} from '../../daemon/runtime/control-api.js';
import { logSink, tempDir } from '../helpers/app.js';
import { DIST, waitFor } from '../helpers/chat.js';

const PAYLOAD = 'payload-secret-9f3c1d';

/** The JSON log lines of `sink` that carry a protocol rejection. */
function rejections(lines: string[]): Record<string, unknown>[] {
  return lines.flatMap((l) => {
    try {
      const o = JSON.parse(l) as Record<string, unknown>;
      return typeof o.code === 'string' && o.code.startsWith('ERR_PROTOCOL_') ? [o] : [];
    } catch {
      return [];
    }
  });
}

/** A raw client: send lines, collect the lines that come back. */
async function rawClient(path: string): Promise<{ sock: Socket; lines: string[]; send(s: string): void }> {
  const sock = createConnection(path);
  await new Promise<void>((resolve, reject) => sock.once('connect', () => resolve()).once('error', reject));
  const lines: string[] = [];
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  return { sock, lines, send: (s) => sock.write(s) };
}

t.test('daemon reading the supervisor: bad lines refused and logged, good replies still matched', async (t) => {
  const dir = tempDir(t, 'airlock-proto-');
  const path = join(dir, 'control.sock');
  // A stand-in supervisor that answers each request with garbage first, then the real reply.
  const server = createServer((s) => {
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i < 0) return;
      const req = JSON.parse(buf.slice(0, i)) as { id: string };
      buf = buf.slice(i + 1);
      s.write(`{"type":"reply","id":"${req.id}","ok":"${PAYLOAD}"}\n`);
      s.write(`not json ${PAYLOAD}\n`);
      s.write(`{"type":"event","turn_id":"t1","event":{"type":"text_delta","text":42}}\n`);
      s.write(JSON.stringify({ type: 'reply', id: req.id, ok: true, data: { state: 'hello' } }) + '\n');
    });
  });
  await new Promise<void>((r) => server.listen(path, r));
  t.teardown(() => server.close());
  const sink = logSink();
  const client = await SandboxClient.connect(path, 2000, createLogger({ level: 'info', destination: sink.stream }));
  t.teardown(() => client.close());
  const events: AgentEvent[] = [];
  client.watchTurn('t1', { onEvent: (e) => events.push(e), onEnd: () => undefined });
  const data = await client.request({ type: 'ping' });
  t.same(data, { state: 'hello' }, 'the good reply after the bad lines resolves the request');
  t.equal(client.rejected, 3);
  t.same(events, [], 'a malformed event never reaches the turn');
  const logged = rejections(sink.lines);
  t.same(
    logged.map((l) => l.code),
    ['ERR_PROTOCOL_BAD_MESSAGE', 'ERR_PROTOCOL_BAD_JSON', 'ERR_PROTOCOL_BAD_MESSAGE'],
  );
  t.ok(logged.every((l) => l.channel === 'sandbox-control'));
  t.notMatch(sink.text(), PAYLOAD, 'the payload is not logged');
  // ping() also checks the reply's data: { state: 'hello' } alone is not a supervisor status.
  await t.rejects(client.ping(2000), { code: 'ERR_PROTOCOL_BAD_MESSAGE' });
  t.equal(client.rejected, 7, 'three more bad lines and the bad status');
  t.match(rejections(sink.lines).pop(), { msg: 'sandbox sent a bad status', channel: 'sandbox-control' });
});

t.test('daemon reading the supervisor: an error reply takes its status from the catalogue', async (t) => {
  const dir = tempDir(t, 'airlock-proto-');
  const path = join(dir, 'control.sock');
  // A stand-in supervisor that fails each `cancel` with the code its turn_id names.
  const server = createServer((s) => {
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const req = JSON.parse(buf.slice(0, i)) as { id: string; turn_id: string };
        buf = buf.slice(i + 1);
        s.write(
          JSON.stringify({ type: 'reply', id: req.id, ok: false, error: { code: req.turn_id, message: 'refused' } }) +
            '\n',
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(path, r));
  t.teardown(() => server.close());
  const client = await SandboxClient.connect(
    path,
    2000,
    createLogger({ level: 'warn', destination: logSink().stream }),
  );
  t.teardown(() => client.close());
  const failWith = (code: string) => client.request({ type: 'cancel', turn_id: code });
  await t.rejects(failWith('ERR_SESSION_BUSY'), { code: 'ERR_SESSION_BUSY', status: 409 });
  await t.rejects(failWith('ERR_SESSION_NOT_FOUND'), { code: 'ERR_SESSION_NOT_FOUND', status: 404 });
  await t.rejects(failWith('ERR_SANDBOX_TIMEOUT'), { code: 'ERR_SANDBOX_TIMEOUT', status: 504 });
  await t.rejects(
    failWith('A_NEWER_SUPERVISORS_CODE'),
    { code: 'A_NEWER_SUPERVISORS_CODE', status: 502 },
    'a code the catalogue does not know: 502',
  );
});

t.test('supervisor reading the daemon: coded error reply (when the id is readable) and a log line', async (t) => {
  const dir = tempDir(t, 'airlock-proto-');
  const logs: { level: string; msg: string; data?: Record<string, unknown> }[] = [];
  const sup = new Supervisor({
    controlSocket: join(dir, 'control.sock'),
    profilePath: join(dir, 'profile.json'),
    exitOnShutdown: false,
    log: (level, msg, data) => logs.push({ level, msg, data }),
  });
  await sup.listen();
  t.teardown(() => sup.shutdown());
  const c = await rawClient(join(dir, 'control.sock'));
  t.teardown(() => c.sock.destroy());
  c.send(`{"id":"p1","type":"prompt","turn_id":7,"prompt":"${PAYLOAD}"}\n`);
  c.send(`{"id":"p2","type":"format-disk"}\n`);
  c.send(`garbage ${PAYLOAD}\n`);
  c.send('{"id":"p3","type":"ping"}\n');
  await waitFor(() => c.lines.some((l) => l.includes('"p3"')), 'the ping reply', 5000);
  const msgs = c.lines.map((l) => JSON.parse(l) as Record<string, any>);
  const reply = (id: string) => msgs.find((m) => m.type === 'reply' && m.id === id);
  t.match(reply('p1'), { ok: false, error: { code: 'ERR_PROTOCOL_BAD_MESSAGE' } });
  t.match(reply('p2'), { ok: false, error: { code: 'ERR_PROTOCOL_BAD_MESSAGE' } });
  t.match(reply('p3'), { ok: true, data: { state: 'hello' } }, 'the connection still serves good requests');
  const bad = logs.filter((l) => l.msg === 'bad control line');
  t.same(
    bad.map((l) => l.data?.code),
    ['ERR_PROTOCOL_BAD_MESSAGE', 'ERR_PROTOCOL_BAD_MESSAGE', 'ERR_PROTOCOL_BAD_JSON'],
  );
  t.match(bad[0].data?.issues, [/turn_id/]);
  t.notMatch(JSON.stringify(logs) + c.lines.join(), PAYLOAD, 'the payload is neither logged nor echoed');
  t.ok(
    msgs.some((m) => m.type === 'log' && m.msg === 'bad control line'),
    'operators see the warning on the socket too',
  );
  const daemon = await SandboxClient.connect(join(dir, 'control.sock'), 2000);
  t.teardown(() => daemon.close());
  t.match(
    await daemon.ping(),
    { state: 'hello', session_id: null, child_restarts: 0 },
    "the real supervisor's status passes the daemon's check",
  );
});

t.test('supervisor reading the agent child (core agent host): bad stdout lines dropped and logged', async (t) => {
  const child = `
    const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
    process.stdout.write('hello from a debug print ${PAYLOAD}\\n');
    send({ type: 'ready' });
    let buf = '';
    process.stdin.on('data', (d) => {
      buf += d;
      const i = buf.indexOf('\\n');
      if (i < 0) return;
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      send({ type: 'event', turn_id: m.turn_id, event: { type: 'tool_start', call_id: 'c', tool: 'x', input: '${PAYLOAD}' } });
      send({ type: 'event', turn_id: m.turn_id, event: { type: 'text_delta', text: 'ok' } });
      send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'done-ish' });
      send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'end_turn' });
    });`;
  const logs: { level: string; msg: string; data?: Record<string, unknown> }[] = [];
  const proc = new AgentProcess({
    command: process.execPath,
    args: ['-e', child],
    env: { PATH: process.env.PATH ?? '' },
    readyTimeoutMs: 10_000,
    cancelGraceMs: 1000,
    exitedError: { code: 'ERR_SANDBOX_CHILD_EXITED', message: 'gone' },
    log: (level, msg, data) => logs.push({ level, msg, data }),
  });
  t.teardown(() => proc.stop());
  await proc.booted;
  const events: AgentEvent[] = [];
  const r = await proc.runTurn('t1', 'go', (e) => events.push(e));
  t.same(r, { stop_reason: 'end_turn' }, 'the malformed turn_end is ignored, the good one ends the turn');
  t.same(events, [{ type: 'text_delta', text: 'ok' }], 'only the well-formed event is relayed');
  const bad = logs.filter((l) => l.msg === 'agent child wrote a bad line');
  t.same(
    bad.map((l) => l.data?.code),
    ['ERR_PROTOCOL_BAD_JSON', 'ERR_PROTOCOL_BAD_MESSAGE', 'ERR_PROTOCOL_BAD_MESSAGE'],
  );
  t.ok(bad.every((l) => l.level === 'warn' && l.data?.channel === 'agent-stdout'));
  t.notMatch(JSON.stringify(logs), PAYLOAD);
});

t.test(
  'agent child reading the supervisor: bad stdin lines ignored with a log line, the next prompt answered',
  async (t) => {
    const proc = spawn(process.execPath, [join(DIST, 'agent', 'main.js')], {
      env: { PATH: process.env.PATH ?? '', AGENT_MODEL_PROVIDER: 'demo', AGENT_MCP_SERVERS: '[]' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    t.teardown(() => proc.kill('SIGKILL'));
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await waitFor(() => out.includes('"ready"'), 'the agent ready line', 60_000);
    proc.stdin.write(`{"type":"configure","env":{}}\n`);
    await waitFor(() => out.includes('"configured"'), 'the agent configured line', 30_000);
    proc.stdin.write(`not json ${PAYLOAD}\n`);
    proc.stdin.write(`{"type":"prompt","turn_id":"t1"}\n`);
    proc.stdin.write(`{"type":"prompt","turn_id":"t2","prompt":"hello"}\n`);
    await waitFor(() => out.includes('"turn_end"'), 'the turn end', 30_000);
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>);
    const ends = lines.filter((m) => m.type === 'turn_end');
    t.same(
      ends.map((m) => m.turn_id),
      ['t2'],
      'only the well-formed prompt ran',
    );
    t.equal(ends[0].stop_reason, 'end_turn');
    const logged = rejections(err.split('\n'));
    t.same(
      logged.map((l) => l.code),
      ['ERR_PROTOCOL_BAD_JSON', 'ERR_PROTOCOL_BAD_MESSAGE'],
    );
    t.ok(logged.every((l) => l.channel === 'agent-stdin'));
    t.notMatch(err, PAYLOAD);
  },
);

t.test('operator control socket: the daemon refuses a bad request, the CLI refuses a bad reply', async (t) => {
  const dir = tempDir(t, 'airlock-proto-');
  const sink = logSink();
  const log = createLogger({ level: 'info', destination: sink.stream });
  let handled = 0;
  const api = await startControlApi(
    dir,
    async (req) => {
      handled++;
      return req.cmd === 'kill-user' ? { userId: req.userId, killed: 'two' } : [];
    },
    log,
  );
  t.teardown(() => api.close());

  // Daemon side: a request that is not JSON, and one with a cmd that does not exist.
  for (const line of [`rm -rf ${PAYLOAD}\n`, `{"cmd":"shutdown-host","id":"${PAYLOAD}"}\n`]) {
    const c = await rawClient(join(dir, CONTROL_SOCKET_NAME));
    c.send(line);
    await waitFor(() => c.lines.length > 0, 'the error reply', 5000);
    c.sock.destroy();
    t.match(JSON.parse(c.lines[0]), { ok: false, error: { code: /^ERR_PROTOCOL_BAD_(JSON|MESSAGE)$/, status: 400 } });
  }
  t.equal(handled, 0, 'the handler never saw the bad requests');
  t.same(
    rejections(sink.lines).map((l) => l.code),
    ['ERR_PROTOCOL_BAD_JSON', 'ERR_PROTOCOL_BAD_MESSAGE'],
  );
  t.same((await controlRequest(dir, { cmd: 'ls' }, log)) as unknown, [], 'a good request still works');

  // CLI side: a reply whose data does not match the command's schema.
  await t.rejects(controlRequest(dir, { cmd: 'kill-user', userId: 3 }, log, KillUserReplySchema), {
    code: 'ERR_PROTOCOL_BAD_MESSAGE',
  });

  // CLI side: a daemon that answers garbage.
  const fake = tempDir(t, 'airlock-proto-');
  const server = createServer((s) => s.end(`{"ok":"maybe","data":"${PAYLOAD}"}\n`));
  await new Promise<void>((r) => server.listen(join(fake, CONTROL_SOCKET_NAME), r));
  t.teardown(() => server.close());
  await t.rejects(controlRequest(fake, { cmd: 'ls' }, log), { code: 'ERR_PROTOCOL_BAD_MESSAGE' });
  const cliSide = rejections(sink.lines).filter((l) => l.msg === 'bad control api reply');
  t.equal(cliSide.length, 2, 'both bad replies are logged on the CLI side');
  t.notMatch(sink.text(), PAYLOAD);
});
