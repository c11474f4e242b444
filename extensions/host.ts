/**
 * The agent extensions MCP server wired for the sandbox (see tools/host.ts): the font is checked
 * at once (without it charts lose all text silently), the attachments folder comes from the env
 * and `airlock/configure`. Served over stdio by extensions/main.ts or hosted in the agent child.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { acceptConfigure } from '../core/mcp-configure.js';
import { ensureChartFonts } from './rasterize.js';
import { createExtensionsServer, readExtensionsEnv } from './server.js';

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function extensionsMcpServer(log: Log): McpServer {
  ensureChartFonts();
  const env = readExtensionsEnv(process.env);
  const server = createExtensionsServer(env, log);
  acceptConfigure(server.server, (merged) => Object.assign(env, readExtensionsEnv(merged)));
  return server;
}
