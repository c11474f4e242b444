export * from './agent-policy.js';
export * from './directory-apply.js';
export * from './directory-sync-store.js';
export * from './events.js';
export * from './job-view.js';
export * from './services.js';
export * from './store.js';
export * from './teams.js';
