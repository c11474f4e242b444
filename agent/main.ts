/**
 * The agent child (runs as uid 1001 in the sandbox). It boots idle: starts its MCP servers,
 * answers `ready`, and waits for `configure`, which carries the session's settings (the env
 * docs/chat.md lists, allow-listed by the supervisor) — so a pool member's agent is up before a
 * user claims it. Speaks ChildInbound/ChildOutbound NDJSON on stdin/stdout; logs go to
 * stderr. The conversation is the service's: a prompt names the turn it continues and may bring
 * the stored transcript (Agent.adopt); the turn's items go back with turn_end. One turn at a time: a
 * prompt while a turn runs is answered with turn_end error ERR_SESSION_BUSY. Each stdin line
 * is checked against ChildInboundSchema; a bad one is logged (code and failing fields, never
 * its text) and ignored.
 */
import { startupSnapshot } from 'node:v8';
import { ChildInboundSchema, type ChildInbound, type ChildOutbound } from '../core/sandbox-protocol.js';
import { LineWriter, protocolLogFields, readMessages } from '../core/ndjson.js';
import { createLogger } from '../core/logger.js';
import { isAppError } from '../core/errors.js';
import { importFromSnapshotProcess } from '../core/runtime-import.js';
import { rearmTimersAfterSnapshot, settleTimersBeforeSnapshot } from '../core/snapshot-timers.js';
import { parseMcpServers, readAgentSettings, toolEnvOf } from './env.js';
import { Agent } from './loop.js';
import { ToolHost } from './mcp.js';
import { RemoteConnectors } from './connectors.js';
import { createModel } from './models/index.js';
import { turnDeadline } from './turn-deadline.js';
import { readToolsEnv } from '../tools/env.js';
import { uploadsDirOf } from '../tools/read-file-table.js';

/** Made at start, not at load: a startup snapshot loads this module when the image is built. */
let log: ReturnType<typeof createLogger>;
/** stdout is a pipe (writes are synchronous on Linux); the lines of one tick leave in one write. */
let out: LineWriter<ChildOutbound>;

function send(m: ChildOutbound): void {
  out.write(m);
}

/** Exit code of an idle agent whose MCP server died: the supervisor then retires its sandbox. */
const EXIT_IDLE_SERVER_GONE = 3;

/** The agent's state across messages: the configured agent and the running turn. */
interface AgentState {
  agent?: Agent;
  turnTimeoutMs: number;
  configuring: boolean;
  current?: { turnId: string; ac: AbortController };
}

/** A `prompt`: run the turn (one at a time) and send its events and its end. */
function startTurn(st: AgentState, m: Extract<ChildInbound, { type: 'prompt' }>): void {
  const agent = st.agent;
  if (!agent) {
    send({
      type: 'turn_end',
      turn_id: m.turn_id,
      stop_reason: 'error',
      error: { code: 'ERR_SANDBOX_NOT_STARTED', message: 'the agent has no session yet' },
    });
    return;
  }
  if (st.current) {
    send({
      type: 'turn_end',
      turn_id: m.turn_id,
      stop_reason: 'error',
      error: { code: 'ERR_SESSION_BUSY', message: 'a turn is already running' },
    });
    return;
  }
  if (!agent.adopt(m)) {
    // The daemon sends it again with the stored conversation (docs/chat.md).
    send({
      type: 'turn_end',
      turn_id: m.turn_id,
      stop_reason: 'error',
      error: { code: 'ERR_AGENT_CONTEXT_STALE', message: 'the agent does not hold this conversation' },
    });
    return;
  }
  const turn = { turnId: m.turn_id, ac: new AbortController() };
  st.current = turn;
  const t0 = performance.now();
  const deadline = turnDeadline(turn.ac, st.turnTimeoutMs);
  void agent
    .runTurn(m.turn_id, m.prompt, (event) => send({ type: 'event', turn_id: turn.turnId, event }), turn.ac.signal)
    .then(deadline.outcome)
    .then((r) => {
      st.current = undefined;
      send({
        type: 'turn_end',
        turn_id: turn.turnId,
        stop_reason: r.stop_reason,
        ...(r.error ? { error: r.error } : {}),
        items: r.items,
        ...(r.usage ? { usage: r.usage } : {}),
      });
      // Debug, and after the end: the daemon logs each turn's end ('turn done'), and a line
      // per turn here cost the agent, the supervisor (which relays it) and the engine's log
      // ~0.3 ms of CPU.
      log.debug(
        { turnId: turn.turnId, stopReason: r.stop_reason, code: r.error?.code, ms: Math.round(performance.now() - t0) },
        'turn ended',
      );
    });
}

