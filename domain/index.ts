export * from './db/index.js';
export * from './users.js';
export * from './action-log.js';
