import type { IncomingMessage } from 'node:http';
import { ProxyRefusal } from './errors.js';

/** Largest request body forwarded (a mail with a chart attachment fits easily). */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;
/** Largest header block accepted (bytes); larger → 400 before routing. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Most header lines accepted. */
export const MAX_HEADER_COUNT = 64;

/** Headers that would let the child change the method the upstream executes (Google honours them). */
const DENY_REQUEST = new Set(['x-http-method-override', 'x-http-method', 'x-method-override']);
/** Headers that must appear at most once. */
const SINGLETON = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'authorization',
  'x-api-key',
  'content-type',
]);
/** A Content-Length the proxy believes: digits only, no sign, no leading zero (RFC 9110 §8.6 plus strictness). */
const CONTENT_LENGTH = /^(?:0|[1-9][0-9]{0,14})$/;

/**
 * Header-level checks the HTTP parser does not make (it already refuses CL+TE and bad syntax).
 * Returns the declared Content-Length (null when absent).
 */
export function checkHeaders(req: IncomingMessage): number | null {
  const raw = req.rawHeaders;
  if (raw.length / 2 > MAX_HEADER_COUNT) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'too many header lines');
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (DENY_REQUEST.has(name)) throw new ProxyRefusal('ERR_PROXY_ROUTE_DENIED', `${name} is not allowed`);
    if (SINGLETON.has(name)) {
      if (seen.has(name)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', `duplicate ${name} header`);
      seen.add(name);
    }
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    if (te.toLowerCase() !== 'chunked')
      throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'unsupported transfer-encoding');
    if (req.headers['content-length'] !== undefined)
      throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'content-length with transfer-encoding');
  }
  const enc = req.headers['content-encoding'];
  if (enc !== undefined && enc.trim().toLowerCase() !== 'identity') {
    // A compressed request body would pass the body limit compressed and is not ours to inflate.
    throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'compressed request bodies are not accepted');
  }
  if (!req.headers.host) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'missing host header');
  if (req.httpVersion !== '1.1' && req.httpVersion !== '1.0')
    throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'unsupported HTTP version');
  const cl = req.headers['content-length'];
  if (cl === undefined) return null;
  // Leading zeros or a sign: parsers disagree on these (one reads 086 as 86, another refuses it).
  if (!CONTENT_LENGTH.test(cl)) throw new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'invalid content-length');
  const n = Number(cl);
  // Refused before any upstream request is made, whatever the body really holds.
  if (n > MAX_BODY_BYTES) throw new ProxyRefusal('ERR_PROXY_BODY_TOO_LARGE', 'declared content-length over the limit');
  return n;
}

export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}
