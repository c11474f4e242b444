/**
 * A remote MCP server for connector tests, built with the official SDK on 127.0.0.1: Streamable
 * HTTP (stateless) or the older HTTP+SSE transport, an optional credential it requires, and tools
 * that echo, echo the credential back (the gateway must scrub it), answer big, or answer slowly.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { Server as Server2 } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface McpUpstreamOptions {
  transport?: 'streamable_http' | 'sse';
  /** Header the server requires (lower-case name) and its value; else 401. */
  requireHeader?: { name: string; value: string };
  /** List exactly these tools instead (any name, any schema: discovery checks). */
  rawTools?: { name: string; inputSchema: unknown; description?: string }[];
}

export interface McpUpstream {
  url: string;
  /** Every tools/call the server received: name and arguments. */
  calls: { name: string; args: unknown }[];
  /** Requests seen, with the header it checks (for "no credential reached it" assertions). */
  requests: { method: string; path: string; auth: string | undefined }[];
  close(): Promise<void>;
}

function build(o: McpUpstreamOptions, calls: McpUpstream['calls'], seen: () => string | undefined): McpServer {
  const s = new McpServer({ name: 'test-upstream', version: '1.0.0' });
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
  s.registerTool(
    'echo',
    { description: 'Echo a message back', inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } },
    async (a) => {
      calls.push({ name: 'echo', args: a });
      return text(`echo: ${a.message}`);
    },
  );
  s.registerTool(
    'create_ticket',
    { description: 'File a ticket', inputSchema: { title: z.string(), priority: z.enum(['low', 'high']).optional() } },
    async (a) => {
      calls.push({ name: 'create_ticket', args: a });
      return text(`ticket filed: ${a.title}`);
    },
  );
  s.registerTool(
    'whoami',
    { description: 'Echoes the credential it got', inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => {
      calls.push({ name: 'whoami', args: {} });
      return text(`you sent ${seen() ?? 'nothing'}`);
    },
  );
  s.registerTool(
    'big',
    { description: 'A big answer', inputSchema: { kib: z.number() }, annotations: { readOnlyHint: true } },
    async (a) => {
      calls.push({ name: 'big', args: a });
      return text('x'.repeat(a.kib * 1024));
    },
  );
  s.registerTool(
    'slow',
    { description: 'Answers after ms', inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } },
    async (a) => {
      calls.push({ name: 'slow', args: a });
      await new Promise((r) => setTimeout(r, a.ms));
      return text('slow done');
    },
  );
  return s;
}

/** A server that lists exactly `rawTools` (any schema, any name): the SDK's low-level server. */
function buildRaw(tools: NonNullable<McpUpstreamOptions['rawTools']>): Server2 {
  const s = new Server2({ name: 'raw-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
  s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools as never }));
  return s;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const b = Buffer.concat(chunks).toString();
      try {
        resolve(b ? JSON.parse(b) : undefined);
      } catch (e) {
        reject(e as Error);
      }
    });
    req.on('error', reject);
  });
}

/** Start the server on 127.0.0.1:0; `url` is its MCP endpoint (`/mcp`, or `/sse` for HTTP+SSE). */
export async function startMcpUpstream(o: McpUpstreamOptions = {}): Promise<McpUpstream> {
  const calls: McpUpstream['calls'] = [];
  const requests: McpUpstream['requests'] = [];
  let lastAuth: string | undefined;
  const sse = new Map<string, SSEServerTransport>();
  const headerName = o.requireHeader?.name ?? 'authorization';
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const auth = req.headers[headerName] as string | undefined;
    requests.push({ method: req.method ?? '', path: req.url ?? '', auth });
    if (o.requireHeader && auth !== o.requireHeader.value) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    lastAuth = auth;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if ((o.transport ?? 'streamable_http') === 'streamable_http') {
      if (path !== '/mcp') return void res.writeHead(404).end();
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const server = o.rawTools ? buildRaw(o.rawTools) : build(o, calls, () => lastAuth);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, await readJson(req));
      return;
    }
    if (req.method === 'GET' && path === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      sse.set(transport.sessionId, transport);
      res.on('close', () => sse.delete(transport.sessionId));
      await build(o, calls, () => lastAuth).connect(transport);
      return;
    }
    if (req.method === 'POST' && path === '/messages') {
      const t = sse.get(new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '');
      if (!t) return void res.writeHead(404).end();
      await t.handlePostMessage(req, res, await readJson(req));
      return;
    }
    res.writeHead(404).end();
  };
  const server: Server = createServer((req, res) => {
    handler(req, res).catch(() => res.headersSent || res.writeHead(500).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/${(o.transport ?? 'streamable_http') === 'sse' ? 'sse' : 'mcp'}`,
    calls,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A server at `/mcp` that answers every request with fixed bytes (garbage, or not MCP at all). */
export async function startGarbageServer(
  body: string,
  status = 200,
  type = 'application/json',
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': type }).end(body));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
