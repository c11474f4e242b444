/**
 * A stand-in MCP stdio server with the workspace-suite and extension tool names
 * (search_spreadsheets, fetch_sheet, send_email, rasterize_chart, render_chart), used to test
 * the demo model's plans while tools/ and extensions/ live on other branches. Results follow
 * docs/rules.md#agent-tools: rasterize_chart returns a `chart_attachment` file name (<uuid>.png). Calls are
 * appended to FAKE_MCP_LOG as JSON lines.
 */
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const logFile = process.env.FAKE_MCP_LOG;
// Same argument names as the real servers (tools/server.ts, extensions/chart-spec.ts).
const chart = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    labels: { type: 'array', items: { type: 'string' } },
    datasets: { type: 'array', items: { type: 'object' } },
  },
};
const server = new Server({ name: 'fake-workspace', version: '0.0.1' }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'search_spreadsheets',
      description: 'Find spreadsheets',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    },
    {
      name: 'fetch_sheet',
      description: 'Read a sheet',
      inputSchema: { type: 'object', properties: { spreadsheet_id: { type: 'string' }, range: { type: 'string' } } },
    },
    {
      name: 'send_email',
      description: 'Send mail',
      inputSchema: {
        type: 'object',
        properties: {
          to: { type: 'array', items: { type: 'string' } },
          subject: { type: 'string' },
          text: { type: 'string' },
          html: { type: 'string' },
          attachments: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    { name: 'rasterize_chart', description: 'Chart to PNG', inputSchema: chart },
    { name: 'render_chart', description: 'Chart in the chat', inputSchema: chart },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments ?? {};
  if (logFile) appendFileSync(logFile, JSON.stringify({ tool: req.params.name, args }) + '\n');
  const ok = (v: Record<string, unknown>) => ({
    structuredContent: v,
    content: [{ type: 'text' as const, text: JSON.stringify(v) }],
  });
  switch (req.params.name) {
    case 'search_spreadsheets':
      return ok({ files: [{ id: 'sheet-sample-1', name: 'Sample sales' }] });
    case 'fetch_sheet':
      return ok({
        values: [
          ['Month', 'Sales'],
          ['Jan', '3'],
          ['Feb', '5'],
          ['Mar', '8'],
        ],
      });
    case 'rasterize_chart':
      return ok({ chart_attachment: `${randomUUID()}.png` });
    case 'render_chart':
      return ok({ chart: args });
    case 'send_email':
      return ok({ sent: true, id: 'msg-1' });
    default:
      return { isError: true, content: [{ type: 'text' as const, text: 'unknown tool' }] };
  }
});

await server.connect(new StdioServerTransport());
