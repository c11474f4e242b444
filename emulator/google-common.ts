import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCappedBody } from '../core/read-body.js';

/** What the Google API emulators share: the error shape, JSON answers, bodies, recorded requests. */

export const MAX_BODY_BYTES = 36 * 1024 * 1024; // Gmail's 35 MB limit for messages.send via JSON

export interface RecordedRequest {
  method: string;
  /** The request target exactly as received (path and raw query, escapes untouched). */
  target: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  status: number;
  at: string;
}

export type Json = Record<string, unknown>;

/**
 * Google's error envelope: {error: {code, message, errors: [{message, domain, reason}], status}},
 * with the legacy `reason` in Google's camelCase (INVALID_ARGUMENT → invalidArgument; a bad token
 * is authError), as the official clients surface it.
 */
export function googleError(res: ServerResponse, code: number, status: string, message: string): void {
  const reason =
    status === 'UNAUTHENTICATED'
      ? 'authError'
      : status.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  send(res, code, { error: { code, message, errors: [{ message, domain: 'global', reason }], status } });
}

export function send(res: ServerResponse, code: number, body: Json): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return readCappedBody(req, MAX_BODY_BYTES, () => Object.assign(new Error('body too large'), { status: 413 }));
}

/** One service's handler: true when it answered the request, false when the path is not its own. */
export type ServiceHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  body: Buffer,
) => Promise<boolean> | boolean;

/** googleError for a handler that has answered (returns true). */
export function failed(res: ServerResponse, code: number, status: string, message: string): true {
  googleError(res, code, status, message);
  return true;
}

/** send for a handler that has answered (returns true). */
export function sent(res: ServerResponse, code: number, body: Json): true {
  send(res, code, body);
  return true;
}
