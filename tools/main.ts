#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { createLogger } from '../core/logger.js';
import { acceptConfigure } from '../core/mcp-configure.js';
import { readToolsEnv } from './env.js';
import { createToolsServer } from './server.js';

// stdout carries MCP: logs go to stderr only.
const log = createLogger({ name: 'tools', level: process.env.AGENT_LOG_LEVEL || 'info', destination: pino.destination(2) });
// One object the tools read on every call: `airlock/configure` (at claim) fills in the routes.
const env = readToolsEnv(process.env);
const server = createToolsServer(env, log);
acceptConfigure(server.server, (merged) => {
  Object.assign(env, readToolsEnv(merged));
  log.info({ mail: !!env.mail, sheets: !!env.sheets, search: !!env.search, memory: !!env.agentApi }, 'workspace core agent configured');
});
await server.connect(new StdioServerTransport());
log.info({ mail: !!env.mail, sheets: !!env.sheets, search: !!env.search, memory: !!env.agentApi }, 'workspace core agent ready');
