export * from './config.js';
export * from './errors.js';
export * from './secret.js';
export * from './logger.js';
export * from './db.js';
export * from './crypto.js';
export * from './users.js';
export * from './action-log.js';
