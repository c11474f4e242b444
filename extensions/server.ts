import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { chartArgs, normaliseChart } from './chart-spec.js';
import { rasterizeChart } from './rasterize.js';
import { noElicitationValidator } from '../core/mcp-configure.js';

export const EXTENSIONS_SERVER_NAME = 'airlock-extensions';
export const EXTENSIONS_SERVER_VERSION = '0.1.0';

export interface ExtensionsEnv {
  /** AGENT_ATTACHMENTS_DIR (tests), default /workspace/.agent-attachments. */
  attachmentsDir: string;
}

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function readExtensionsEnv(env: Record<string, string | undefined>): ExtensionsEnv {
  return { attachmentsDir: env.AGENT_ATTACHMENTS_DIR || '/workspace/.agent-attachments' };
}

function fail(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${message} (${code})` }], _meta: { error_code: code } };
}

/** The agent extensions: rasterize_chart (PNG file for e-mail) and render_chart (chat UI only). */
export function createExtensionsServer(env: ExtensionsEnv, log: Log): McpServer {
  const server = new McpServer(
    { name: EXTENSIONS_SERVER_NAME, version: EXTENSIONS_SERVER_VERSION },
    { jsonSchemaValidator: noElicitationValidator },
  );

  server.registerTool(
    'rasterize_chart',
    {
      description:
        'Draw a chart as a PNG file for e-mail. Returns a chart_attachment with a filename; pass that filename unchanged in send_email attachments (the image itself is never shown to you).',
      inputSchema: chartArgs,
      outputSchema: {
        type: z.literal('chart_attachment'),
        filename: z.string(),
        width: z.number().int(),
        height: z.number().int(),
      },
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    async (args) => {
      try {
        const started = process.hrtime.bigint();
        const att = await rasterizeChart(normaliseChart(args), env.attachmentsDir);
        log.info(
          {
            tool: 'rasterize_chart',
            width: att.width,
            height: att.height,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'chart rasterized',
        );
        return { content: [{ type: 'text', text: JSON.stringify(att) }], structuredContent: { ...att } };
      } catch (err) {
        log.error({ err, tool: 'rasterize_chart' }, 'chart failed');
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOSPC' || code === 'EDQUOT')
          return fail('ERR_TOOL_DISK_FULL', 'the workspace is full; the chart could not be saved');
        if (code === 'EACCES' || code === 'EPERM' || code === 'ENOTDIR')
          return fail('ERR_TOOL_ATTACHMENTS_DIR', 'the attachments folder cannot be written');
        return fail('ERR_TOOL_INTERNAL', 'rasterize_chart failed unexpectedly');
      }
    },
  );

  server.registerTool(
    'render_chart',
    {
      description: 'Show a chart to the user in the chat. Writes no file; for e-mail use rasterize_chart instead.',
      inputSchema: chartArgs,
      outputSchema: { type: z.literal('chart'), spec: z.record(z.string(), z.unknown()) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args) => {
      const spec = normaliseChart(args);
      const out = { type: 'chart' as const, spec: spec as unknown as Record<string, unknown> };
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    },
  );

  return server;
}
