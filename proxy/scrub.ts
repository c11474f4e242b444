/** Shared with the daemon's egress gateway: the code lives in core/egress/scrub.ts. */
export * from '../core/egress/scrub.js';
