/**
 * The agent's connector tools (docs/connectors.md "What the sandbox sees"): one MCP client per
 * connector the session may use, over Streamable HTTP (the official SDK) to the in-sandbox
 * proxy's connector route, with the session's placeholder as the bearer. The host's egress
 * gateway answers tools/list from the registry and forwards tools/call; the tools are listed
 * again at the start of every turn, so a connector or tool an admin disabled is gone from the
 * next turn on. Tool names are `<connector id>__<tool>`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Logger } from '../core/logger.js';
import { CONNECTOR_ENV_RE, CONNECTORS_PLACEHOLDER_ENV } from '../core/sandbox-env.js';
import type { ToolDef } from './types.js';

const LIST_TIMEOUT_MS = 15_000;

interface Remote {
  id: string;
  url: string;
  client?: Client;
  tools: ToolDef[];
}

/** The connector base URLs of a session env: `AIRLOCK_CONNECTOR_<ID>_URL` → id. */
export function connectorRoutesOf(env: Record<string, string | undefined>): { id: string; url: string }[] {
  const out: { id: string; url: string }[] = [];
  for (const [k, v] of Object.entries(env)) {
    const m = CONNECTOR_ENV_RE.exec(k);
    if (m && v) out.push({ id: m[1].toLowerCase(), url: v });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

export class RemoteConnectors {
  private readonly remotes: Remote[];
  private readonly byName = new Map<string, { remote: Remote; tool: string }>();

  constructor(
    routes: { id: string; url: string }[],
    private readonly placeholder: string,
    private readonly log: Logger,
  ) {
    this.remotes = routes.map((r) => ({ ...r, tools: [] }));
  }

  static fromEnv(env: Record<string, string | undefined>, log: Logger): RemoteConnectors | null {
    const routes = connectorRoutesOf(env);
    const placeholder = env[CONNECTORS_PLACEHOLDER_ENV];
    return routes.length && placeholder ? new RemoteConnectors(routes, placeholder, log) : null;
  }

  async #client(r: Remote): Promise<Client> {
    if (r.client) return r.client;
    const client = new Client({ name: 'airlock-agent', version: '0.1.0' });
    client.onerror = () => undefined;
    const transport = new StreamableHTTPClientTransport(new URL(r.url), {
      requestInit: { headers: { authorization: `Bearer ${this.placeholder}` } },
    });
    await client.connect(transport, { timeout: LIST_TIMEOUT_MS });
    r.client = client;
    return client;
  }

  /** List every connector's tools (the registry's, as the gateway answers); a connector that fails offers none this turn. */
  async refresh(): Promise<void> {
    await Promise.all(
      this.remotes.map(async (r) => {
        try {
          const c = await this.#client(r);
          const listed = await c.listTools(undefined, { timeout: LIST_TIMEOUT_MS });
          r.tools = listed.tools.map((t) => ({
            name: `${r.id}__${t.name}`,
            description: t.description ?? '',
            inputSchema: { ...t.inputSchema },
          }));
        } catch (err) {
          r.tools = [];
          await r.client?.close().catch(() => undefined);
          r.client = undefined;
          this.log.warn(
            { connector: r.id, err: err instanceof Error ? err.message.slice(0, 200) : 'error' },
            'connector tools not listed',
          );
        }
      }),
    );
    this.byName.clear();
    for (const r of this.remotes)
      for (const t of r.tools) this.byName.set(t.name, { remote: r, tool: t.name.slice(r.id.length + 2) });
  }

  defs(): ToolDef[] {
    return this.remotes.flatMap((r) => r.tools);
  }

  /** The client and the server-side name of a prefixed tool name, or undefined. */
  target(name: string): { client: Client; tool: string } | undefined {
    const t = this.byName.get(name);
    return t?.remote.client ? { client: t.remote.client, tool: t.tool } : undefined;
  }

  async close(): Promise<void> {
    await Promise.all(this.remotes.map(async (r) => r.client?.close().catch(() => undefined)));
  }
}
