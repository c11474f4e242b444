import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** Every refusal the proxy can answer, with its HTTP status. */
export const PROXY_ERRORS = {
  ERR_PROXY_BAD_REQUEST: 400,
  ERR_PROXY_PLACEHOLDER: 401,
  ERR_PROXY_ROUTE_DENIED: 403,
  ERR_PROXY_REQUEST_TIMEOUT: 408,
  ERR_PROXY_BODY_TOO_LARGE: 413,
  ERR_PROXY_UPSTREAM: 502,
  ERR_PROXY_UPSTREAM_ENCODING: 502,
  ERR_PROXY_TOKEN_MISSING: 503,
  ERR_PROXY_BUSY: 503,
  ERR_PROXY_TIMEOUT: 504,
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERRORS;

/** A refusal decided before anything was forwarded. */
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
 * The one place the proxy turns a refusal into an HTTP answer: the DESIGN.md error body,
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
  switch (status) {
    case 400: return 'Bad Request';
    case 401: return 'Unauthorized';
    case 403: return 'Forbidden';
    case 408: return 'Request Timeout';
    case 413: return 'Payload Too Large';
    case 502: return 'Bad Gateway';
    case 503: return 'Service Unavailable';
    case 504: return 'Gateway Timeout';
    default: return 'Error';
  }
}
