/**
 * The agent child before and after its session, as a real process: it boots idle with its MCP
 * servers up and no user's settings; one of its stdio MCP servers dying while it is idle makes it
 * exit (its sandbox must not be handed out with a tool missing), while a configured agent keeps
 * its session and only that server's tools fail. The sandbox's own two servers run inside the
 * agent's process (nothing to die on their own).
 */
import t from 'tap';
import { join } from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { AgentProcess } from '../../core/index.js';
import { DIST, waitFor } from '../helpers/chat.js';
import { tempDir } from '../helpers/app.js';

const FAKE = join(DIST, 'test', 'fakes', 'mcp-server.js');

/** The pids of a process's children. */
function children(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number),
  );
}

function agent(t: { teardown(fn: () => unknown): void }, servers: unknown[] | null) {
  const logs: string[] = [];
  const proc = new AgentProcess({
    command: process.execPath,
    args: [join(DIST, 'agent', 'main.js')],
    env: {
      PATH: process.env.PATH ?? '',
      AGENT_LOG_LEVEL: 'warn',
      ...(servers ? { AGENT_MCP_SERVERS: JSON.stringify(servers) } : {}),
    },
    readyTimeoutMs: 60_000,
    cancelGraceMs: 1000,
    exitedError: { code: 'ERR_SANDBOX_CHILD_EXITED', message: 'gone' },
    log: () => undefined,
    onStderr: (d) => logs.push(d),
  });
  t.teardown(() => proc.stop());
  const exited = new Promise<number | null>((r) => proc.onExit((code) => r(code)));
  return { proc, exited, logs };
}

t.test('a stdio MCP server that dies while the agent is idle ends the agent', async (t) => {
  const { proc, exited, logs } = agent(t, [{ name: 'fake', command: process.execPath, args: [FAKE] }]);
  await proc.booted;
  t.notOk(proc.isConfigured, 'idle: no session settings yet');
  const [server] = children(proc.pid!);
  t.ok(server, 'its MCP server runs');
  process.kill(server, 'SIGKILL');
  t.equal(await exited, 3, 'the idle agent exits (code 3)');
  t.match(logs.join(''), /mcp server exited while idle/);
});

t.test('after configure, a dying MCP server leaves the session running', async (t) => {
  const { proc } = agent(t, [{ name: 'fake', command: process.execPath, args: [FAKE] }]);
  await proc.configure({ AGENT_MODEL_PROVIDER: 'demo' });
  await proc.ready;
  const [server] = children(proc.pid!);
  process.kill(server, 'SIGKILL');
  await waitFor(() => children(proc.pid!).length === 0, 'the server gone', 10_000);
  const events: unknown[] = [];
  const r = await proc.runTurn('t1', 'hello', (e) => events.push(e));
  t.equal(r.stop_reason, 'end_turn', 'the agent still answers');
  t.ok(proc.usable, 'and keeps running');
});

t.test('the sandbox servers run inside the agent process: one process, every tool', async (t) => {
  const { proc } = agent(t, null);
  await proc.configure({ AGENT_MODEL_PROVIDER: 'demo', AGENT_ATTACHMENTS_DIR: tempDir(t, 'airlock-agent-idle-') });
  await proc.ready;
  t.same(children(proc.pid!), [], 'no child process');
  const tools: string[] = [];
  const r = await proc.runTurn('t1', 'chart 1 2 3', (e) => {
    if (e.type === 'tool_end') tools.push(`${e.tool}:${e.ok}`);
  });
  t.equal(r.stop_reason, 'end_turn');
  t.same(tools, ['render_chart:true'], 'an extensions tool answered in-process');
  const refused: string[] = [];
  await proc.runTurn('t2', 'chart 3 5 8 and email the chart to ann@example.test', (e) => {
    if (e.type === 'tool_end') refused.push(`${e.tool}:${e.ok}:${e.ok ? '' : e.error}`);
  });
  t.match(
    refused[1],
    /^send_email:false:.*ERR_TOOL_NOT_CONNECTED/,
    'a workspace tool without a route says "connect your account"',
  );
});
