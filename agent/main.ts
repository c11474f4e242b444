/**
 * The agent child (runs as uid 1001 in the sandbox; the supervisor spawns it with the env
 * docs/chat.md lists). Speaks ChildInbound/ChildOutbound NDJSON on stdin/stdout; logs go to
 * stderr. The conversation stays in this warm process across turns. One turn at a time: a
 * prompt while a turn runs is answered with turn_end error ERR_SESSION_BUSY. Each stdin line
 * is checked against ChildInboundSchema; a bad one is logged (code and failing fields, never
 * its text) and ignored.
 */
import { ChildInboundSchema, type ChildOutbound } from '../core/sandbox-protocol.js';
import { protocolLogFields, readMessages, writeMessage } from '../core/ndjson.js';
import { createLogger } from '../core/logger.js';
import { readAgentSettings } from './env.js';
import { Agent } from './loop.js';
import { ToolHost } from './mcp.js';
import { createModel } from './models/index.js';

const log = createLogger({ level: process.env.AGENT_LOG_LEVEL ?? 'info', destination: process.stderr, name: 'agent' });

function send(m: ChildOutbound): void {
  // stdout is a pipe: writes are synchronous on Linux, so each line leaves at once.
  writeMessage<ChildOutbound>(process.stdout, m);
}

async function main(): Promise<void> {
  let settings;
  try {
    settings = readAgentSettings(process.env);
  } catch (err) {
    log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'bad agent settings');
    process.exit(2);
  }
  const tools = await ToolHost.connect(settings.mcpServers, settings.allowedTools, settings.toolEnv, log);
  const agent = new Agent({
    model: createModel(settings),
    tools,
    system: settings.systemPrompt,
    maxSteps: settings.maxSteps,
    toolTimeoutMs: settings.toolTimeoutMs,
  });
  let current: { turnId: string; ac: AbortController } | undefined;

  readMessages(process.stdin, {
    schema: ChildInboundSchema,
    onReject: (err) => log.warn(protocolLogFields(err, 'agent-stdin'), 'bad line from the supervisor ignored'),
    onMessage: (m) => {
      if (m.type === 'prompt') {
        if (current) {
          send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'error', error: { code: 'ERR_SESSION_BUSY', message: 'a turn is already running' } });
          return;
        }
        const turn = { turnId: m.turn_id, ac: new AbortController() };
        current = turn;
        const t0 = performance.now();
        void agent
          .runTurn(m.prompt, (event) => send({ type: 'event', turn_id: turn.turnId, event }), turn.ac.signal)
          .then((r) => {
            current = undefined;
            log.info({ turnId: turn.turnId, stopReason: r.stop_reason, code: r.error?.code, ms: Math.round(performance.now() - t0) }, 'turn ended');
            send({ type: 'turn_end', turn_id: turn.turnId, stop_reason: r.stop_reason, ...(r.error ? { error: r.error } : {}) });
          });
      } else if (m.type === 'cancel') {
        if (current && current.turnId === m.turn_id) {
          log.info({ turnId: m.turn_id }, 'turn cancel requested');
          current.ac.abort(new Error('cancelled'));
        }
      }
    },
  });
  process.stdin.on('end', () => {
    current?.ac.abort(new Error('stdin closed'));
    void tools.close().finally(() => process.exit(0));
  });
  send({ type: 'ready' });
  log.info({ provider: settings.provider, model: settings.model, tools: tools.defs().length }, 'agent ready');
}

void main().catch((err) => {
  log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'agent failed');
  process.exit(1);
});
