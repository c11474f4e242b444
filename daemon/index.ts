export * from './serve.js';
export * from './context.js';
export * from './cli/create-superuser.js';
export * from './dev/local-runner.js';
