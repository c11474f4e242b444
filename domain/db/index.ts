export * from './database.js';
export * from './migrate.js';
export type * from './schema.js';
export * from './copy.js';
export * from './transaction.js';
