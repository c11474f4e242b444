/** Shared with the daemon's egress gateway: the code lives in core/egress/errors.ts. */
export * from '../core/egress/errors.js';
