export * from './google-client.js';
export * from './sync.js';
export * from './job-owner.js';
export * from './runner.js';
export * from '../cli/sync.js';
