/**
 * A small real MCP stdio server for tests (run as `node dist/test/fakes/mcp-server.js`):
 *   add {a, b}          → the sum as text
 *   slow {ms}           → waits ms (honours MCP cancellation), then "slept <ms>"
 *   fail {}             → isError result
 *   env_names {}        → JSON list of the env names this process received
 * Every call is appended (one JSON line) to the file named by FAKE_MCP_LOG, when set, with
 * its start/end/cancel time, so tests can see what ran and when.
 */
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const logFile = process.env.FAKE_MCP_LOG;
const record = (x: Record<string, unknown>) => {
  if (logFile) appendFileSync(logFile, JSON.stringify({ ...x, at: Date.now(), pid: process.pid }) + '\n');
};

const server = new Server({ name: 'fake-tools', version: '0.0.1' }, { capabilities: { tools: {} } });
const prefix = process.env.FAKE_MCP_PREFIX ?? '';

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: `${prefix}add`,
      description: 'Add two numbers',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    },
    {
      name: `${prefix}slow`,
      description: 'Wait some milliseconds',
      inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
    },
    { name: `${prefix}fail`, description: 'Always fails', inputSchema: { type: 'object', properties: {} } },
    {
      name: `${prefix}env_names`,
      description: 'Names of the env vars this server sees',
      inputSchema: { type: 'object', properties: {} },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const name = req.params.name.slice(prefix.length);
  const args = (req.params.arguments ?? {}) as Record<string, unknown>;
  record({ ev: 'start', tool: name, args });
  if (name === 'add') {
    const sum = Number(args.a) + Number(args.b);
    record({ ev: 'end', tool: name });
    return { content: [{ type: 'text', text: String(sum) }] };
  }
  if (name === 'slow') {
    const ms = Number(args.ms ?? 100);
    // The cancel notification can arrive in the same stdin chunk as the request, in which case
    // the SDK aborts the signal before this handler runs: check it before waiting on it.
    const cancelled = await new Promise<boolean>((resolve) => {
      if (extra.signal.aborted) return resolve(true);
      const t = setTimeout(() => resolve(false), ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    record({ ev: cancelled ? 'cancelled' : 'end', tool: name });
    return { content: [{ type: 'text', text: `slept ${ms}` }] };
  }
  if (name === 'fail') {
    record({ ev: 'end', tool: name });
    return { isError: true, content: [{ type: 'text', text: 'this tool always fails' }] };
  }
  if (name === 'env_names') {
    record({ ev: 'end', tool: name });
    return { content: [{ type: 'text', text: JSON.stringify(Object.keys(process.env).sort()) }] };
  }
  return { isError: true, content: [{ type: 'text', text: `unknown tool ${req.params.name}` }] };
});

await server.connect(new StdioServerTransport());
