export * from './env.js';
export * from './types.js';
export * from './loop.js';
export * from './mcp.js';
export * from './models/index.js';
