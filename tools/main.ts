#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { createLogger } from '../core/logger.js';
import { readToolsEnv } from './env.js';
import { createToolsServer } from './server.js';

// stdout carries MCP: logs go to stderr only.
const log = createLogger({ name: 'tools', level: process.env.AGENT_LOG_LEVEL || 'info', destination: pino.destination(2) });
const env = readToolsEnv(process.env);
const server = createToolsServer(env, log);
await server.connect(new StdioServerTransport());
log.info({ mail: !!env.mail, sheets: !!env.sheets, search: !!env.search, memory: !!env.agentApi }, 'workspace core agent ready');
