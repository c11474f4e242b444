export * from './supervisor.js';
export * from './ndjson.js';
