/**
 * Our two MCP servers (tools/: the workspace core agent; extensions/: charts) as an independent
 * client sees them: the MCP SDK's own Client (not the agent's ToolHost) over stdio to each server
 * running as its own process, the way any MCP host would connect. For every tool: the input and
 * output schemas compile as JSON Schema (ajv, 2020-12 and draft-07 dialects), a valid call
 * succeeds with structured content that validates against the output schema, and invalid
 * arguments come back as a tool result with isError, never as a protocol (JSON-RPC) error.
 *
 * The MCP Inspector CLI was the first choice: @modelcontextprotocol/inspector-cli 1.0.3 fails
 * standalone (it reads the inspector monorepo's package.json: "Cannot find module
 * …/@modelcontextprotocol/package.json"), and @modelcontextprotocol/inspector 2.x needs
 * Node ≥ 22.19.
 */
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SPREADSHEET_MIME, start as startGoogle } from '../../emulator/google.js';
import { startMcp } from '../helpers/mcp.js';
import { tempDir } from '../helpers/app.js';

const AGENT_USER_TOKEN = 'agent-user-token-conformance';

/** Valid and invalid arguments for each tool; a tool missing here fails the test. */
function cases(
  file: () => string,
): Record<string, { valid: Record<string, unknown>; invalid: Record<string, unknown>[] }> {
  const chart = { type: 'bar', title: 'Sales', labels: ['Jan', 'Feb'], datasets: [{ label: 'Sales', data: [10, 12] }] };
  return {
    fetch_sheet: {
      valid: { spreadsheet_id: 'sheet-1', range: 'A1:B3' },
      invalid: [{}, { spreadsheet_id: 42, range: 'A1' }],
    },
    search_spreadsheets: { valid: { query: 'sample' }, invalid: [{ query: 7 }, { query: 'x', max_results: -1 }] },
    send_email: {
      get valid() {
        return { to: ['ana@example.test'], subject: 'Chart', text: 'Here it is', attachments: [file()] };
      },
      invalid: [
        { to: 'not an address', subject: 'x', text: 'y' },
        { to: ['ana@example.test'], subject: 'line\r\nBcc: evil@example.test', text: 'y' },
      ],
    },
    fetch_memory: { valid: { query: 'sales', limit: 5 }, invalid: [{ limit: 0 }, { source: 'NOT A SOURCE' }] },
    rasterize_chart: { valid: chart, invalid: [{}, { ...chart, type: 'no-such-type' }] },
    render_chart: { valid: chart, invalid: [{ type: 'bar' }, { ...chart, datasets: 'none' }] },
    read_file_table: {
      valid: { name: 'sales.csv', range: 'A1:B3' },
      invalid: [{}, { name: 'sales.csv', max_rows: 0 }],
    },
    read_document: { valid: { name: 'notes.txt' }, invalid: [{}, { name: 'notes.txt', max_chars: 0 }] },
    run_python: { valid: { code: 'print(6 * 7)' }, invalid: [{}, { code: '' }] },
  };
}

async function listAll(client: Client) {
  return (await client.listTools()).tools;
}

