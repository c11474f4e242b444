import { join } from 'node:path';
import { readFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { atRestEncryptor, type Logger, type Metrics, type TurnRunner } from '../../core/index.js';
import { chatModelEnv, LocalTurnRunner } from '../../daemon/dev/local-runner.js';
import * as openaiModel from '../../emulator/model-openai.js';
import * as anthropicModel from '../../emulator/model-anthropic.js';
import type { ModelServer, ModelServerOptions } from '../../emulator/model-script.js';
import { addUser, startTestApp, tempDir, type TestApp, type TestAppOptions } from './app.js';
import { ndjsonObjects, type Client } from './client.js';

/** dist/ of this build. */
export const DIST = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const FAKE_MCP = join(DIST, 'test', 'fakes', 'mcp-server.js');
/** What the child holds instead of a model key (the proxy would swap it for the real one). */
export const MODEL_PLACEHOLDER = 'placeholder-model-key-0123456789';

export type ClosableRunner = TurnRunner & {
  close(): Promise<void>;
  pidOf?(sessionId: string): number | undefined;
  spawned?: number;
};

/**
 * Builds the TurnRunner under test from the child env the supervisor would give the agent.
 * The default is the local development runner (no isolation); the Docker session manager
 * plugs in here when the runtime branch is merged.
 */
export type RunnerFactory = (childEnv: Record<string, string>, log: Logger) => Promise<ClosableRunner>;

export const localRunnerFactory: RunnerFactory = async (env, log) =>
  new LocalTurnRunner({ env, log, cancelGraceMs: 5000, readyTimeoutMs: 150_000 });

export interface ChatHarness {
  app: TestApp;
  model: ModelServer;
  runner: ClosableRunner;
  /** File the fake MCP server appends one JSON line per call event to. */
  mcpLog: string;
  mcpEvents(): { ev: string; tool: string; args?: any; at: number; pid: number }[];
  login(username: string): Promise<Client>;
}

export interface ChatHarnessOptions extends ModelServerOptions {
  provider?: 'openai' | 'anthropic';
  /** Extra child env (AGENT_MODEL_TIMEOUT_S, AGENT_TOOLS …). */
  childEnv?: Record<string, string>;
  /** Replace the default MCP servers list (JSON-able). */
  mcpServers?: unknown[];
  runnerFactory?: RunnerFactory;
  /** Options for the web app (e.g. its database). */
  app?: Omit<TestAppOptions, 'services'>;
  /**
   * A model per chat (docs/chat.md): the app's default model is the scripted server (AIRLOCK_MODEL_*),
   * and the local runner starts each chat's child with the chat's model (chat_models), replacing it
   * when the chat switches. Only with the default runner.
   */
  chatModels?: boolean;
  /** The web app's metrics (GET /metrics serves them). */
  metrics?: Metrics;
}

export async function startChatHarness(
  t: { teardown(fn: () => unknown): void },
  opts: ChatHarnessOptions = {},
): Promise<ChatHarness> {
  const provider = opts.provider ?? 'openai';
  const model = await (provider === 'anthropic' ? anthropicModel : openaiModel).start({
    apiKey: MODEL_PLACEHOLDER,
    ...opts,
  });
  t.teardown(() => model.close());
  const dir = tempDir(t, 'airlock-chat-');
  const mcpLog = join(dir, 'mcp.log');
  const childEnv: Record<string, string> = {
    AGENT_MODEL_PROVIDER: provider,
    AGENT_MODEL: provider === 'anthropic' ? 'claude-scripted' : 'gpt-scripted',
    AGENT_MODEL_BASE_URL: model.url,
    AGENT_MODEL_API_KEY: MODEL_PLACEHOLDER,
    AGENT_MAX_STEPS: '6',
    AGENT_MODEL_TIMEOUT_S: '5',
    AGENT_MCP_SERVERS: JSON.stringify(
      opts.mcpServers ?? [{ name: 'fake', command: process.execPath, args: [FAKE_MCP], env: { FAKE_MCP_LOG: mcpLog } }],
    ),
    MAIL_BASE_URL: 'http://127.0.0.1:9/mail',
    MAIL_API_KEY: 'placeholder-mail-key',
    ...(opts.childEnv ?? {}),
  };
  // The web app runs first so the runner can log into its sink.
  const holder: { runner?: ClosableRunner } = {};
  const modelEnv: Record<string, string> = opts.chatModels
    ? {
        AIRLOCK_MODEL_PROVIDER: provider,
        AIRLOCK_MODEL: childEnv.AGENT_MODEL,
        AIRLOCK_MODEL_BASE_URL: model.url,
        AIRLOCK_MODEL_API_KEY: MODEL_PLACEHOLDER,
      }
    : {};
  const app = await startTestApp(t, {
    ...opts.app,
    env: { ...modelEnv, ...opts.app?.env },
    services: {
      ...(opts.metrics ? { metrics: opts.metrics } : {}),
      chat: {
        runner: {
          runTurn: (req: Parameters<TurnRunner['runTurn']>[0]) => holder.runner!.runTurn(req),
        },
      },
    },
  });
  const runner = opts.chatModels
    ? new LocalTurnRunner({
        env: childEnv,
        log: app.log.child({ area: 'runner' }),
        cancelGraceMs: 5000,
        readyTimeoutMs: 150_000,
        modelEnv: chatModelEnv(app.database.sql, atRestEncryptor(app.config), app.config),
      })
    : await (opts.runnerFactory ?? localRunnerFactory)(childEnv, app.log.child({ area: 'runner' }));
  holder.runner = runner;
  t.teardown(() => runner.close());
  const users = new Set<string>();
  return {
    app,
    model,
    runner,
    mcpLog,
    mcpEvents: () =>
      existsSync(mcpLog)
        ? readFileSync(mcpLog, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : [],
    async login(username) {
      if (!users.has(username)) {
        await addUser(app.database, username, `${username}-password`);
        users.add(username);
      }
      const c = app.client();
      const r = await c.login(username, `${username}-password`);
      if (r.status !== 200) throw new Error(`login ${username}: ${r.status}`);
      return c;
    },
  };
}

export interface StreamedTurn {
  status: number;
  headers: Headers;
  /** Parsed NDJSON lines (for a non-200: the error body in `error`). */
  events: any[];
  error?: any;
  sessionId?: string;
}

/**
 * POST /api/chat/messages and read the NDJSON stream line by line. `onEvent` sees each event
 * as it arrives; returning 'abort' drops the connection (a client going away).
 */
export async function streamTurn(
  c: Client,
  body: Record<string, unknown>,
  onEvent?: (e: any, all: any[], sessionId: string | undefined) => 'abort' | void | Promise<'abort' | void>,
): Promise<StreamedTurn> {
  const ac = new AbortController();
  const headers: Record<string, string> = { 'content-type': 'application/json', cookie: c.cookieHeader() };
  if (c.csrf) headers['x-csrf-token'] = c.csrf;
  const res = await fetch(c.base + '/api/chat/messages', {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: ac.signal,
  });
  if (res.status !== 200) return { status: res.status, headers: res.headers, events: [], error: await res.json() };
  const events: any[] = [];
  try {
    for await (const e of ndjsonObjects(res.body!.getReader())) {
      events.push(e);
      if ((await onEvent?.(e, events, res.headers.get('x-chat-session-id') ?? undefined)) === 'abort') {
        ac.abort();
        return {
          status: 200,
          headers: res.headers,
          events,
          sessionId: res.headers.get('x-chat-session-id') ?? undefined,
        };
      }
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  }
  return { status: 200, headers: res.headers, events, sessionId: res.headers.get('x-chat-session-id') ?? undefined };
}

/** The one poll-until-condition helper (test/helpers/wait.ts), here too for the chat tests that import it from here. */
export { waitFor } from './wait.js';

/** The event types in order, with text_delta runs collapsed to one. */
export function shape(events: any[]): string[] {
  const out: string[] = [];
  for (const e of events) if (!(e.type === 'text_delta' && out[out.length - 1] === 'text_delta')) out.push(e.type);
  return out;
}
