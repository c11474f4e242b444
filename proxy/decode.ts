/** Shared with the daemon's egress gateway: the code lives in core/egress/decode.ts. */
export * from '../core/egress/decode.js';
