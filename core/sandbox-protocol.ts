/**
 * Contracts between the daemon, the in-container supervisor and the agent child.
 * Types and their zod schemas, side by side: no I/O here. Every reader of a sandbox boundary
 * checks each line against the schema below (core/ndjson.ts), so nothing read from a socket or a
 * child's stdout is cast. Object schemas accept (and drop) fields they do not know, so a newer
 * peer that adds a field still talks to an older one; a missing or mistyped field is refused.
 *
 * Wire format everywhere: newline-delimited JSON (one object per line, UTF-8).
 *
 *   daemon ──(control socket /run/airlock/control.sock, supervisor listens)──▶ supervisor
 *   supervisor ──(child stdin/stdout)──▶ agent child (uid 1001)
 *   proxy (in supervisor) ──(egress socket /run/airlock/egress.sock, daemon listens; HTTP CONNECT)──▶ upstreams
 *
 * The contracts live in leaf modules, re-exported here: sandbox-events.ts (chat events, the
 * agent child's stdin/stdout), sandbox-control.ts (the control socket), sandbox-mcp.ts (the MCP
 * tool servers), sandbox-profile.ts (profile.json, paths inside the sandbox).
 */
export * from './sandbox-events.js';
export * from './sandbox-control.js';
export * from './sandbox-mcp.js';
export * from './sandbox-profile.js';

// The daemon-internal seams (turn runner, preparer, auditor, egress) live in core/seams.ts.
export * from './seams.js';