t.test('both MCP servers: schemas, valid calls, invalid calls as isError results', async (t) => {
  const google = await startGoogle({
    seed: {
      spreadsheets: [
        {
          id: 'sheet-1',
          name: 'Sample sales',
          sheets: {
            S: [
              ['Month', 'Sales'],
              ['Jan', 10],
              ['Feb', 12],
            ],
          },
        },
      ],
    },
  });
  t.teardown(() => google.close());
  // The daemon's agent API, as fetch_memory reads it (GET /api/agent/memories with the agent token).
  const agentApi = createServer((req, res) => {
    const ok = req.headers.authorization === `Bearer ${AGENT_USER_TOKEN}` && req.url?.startsWith('/api/agent/memories');
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        ok
          ? {
              memories: [{ id: 1, content: 'sales are up', source: 'chat', created_at: '2026-01-01T00:00:00Z' }],
              withheld: {},
            }
          : { error: { code: 'ERR_AUTH_REQUIRED', message: 'no' } },
      ),
    );
  });
  await new Promise<void>((r) => agentApi.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => agentApi.close(() => r())));
  const dir = join(tempDir(t), 'attachments');
  mkdirSync(dir, { mode: 0o700 });
  // An uploaded file beside the attachments (read_file_table).
  mkdirSync(join(dir, '..', 'uploads'));
  writeFileSync(join(dir, '..', 'uploads', 'sales.csv'), 'Month,Sales\nJan,10\nFeb,12\n');
  // A text upload (read_document).
  writeFileSync(join(dir, '..', 'uploads', 'notes.txt'), 'Quarterly notes\nSales are up.\n');
  const env = {
    MAIL_BASE_URL: google.url,
    MAIL_API_KEY: google.token,
    MAIL_FROM: 'alice@example.test',
    SHEETS_BASE_URL: google.url,
    SHEETS_API_KEY: google.token,
    SEARCH_SHEETS_BASE_URL: google.url,
    SEARCH_SHEETS_API_KEY: google.token,
    AGENT_API_BASE_URL: `http://127.0.0.1:${(agentApi.address() as AddressInfo).port}`,
    AGENT_USER_TOKEN,
    AGENT_ATTACHMENTS_DIR: dir,
  };
  const [tools, ext] = await Promise.all([
    startMcp(t, 'tools', env),
    startMcp(t, 'extensions', { AGENT_ATTACHMENTS_DIR: dir }),
  ]);
  let chartFile = '';
  const table = cases(() => chartFile);
  const ajv2020 = new Ajv2020({ strict: false, allErrors: true });
  const ajv07 = new Ajv({ strict: false, allErrors: true });
  const compile = (schema: Record<string, unknown>) =>
    (String(schema.$schema ?? '').includes('draft-07') ? ajv07 : ajv2020).compile(schema);
  const seen: string[] = [];

  // extensions first: send_email attaches the chart rasterize_chart wrote.
  for (const [server, handle] of [
    ['extensions', ext],
    ['tools', tools],
  ] as const) {
    const listed = await listAll(handle.client);
    t.ok(listed.length >= 2, `${server} lists its tools`);
    for (const tool of listed) {
      seen.push(tool.name);
      const c = table[tool.name];
      if (!c) {
        t.fail(`${tool.name}: add valid and invalid arguments to this test`);
        continue;
      }
      t.equal(tool.inputSchema.type, 'object', `${tool.name}: input schema is an object schema`);
      t.ok(tool.description && tool.description.length > 10, `${tool.name}: has a description`);
      const validIn = compile(tool.inputSchema);
      const validOut = tool.outputSchema ? compile(tool.outputSchema) : undefined;
      t.ok(
        validIn(c.valid),
        `${tool.name}: the valid arguments fit the advertised schema ${JSON.stringify(validIn.errors ?? '')}`,
      );

      const r = (await handle.client.callTool({ name: tool.name, arguments: c.valid })) as CallToolResult;
      t.notOk(r.isError, `${tool.name}: a valid call succeeds ${r.isError ? JSON.stringify(r.content) : ''}`);
      if (validOut) {
        t.ok(r.structuredContent, `${tool.name}: structured content with an output schema`);
        t.ok(
          validOut(r.structuredContent),
          `${tool.name}: structured content fits the output schema ${JSON.stringify(validOut.errors ?? '')}`,
        );
      }
      if (tool.name === 'rasterize_chart') chartFile = String((r.structuredContent as { filename?: string }).filename);

      for (const bad of c.invalid) {
        t.notOk(validIn(bad), `${tool.name}: ${JSON.stringify(bad)} breaks the advertised schema`);
        let res: CallToolResult | undefined;
        let protocolError: unknown;
        try {
          res = (await handle.client.callTool({ name: tool.name, arguments: bad })) as CallToolResult;
        } catch (err) {
          protocolError = err;
        }
        t.notOk(
          protocolError,
          `${tool.name}: invalid arguments are not a protocol error (${(protocolError as Error | undefined)?.message ?? 'ok'})`,
        );
        t.equal(res?.isError, true, `${tool.name}: invalid arguments → isError result`);
        t.ok(
          res?.content?.some((x) => x.type === 'text' && x.text.length > 0),
          `${tool.name}: with a message the model can read`,
        );
      }
    }
  }
  t.same(seen.sort(), Object.keys(table).sort(), 'every tool was called');
  t.equal(google.mailbox.length, 1, 'the valid send_email sent one mail');
  t.ok(
    google.mailbox[0].attachments.some((a) => a.contentType === 'image/png'),
    'with the chart',
  );
  t.ok(
    google.requests.some((r) => r.path === '/drive/v3/files' && String(r.query.q).includes(SPREADSHEET_MIME)),
    'search went to Drive',
  );
});
