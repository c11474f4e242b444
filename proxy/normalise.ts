/** Shared with the daemon's egress gateway: the code lives in core/egress/normalise.ts. */
export * from '../core/egress/normalise.js';