async function main(): Promise<void> {
  log = createLogger({ level: process.env.AGENT_LOG_LEVEL ?? 'info', destination: process.stderr, name: 'agent' });
  out = new LineWriter<ChildOutbound>(process.stdout);
  // A process.exit() in the tick of a send still sends it.
  process.on('exit', () => out.flush());
  // Boot: only what needs no user (the MCP servers, started with the env this process got).
  const problems: string[] = [];
  const servers = parseMcpServers(process.env, problems);
  if (problems.length) {
    log.fatal({ problems }, 'bad agent settings');
    process.exit(2);
  }
  const tools = await ToolHost.connect(servers, toolEnvOf(process.env), log);
  const st: AgentState = { turnTimeoutMs: 0, configuring: false };
  tools.onServerGone((server) => {
    if (st.agent) {
      log.error({ server }, 'mcp server exited; its tools fail from now on');
      return;
    }
    // Idle (a pool member): it must not be handed out with a tool missing.
    log.error({ server }, 'mcp server exited while idle; the agent stops');
    process.exit(EXIT_IDLE_SERVER_GONE);
  });

  /** The session's settings, handed over once (`configure`): model, tools, the servers' env. */
  const configure = async (env: Record<string, string>, cwd: string | undefined): Promise<void> => {
    const settings = readAgentSettings({ ...process.env, ...env });
    // The log level is a session setting too (the idle agent logs at its start level until now).
    if (
      env.AGENT_LOG_LEVEL &&
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(env.AGENT_LOG_LEVEL)
    )
      log.level = env.AGENT_LOG_LEVEL;
    if (cwd !== undefined) process.chdir(cwd);
    await tools.configure(settings.allowedTools, settings.toolEnv, cwd);
    tools.setRemote(RemoteConnectors.fromEnv({ ...process.env, ...env }, log));
    st.agent = new Agent({
      model: createModel(settings),
      tools,
      system: settings.systemPrompt,
      maxSteps: settings.maxSteps,
      toolTimeoutMs: settings.toolTimeoutMs,
      contextTokens: settings.contextTokens,
      // A model that takes image input gets the uploads a message attaches (agent/images.ts).
      ...(settings.modelImages ? { uploadsDir: uploadsDirOf(readToolsEnv(settings.toolEnv)) } : {}),
    });
    st.turnTimeoutMs = settings.turnTimeoutMs;
    log.info({ provider: settings.provider, model: settings.model, tools: tools.defs().length }, 'agent configured');
  };

  readMessages(process.stdin, {
    schema: ChildInboundSchema,
    onReject: (err) => log.warn(protocolLogFields(err, 'agent-stdin'), 'bad line from the supervisor ignored'),
    onMessage: (m) => {
      if (m.type === 'configure') {
        if (st.configuring) {
          send({
            type: 'configured',
            error: { code: 'ERR_SANDBOX_ALREADY_STARTED', message: 'the agent is already configured' },
          });
          return;
        }
        st.configuring = true;
        void configure(m.env, m.cwd).then(
          () => send({ type: 'configured' }),
          (err: unknown) => {
            const code = isAppError(err) ? err.code : 'ERR_AGENT_INTERNAL';
            log.error({ code }, 'agent could not be configured');
            send({
              type: 'configured',
              error: { code, message: isAppError(err) ? err.message : 'the agent could not be configured' },
            });
          },
        );
      } else if (m.type === 'prompt') {
        startTurn(st, m);
      } else if (m.type === 'cancel') {
        if (st.current && st.current.turnId === m.turn_id) {
          log.info({ turnId: m.turn_id }, 'turn cancel requested');
          st.current.ac.abort(new Error('cancelled'));
        }
      }
    },
  });
  process.stdin.on('end', () => {
    st.current?.ac.abort(new Error('stdin closed'));
    void tools.close().finally(() => process.exit(0));
  });
  send({ type: 'ready' });
  log.info({ servers: servers.length, uptime_ms: Math.round(performance.now()) }, 'agent ready (idle)');
}

function start(): void {
  main().catch((err: unknown) => {
    if (log) log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'agent failed');
    else process.stderr.write(`agent failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

/**
 * While the snapshot is built: one idle boot of the built-in MCP servers (connect, list tools),
 * a configure and a text-only demo turn, then close; and one parse of each message kind. No env,
 * no output, no file touched. What stays in the
 * snapshot is what such a boot leaves in shared module state: zod's compiled fast paths of the
 * MCP and sandbox protocol schemas and the tools' JSON schemas, which each agent would otherwise
 * build again at its start. Nothing of a session exists yet to be frozen into the blob.
 */
async function warmUp(): Promise<void> {
  const quiet = createLogger({ level: 'silent', destination: process.stderr, name: 'agent' });
  const tools = await ToolHost.connect(parseMcpServers({}, []), {}, quiet);
  // A configure and a text-only turn of the demo model (no tool runs, nothing touches a file).
  const settings = readAgentSettings({ AGENT_MODEL_PROVIDER: 'demo' });
  await tools.configure(settings.allowedTools, settings.toolEnv, undefined);
  const agent = new Agent({
    model: createModel(settings),
    tools,
    system: settings.systemPrompt,
    maxSteps: 1,
    toolTimeoutMs: settings.toolTimeoutMs,
    contextTokens: settings.contextTokens,
  });
  await agent.runTurn('t', 'hello', () => undefined, new AbortController().signal);
  await tools.close();
  for (const m of [
    { type: 'configure', env: {} },
    { type: 'prompt', turn_id: 't', prompt: '' },
    { type: 'cancel', turn_id: 't' },
  ])
    ChildInboundSchema.safeParse(m);
  // Last: the demo turn cleared timers; one that fires leaves Node's timer state sound in the blob.
  await settleTimersBeforeSnapshot();
}

// In the image the agent starts from a V8 startup snapshot of its bundle, taken after every module
// has loaded (docs/runtime.md, "Cold start, step by step"): there, this line runs at build time
// and `start` runs in each process made from the snapshot. Anywhere else it starts at once.
if (!startupSnapshot.isBuildingSnapshot()) start();
else {
  startupSnapshot.setDeserializeMainFunction(() => {
    // Before anything sets a timer: the warm-up left Node's timer state stale (snapshot-timers.ts).
    rearmTimersAfterSnapshot();
    importFromSnapshotProcess();
    start();
  });
  void warmUp();
}
