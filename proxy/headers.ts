/** Shared with the daemon's egress gateway: the code lives in core/egress/headers.ts. */
export * from '../core/egress/headers.js';
