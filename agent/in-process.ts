/**
 * The sandbox's own MCP servers, hosted in the agent child's process and reached over the MCP
 * SDK's in-memory transport: the same servers, the same protocol (tools/list, tools/call,
 * airlock/configure) as over stdio, without two more Node processes per session.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { workspaceMcpServer } from '../tools/host.js';
import { extensionsMcpServer } from '../extensions/host.js';
import type { Logger } from '../core/logger.js';

export const IN_PROCESS_SERVERS: Record<'workspace' | 'extensions', (log: Logger) => McpServer> = {
  workspace: (log) => workspaceMcpServer(log.child({ name: 'tools' })),
  extensions: (log) => extensionsMcpServer(log.child({ name: 'extensions' })),
};
