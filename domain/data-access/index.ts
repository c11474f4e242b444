export * from './predicate.js';
export * from './store.js';
export * from './effective.js';
export * from './compile.js';
export * from './evaluate.js';
export * from './service.js';
export * from './audit.js';
