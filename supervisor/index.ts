export * from './supervisor.js';
