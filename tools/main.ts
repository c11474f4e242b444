#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { createLogger } from '../core/logger.js';
import { workspaceMcpServer } from './host.js';

// stdout carries MCP: logs go to stderr only.
const log = createLogger({
  name: 'tools',
  level: process.env.AGENT_LOG_LEVEL || 'info',
  destination: pino.destination(2),
});
const server = workspaceMcpServer(log);
await server.connect(new StdioServerTransport());
log.info({}, 'workspace core agent ready');
