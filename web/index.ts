export * from './app.js';
export * from './context.js';
export * from './services.js';
export * from './server.js';
export * from './session-store.js';
export * from './auth-routes.js';
export * from './validate.js';
export * from './errors.js';
export * from './identity/index.js';
export * from './memory-routes.js';
export * from './account-routes.js';
export * from './chat-routes.js';
export * from './admin-sessions-routes.js';
// The ports daemon/serve.ts (the composition root) implements for the fleet routes.
export type { OperatorPort } from './fleet.js';
export type { AttachPort } from './fleet-attach.js';
