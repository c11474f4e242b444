export * from './chart-spec.js';
export * from './rasterize.js';
export * from './server.js';
export * from './host.js';
