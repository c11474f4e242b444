import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { IN_PROCESS_SERVERS } from './in-process.js';
import type { Logger } from '../core/logger.js';
import { checkMessage, protocolLogFields } from '../core/ndjson.js';
import { CALL_ID_META, MCP_CONFIGURE_METHOD, McpToolResultSchema } from '../core/sandbox-protocol.js';
import { COMPILE_CACHE_ENV } from '../core/sandbox-env.js';
import { z } from 'zod';
import type { McpServerSpec } from './env.js';
import type { ToolDef } from './types.js';
import type { RemoteConnectors } from './connectors.js';

export interface ToolOutcome {
  ok: boolean;
  /** For the chat stream and history: structured content, else parsed JSON text, else the text. */
  output?: unknown;
  error?: string;
  /** For the model. */
  text: string;
}

interface Loaded {
  def: ToolDef;
  client: Client;
  server: string;
}

const MAX_TEXT_CHARS = 100_000;

/**
 * MCP stdio clients to the tool servers, started when the agent boots (before any session: a
 * pool member's servers are up before a user claims it). configure() then loads only the tools on
 * the allow-list (the user's agent policy: a forbidden tool is never offered to the model nor
 * callable) and hands each server the session's tool env over `airlock/configure`.
 * Each server gets the tool-related env the child holds, and nothing else (the SDK adds
 * its small default set: HOME, LOGNAME, PATH, SHELL, TERM, USER).
 */
/** How long one MCP server may take to start and list its tools before its tools are left out. */
const MCP_START_TIMEOUT_MS = 90_000;
/** How long a server may take to answer `airlock/configure`. */
const MCP_CONFIGURE_TIMEOUT_MS = 10_000;
const ConfigureResultSchema = z.object({}).loose();

/**
 * The SDK's client compiles a validator for every tool's output schema when the tools are listed,
 * that is at the agent's boot (cold start). This one compiles each on the tool's first call.
 */
class LazyOutputValidator implements jsonSchemaValidator {
  private ajv?: AjvJsonSchemaValidator;
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let fn: JsonSchemaValidator<T> | undefined;
    return (input) => (fn ??= (this.ajv ??= new AjvJsonSchemaValidator()).getValidator<T>(schema))(input);
  }
}

export class ToolHost {
  private readonly tools = new Map<string, Loaded>();
  /** Every tool the servers list, before the allow-list. */
  private readonly listed: Loaded[] = [];
  private readonly clients: Client[] = [];
  private closing = false;
  private remote: RemoteConnectors | null = null;
  private goneHandler?: (server: string) => void;

  private constructor(private readonly log: Logger) {}

  /** Start every server and list its tools; a server that fails is left out (logged). */
  static async connect(servers: McpServerSpec[], toolEnv: Record<string, string>, log: Logger): Promise<ToolHost> {
    const host = new ToolHost(log);
    const results = await Promise.all(
      servers.map(async (s) => {
        const client = new Client(
          { name: 'airlock-agent', version: '0.1.0' },
          { jsonSchemaValidator: new LazyOutputValidator() },
        );
        try {
          if ('inProcess' in s) {
            const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
            await IN_PROCESS_SERVERS[s.inProcess](log).connect(serverSide);
            await client.connect(clientSide, { timeout: MCP_START_TIMEOUT_MS });
          } else {
            const cache = process.env[COMPILE_CACHE_ENV];
            const env = { ...toolEnv, ...(cache ? { [COMPILE_CACHE_ENV]: cache } : {}), ...(s.env ?? {}) };
            const transport = new StdioClientTransport({ command: s.command, args: s.args, env, stderr: 'inherit' });
            // Generous: on a loaded host several agents start their servers at once.
            await client.connect(transport, { timeout: MCP_START_TIMEOUT_MS });
          }
          const listed = await client.listTools(undefined, { timeout: MCP_START_TIMEOUT_MS });
          return { s, client, tools: listed.tools };
        } catch (err) {
          log.error(
            { server: s.name, err: err instanceof Error ? err.message : String(err) },
            'mcp server failed to start; its tools are not loaded',
          );
          await client.close().catch(() => undefined);
          return undefined;
        }
      }),
    );
    for (const r of results) {
      if (!r) continue;
      host.clients.push(r.client);
      r.client.onclose = () => {
        if (!host.closing) host.goneHandler?.(r.s.name);
      };
      for (const t of r.tools) {
        host.listed.push({
          def: { name: t.name, description: t.description ?? '', inputSchema: { ...t.inputSchema } },
          client: r.client,
          server: r.s.name,
        });
      }
    }
    return host;
  }

  /** Called when a server's connection closes (it exited) other than through close(). */
  onServerGone(fn: (server: string) => void): void {
    this.goneHandler = fn;
  }

