export * from './app.js';
export * from './context.js';
export * from './server.js';
export * from './session-store.js';
export * from './auth-routes.js';
export * from './validate.js';
export * from './errors.js';
export * from './account-routes.js';
