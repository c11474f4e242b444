export * from './routes.js';
export * from './internal-routes.js';