  /**
   * Load the allowed tools (null: all) and hand every server the session's tool env and
   * working folder. A server that does not take `airlock/configure` keeps its start env.
   */
  async configure(
    allowed: Set<string> | null,
    toolEnv: Record<string, string>,
    cwd: string | undefined,
  ): Promise<void> {
    this.tools.clear();
    for (const t of this.listed) {
      if (allowed && !allowed.has(t.def.name)) continue;
      if (this.tools.has(t.def.name)) {
        this.log.warn({ tool: t.def.name, server: t.server }, 'duplicate tool name ignored');
        continue;
      }
      this.tools.set(t.def.name, t);
    }
    const params = { env: toolEnv, ...(cwd !== undefined ? { cwd } : {}) };
    await Promise.all(
      this.clients.map(async (client) => {
        try {
          await client.request({ method: MCP_CONFIGURE_METHOD, params }, ConfigureResultSchema, {
            timeout: MCP_CONFIGURE_TIMEOUT_MS,
          });
        } catch (err) {
          // "Method not found": a server that takes no configuration (a third-party one).
          if (err instanceof McpError && err.code === ErrorCode.MethodNotFound) return;
          throw err;
        }
      }),
    );
    this.log.info({ tools: [...this.tools.keys()] }, 'tools loaded');
  }

  /** The session's connector tools (agent/connectors.ts), listed again by refresh() at each turn. */
  setRemote(remote: RemoteConnectors | null): void {
    this.remote = remote;
  }

  /** List the connector tools again (a turn's start): an admin's change shows from the next turn on. */
  async refresh(): Promise<void> {
    await this.remote?.refresh();
  }

  defs(): ToolDef[] {
    return [...[...this.tools.values()].map((t) => t.def), ...(this.remote?.defs() ?? [])];
  }

  has(name: string): boolean {
    return this.tools.has(name) || !!this.remote?.target(name);
  }

  /** Where a tool name goes: a local server's tool, or a connector's (its server-side name). */
  private resolve(name: string): { client: Client; server: string; callName: string } | undefined {
    const t = this.tools.get(name);
    if (t) return { client: t.client, server: t.server, callName: name };
    const r = this.remote?.target(name);
    return r ? { client: r.client, server: 'connector', callName: r.tool } : undefined;
  }

  /** Call a tool; rejects only when `signal` aborts. Tool failures resolve with ok: false. */
  async call(
    name: string,
    input: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
    callId?: string,
    onProgress?: (message: string) => void,
  ): Promise<ToolOutcome> {
    const t = this.resolve(name);
    if (!t)
      return {
        ok: false,
        error: `ERR_TOOL_UNKNOWN: no tool named ${name} is available`,
        text: `Error: no tool named ${name} is available in this session.`,
      };
    try {
      const checked = checkMessage(
        McpToolResultSchema,
        await t.client.callTool(
          { name: t.callName, arguments: input, ...(callId ? { _meta: { [CALL_ID_META]: callId } } : {}) },
          undefined,
          {
            signal,
            timeout: timeoutMs,
            ...(onProgress
              ? { onprogress: (p: { message?: string }) => typeof p.message === 'string' && onProgress(p.message) }
              : {}),
          },
        ),
      );
      if (!checked.ok) {
        this.log.warn(
          { tool: name, server: t.server, ...protocolLogFields(checked.err, 'mcp') },
          'tool returned a malformed result',
        );
        return {
          ok: false,
          error: `${checked.err.code}: the tool returned a malformed result`,
          text: 'Error: the tool returned a malformed result.',
        };
      }
      const r = checked.msg;
      const content = r.content;
      const textParts = content.filter((c) => c.type === 'text').map((c) => c.text ?? '');
      let text = textParts.join('\n');
      if (!text && r.structuredContent) text = JSON.stringify(r.structuredContent);
      if (content.some((c) => c.type === 'image')) text += (text ? '\n' : '') + '[image shown to the user]';
      if (text.length > MAX_TEXT_CHARS) text = text.slice(0, MAX_TEXT_CHARS) + '…';
      if (r.isError) return { ok: false, error: text || 'tool failed', text: text || 'tool failed' };
      let output: unknown = r.structuredContent;
      if (output === undefined) {
        const joined = textParts.join('\n');
        try {
          output = JSON.parse(joined);
        } catch {
          output = joined;
        }
        const images = content.filter((c) => c.type === 'image');
        if (images.length) output = { text: joined, images };
      }
      return { ok: true, output, text };
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        // The MCP client cancels the request at the server (notifications/cancelled); the model carries on.
        const s = Math.round(timeoutMs / 1000);
        this.log.warn({ tool: name, server: t.server, timeout_s: s }, 'tool call timed out');
        return {
          ok: false,
          error: `ERR_TOOL_TIMEOUT: the tool ${name} did not answer within ${s} s`,
          text: `Error: the tool ${name} did not answer within ${s} s and was stopped.`,
        };
      }
      const msg = err instanceof Error ? err.message : String(err);
      this.log.warn({ tool: name, server: t.server, err: msg }, 'tool call failed');
      return { ok: false, error: `ERR_TOOL_FAILED: ${msg}`, text: `Error: the tool failed (${msg}).` };
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.remote?.close();
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
  }
}
