export * from './db/index.js';
export * from './users.js';
export * from './action-log.js';
export * from './web-sessions.js';
export * from './login-limits.js';
export * from './accounts.js';
