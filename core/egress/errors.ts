import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROXY_AREA_ERRORS, RUNTIME_ERRORS } from '../error-codes/index.js';

/** The codes the proxy and the egress gateway answer a request with (ERR_PROXY_PROFILE only fails a start). */
const REFUSAL_CODES = [
  'ERR_PROXY_BAD_REQUEST',
  'ERR_PROXY_PLACEHOLDER',
  'ERR_PROXY_ROUTE_DENIED',
  'ERR_PROXY_REQUEST_TIMEOUT',
  'ERR_PROXY_BODY_TOO_LARGE',
  'ERR_PROXY_UPSTREAM',
  'ERR_PROXY_UPSTREAM_ENCODING',
  'ERR_PROXY_TOKEN_MISSING',
  'ERR_PROXY_BUSY',
  'ERR_PROXY_TIMEOUT',
  'ERR_MAIL_UNPARSEABLE',
  'ERR_MAIL_AMBIGUOUS',
  'ERR_MAIL_BLOCKED',
  'ERR_MAIL_DENIED',
  'ERR_MAIL_APPROVAL_TIMEOUT',
  'ERR_MAIL_APPROVAL_UNAVAILABLE',
  'ERR_MAIL_RATE_LIMITED',
  'ERR_MAIL_CALL_UNBOUND',
  'ERR_MAIL_CALL_REUSED',
  'ERR_MAIL_PREVIEW_INCOMPLETE',
  // The egress gateway's own refusals (the second wall, daemon/host/egress.ts).
  'ERR_EGRESS_BAD_REQUEST',
  'ERR_EGRESS_DENIED',
  'ERR_EGRESS_UPSTREAM',
] as const satisfies readonly (keyof typeof PROXY_AREA_ERRORS | keyof typeof RUNTIME_ERRORS)[];

const CATALOGUE: Record<string, { status: number }> = { ...PROXY_AREA_ERRORS, ...RUNTIME_ERRORS };

export type ProxyErrorCode = (typeof REFUSAL_CODES)[number];

/** Every refusal the proxy can answer, with its HTTP status from the error catalogue. */
export const PROXY_ERRORS: Readonly<Record<ProxyErrorCode, number>> = Object.freeze(
  Object.fromEntries(REFUSAL_CODES.map((c) => [c, CATALOGUE[c].status])) as Record<ProxyErrorCode, number>,
);

/**
 * A refusal decided before anything was forwarded. A plain Error, not an AppError: its code is
 * one of REFUSAL_CODES with the catalogue's status (PROXY_ERRORS), and it is answered only by
 * `refuse()` below (with X-Airlock-Error), in the sandbox's proxy or the egress gateway, never by
 * the web app's error middleware.
 */
export class ProxyRefusal extends Error {
  readonly code: ProxyErrorCode;
  readonly status: number;
  constructor(code: ProxyErrorCode, message: string) {
    super(message);
    this.code = code;
    this.status = PROXY_ERRORS[code];
  }
}

function body(code: ProxyErrorCode, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

/**
 * The one place the proxy turns a refusal into an HTTP answer: the error body
 * `{"error":{"code","message"}}` (docs/architecture.md#contracts),
 * `X-Airlock-Error: <code>`, and `Connection: close` (a refused connection is never reused,
 * so bytes after a refused request can never be read as a second request).
 * With a ServerResponse it answers through node:http; with a raw socket (parser errors,
 * CONNECT, Upgrade) it writes the response bytes itself and ends the socket.
 */
export function errorResponse(target: ServerResponse | Duplex, code: ProxyErrorCode, message: string): void {
  const status = PROXY_ERRORS[code];
  const text = body(code, message);
  if ('writeHead' in target) {
    const res = target as ServerResponse;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.shouldKeepAlive = false;
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-airlock-error': code,
      'cache-control': 'no-store',
      connection: 'close',
    });
    res.end(text);
    return;
  }
  const sock = target as Duplex;
  if (!sock.writable) {
    sock.destroy();
    return;
  }
  sock.end(
    `HTTP/1.1 ${status} ${reason(status)}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
      `x-airlock-error: ${code}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${text}`,
  );
  // Do not wait for the peer: anything it still sends is ignored.
  setTimeout(() => sock.destroy(), 1000).unref();
}

function reason(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}
