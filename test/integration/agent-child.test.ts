import t from 'tap';
import { join } from 'node:path';
import { readFileSync, existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createLogger, type AgentEvent } from '../../core/index.js';
import { LocalTurnRunner } from '../../daemon/dev/local-runner.js';
import { DIST, waitFor } from '../helpers/chat.js';
import { logSink, tempDir } from '../helpers/app.js';

/** The agent child through the TurnRunner seam (no HTTP): demo model plans, allow-list, cancel. */

const WORKSPACE = join(DIST, 'test', 'fakes', 'mcp-workspace.js');
const FAKE = join(DIST, 'test', 'fakes', 'mcp-server.js');

function harness(t: any, env: Record<string, string>) {
  const dir = tempDir(t, 'airlock-agent-');
  const logFile = join(dir, 'calls.log');
  const sink = logSink();
  const runner = new LocalTurnRunner({
    env: {
      AGENT_MODEL_PROVIDER: 'demo',
      AGENT_MCP_SERVERS: JSON.stringify([
        { name: 'ws', command: process.execPath, args: [WORKSPACE], env: { FAKE_MCP_LOG: logFile } },
      ]),
      ...env,
    },
    log: createLogger({ level: 'debug', destination: sink.stream }),
    readyTimeoutMs: 150_000,
  });
  t.teardown(() => runner.close());
  const calls = () =>
    existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  const turn = async (sessionId: string, prompt: string, signal = new AbortController().signal) => {
    const events: AgentEvent[] = [];
    const result = await runner.runTurn({
      userId: 1,
      sessionId,
      turnId: randomUUID(),
      prompt,
      signal,
      onEvent: (e) => events.push(e),
    });
    return { events, result, text: events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('') };
  };
  return { runner, calls, turn, sink };
}

t.test('demo model: chart numbers and email the chart, spreadsheet plan, render_chart, fallback', async (t) => {
  const h = harness(t, {});
  const a = await h.turn('s1', 'chart 3 5 8 and email the chart to a@b.c');
  t.equal(a.result.stop_reason, 'end_turn');
  const tools = a.events.filter((e) => e.type === 'tool_start').map((e: any) => e.tool);
  t.same(tools, ['rasterize_chart', 'send_email']);
  const [raster, mail] = h.calls();
  t.same(raster.args.datasets[0].data, [3, 5, 8]);
  const file = (a.events.find((e: any) => e.type === 'tool_end' && e.tool === 'rasterize_chart') as any).output
    .chart_attachment;
  t.match(file, /^[0-9a-f-]{36}\.png$/);
  t.same(mail.args.attachments, [file], 'send_email got the file name unchanged');
  t.same(mail.args.to, ['a@b.c']);
  t.match(a.text, /a@b\.c/);

  const b = await h.turn('s1', 'chart the sample spreadsheet and email it to x@y.z');
  t.same(
    b.events.filter((e) => e.type === 'tool_start').map((e: any) => e.tool),
    ['search_spreadsheets', 'fetch_sheet', 'rasterize_chart', 'send_email'],
  );
  const c4 = h.calls().slice(2);
  t.equal(c4[1].args.spreadsheet_id, 'sheet-sample-1');
  t.same(c4[2].args.datasets[0].data, [3, 5, 8]);
  t.same(c4[2].args.labels, ['Jan', 'Feb', 'Mar']);
  t.same(c4[3].args.to, ['x@y.z']);
  t.match(c4[3].args.attachments[0], /\.png$/);

  const c = await h.turn('s1', 'chart 1 2 3');
  t.same(
    c.events.filter((e) => e.type === 'tool_start').map((e: any) => e.tool),
    ['render_chart'],
  );

  const d = await h.turn('s1', 'what is the weather?');
  t.equal(d.events.filter((e) => e.type === 'tool_start').length, 0);
  t.match(d.text, /demo model/);
  t.equal(h.runner.spawned, 1, 'one warm process for the whole session');
});

t.test('tools outside AGENT_TOOLS are not loaded', async (t) => {
  const h = harness(t, { AGENT_TOOLS: 'rasterize_chart,render_chart' });
  const a = await h.turn('s2', 'chart 3 5 8 and email the chart to a@b.c');
  t.same(
    a.events.filter((e) => e.type === 'tool_start').map((e: any) => e.tool),
    ['rasterize_chart'],
  );
  t.notOk(
    h.calls().some((c) => c.tool === 'send_email'),
    'send_email never ran',
  );
  t.match(a.text, /send_email tool .* not available/);
});

