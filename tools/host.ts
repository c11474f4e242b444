/**
 * The workspace-suite MCP server wired for the sandbox: its routes read from the env it starts
 * with, then filled in by `airlock/configure` at claim. tools/main.ts serves it over stdio as a
 * process of its own (development, conformance tests); the agent child hosts it in its own
 * process (agent/in-process.ts), which saves an idle session a whole Node process.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { acceptConfigure } from '../core/mcp-configure.js';
import { readToolsEnv } from './env.js';
import { createToolsServer } from './server.js';

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function workspaceMcpServer(log: Log): McpServer {
  // One object the tools read on every call: `airlock/configure` fills in the routes.
  const env = readToolsEnv(process.env);
  const server = createToolsServer(env, log);
  acceptConfigure(server.server, (merged) => {
    Object.assign(env, readToolsEnv(merged));
    log.info(
      { mail: !!env.mail, sheets: !!env.sheets, search: !!env.search, memory: !!env.agentApi },
      'workspace core agent configured',
    );
  });
  return server;
}
