export * from './serve.js';
export * from './context.js';
export * from './create-superuser.js';
export * from './local-runner.js';
