#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { createLogger } from '../core/logger.js';
import { acceptConfigure } from '../core/mcp-configure.js';
import { ensureChartFonts } from './rasterize.js';
import { createExtensionsServer, readExtensionsEnv } from './server.js';

// stdout carries MCP: logs go to stderr only.
const log = createLogger({ name: 'extensions', level: process.env.AGENT_LOG_LEVEL || 'info', destination: pino.destination(2) });
// Fail at start, loudly, if the bundled font is missing: otherwise charts lose all text silently.
ensureChartFonts();
const env = readExtensionsEnv(process.env);
const server = createExtensionsServer(env, log);
acceptConfigure(server.server, (merged) => Object.assign(env, readExtensionsEnv(merged)));
await server.connect(new StdioServerTransport());
log.info({}, 'agent extensions ready');