t.test('cancel stops waiting for the tool and ends the turn cancelled', async (t) => {
  const dir = tempDir(t, 'airlock-agent-');
  const logFile = join(dir, 'calls.log');
  // An OpenAI-shaped script is not needed: the fake server's `slow` tool, called by a model
  // that always asks for it, is enough. Use the scripted model server for that.
  const { start } = await import('../../emulator/model-openai.js');
  const model = await start({
    respond: () => ({ kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 30000 } }] }),
  });
  t.teardown(() => model.close());
  const runner = new LocalTurnRunner({
    env: {
      AGENT_MODEL_PROVIDER: 'openai',
      AGENT_MODEL: 'm',
      AGENT_MODEL_BASE_URL: model.url,
      AGENT_MCP_SERVERS: JSON.stringify([
        { name: 'f', command: process.execPath, args: [FAKE], env: { FAKE_MCP_LOG: logFile } },
      ]),
    },
    log: createLogger({ level: 'silent' }),
    readyTimeoutMs: 150_000,
  });
  t.teardown(() => runner.close());
  const ac = new AbortController();
  const events: AgentEvent[] = [];
  const p = runner.runTurn({
    userId: 1,
    sessionId: 's3',
    turnId: 't1',
    prompt: 'go slow',
    signal: ac.signal,
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'tool_start') ac.abort();
    },
  });
  const r = await p;
  t.equal(r.stop_reason, 'cancelled');
  t.match(events[events.length - 1], { type: 'tool_end', ok: false, error: 'cancelled' });
  await waitFor(
    () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('"cancelled"'),
    'the tool server to see the cancel',
  );
  t.ok(runner.pidOf('s3'), 'the warm process lives on');
  await t.rejects(
    Promise.all([
      runner.runTurn({
        userId: 1,
        sessionId: 's3',
        turnId: 't2',
        prompt: 'x',
        signal: new AbortController().signal,
        onEvent: () => undefined,
      }),
      runner.runTurn({
        userId: 1,
        sessionId: 's3',
        turnId: 't3',
        prompt: 'y',
        signal: new AbortController().signal,
        onEvent: () => undefined,
      }),
    ]),
    { code: 'ERR_SESSION_BUSY' },
  );
});

t.test('cancel during a stalled model stream aborts the request: cancelled, not a timeout', async (t) => {
  const { start } = await import('../../emulator/model-anthropic.js');
  const model = await start({
    script: [
      { kind: 'stall', text: 'thinking' },
      { kind: 'reply', text: 'after' },
    ],
  });
  t.teardown(() => model.close());
  const runner = new LocalTurnRunner({
    env: {
      AGENT_MODEL_PROVIDER: 'anthropic',
      AGENT_MODEL: 'm',
      AGENT_MODEL_BASE_URL: model.url,
      AGENT_MODEL_TIMEOUT_S: '120',
      AGENT_MCP_SERVERS: '[]',
    },
    log: createLogger({ level: 'silent' }),
    readyTimeoutMs: 150_000,
  });
  t.teardown(() => runner.close());
  const ac = new AbortController();
  const events: AgentEvent[] = [];
  const r = await runner.runTurn({
    userId: 1,
    sessionId: 's4',
    turnId: 't1',
    prompt: 'think hard',
    signal: ac.signal,
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'text_delta') ac.abort();
    },
  });
  t.equal(r.stop_reason, 'cancelled');
  t.same(events, [{ type: 'text_delta', text: 'thinking' }]);
  const next = await runner.runTurn({
    userId: 1,
    sessionId: 's4',
    turnId: 't2',
    prompt: 'again',
    signal: new AbortController().signal,
    onEvent: () => undefined,
  });
  t.equal(next.stop_reason, 'end_turn', 'the session goes on');
  // The stopped answer stays in the conversation, with what the user saw of it and a marker.
  t.same(
    model.requests[1].body.messages.map((m: any) => m.role),
    ['user', 'assistant', 'user'],
    'prompt, stopped answer, new prompt',
  );
  t.match(JSON.stringify(model.requests[1].body.messages[1].content), /thinking.*The user stopped this answer here/);
});
