#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { createLogger } from '../core/logger.js';
import { extensionsMcpServer } from './host.js';

// stdout carries MCP: logs go to stderr only.
const log = createLogger({
  name: 'extensions',
  level: process.env.AGENT_LOG_LEVEL || 'info',
  destination: pino.destination(2),
});
// Fails at start, loudly, if the bundled font is missing.
const server = extensionsMcpServer(log);
await server.connect(new StdioServerTransport());
log.info({}, 'agent extensions ready');
