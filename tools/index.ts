export * from './attachments.js';
export * from './env.js';
export * from './http.js';
export * from './mime.js';
export * from './result.js';
export * from './server.js';
export * from './host.js';
