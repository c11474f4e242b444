/**
 * The egress gateway's upstream exchange: one admitted request, with the real credential
 * injected, to the route's upstream (verified TLS for https), and its answer back to the
 * in-sandbox proxy with the real token scrubbed out (docs/proxy.md#forwarding).
 */
import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { CompiledRoute } from '../../core/egress/routes.js';
import { contentCodings, DECODABLE_CODINGS, decodeBody, DecodeError } from '../../core/egress/decode.js';
import { errorResponse, type ProxyErrorCode } from '../../core/egress/errors.js';
import { Scrubber, scrubString } from '../../core/egress/scrub.js';
import { HOP_BY_HOP_RESPONSE } from '../../core/egress/headers.js';

// An upstream cannot speak as the proxy: its own x-airlock-error is dropped too.
const DROP_RESPONSE = new Set([...HOP_BY_HOP_RESPONSE, 'x-airlock-error']);
/** Also dropped when the gateway decoded the body: the proxy gets it plain. */
const DROP_DECODED = new Set(['content-encoding', 'content-md5']);
/** Idle upstream connections are kept this long for reuse (below common upstream keep-alive limits). */
export const UPSTREAM_IDLE_MS = 4_000;

/** Keep-alive connections of one session to its upstreams (plain and verified TLS). */
export class UpstreamAgents {
  readonly http: HttpAgent;
  readonly https: HttpsAgent;
  constructor(ca?: string | Buffer) {
    // noDelay: small request/response writes; Nagle + delayed ACK would add ~40 ms each.
    this.http = new HttpAgent({
      keepAlive: true,
      maxSockets: 32,
      maxFreeSockets: 8,
      timeout: UPSTREAM_IDLE_MS,
      noDelay: true,
    });
    // Certificate and hostname checks stay on (Node's bundled roots, plus `ca` when given).
    this.https = new HttpsAgent({
      keepAlive: true,
      maxSockets: 32,
      maxFreeSockets: 8,
      timeout: UPSTREAM_IDLE_MS,
      noDelay: true,
      ...(ca ? { ca } : {}),
    });
  }
  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

export interface ExchangeResult {
  status: number;
  code?: ProxyErrorCode;
  resBytes: number;
  scrubbed: number;
  decoded?: string[];
}

/**
 * Make the upstream request and stream its answer to `res` through the decoder and the scrubber.
 * Resolves when the exchange is over in any way (never rejects).
 */
export function exchange(
  o: { agents: UpstreamAgents; timeoutMs: number },
  c: CompiledRoute,
  req: { method: string; path: string; headers: OutgoingHttpHeaders; body: Buffer },
  secret: string,
  res: ServerResponse,
): Promise<ExchangeResult> {
  const tls = c.upstream.protocol === 'https:';
  const host = c.upstream.hostname.replace(/^\[|\]$/g, '');
  const port = Number(c.upstream.port || (tls ? 443 : 80));
  return new Promise<ExchangeResult>((resolve) => {
    let done = false;
    let resBytes = 0;
    const finish = (r: Omit<ExchangeResult, 'resBytes'>) => {
      if (done) return;
      done = true;
      resolve({ ...r, resBytes });
    };
    const fail = (code: ProxyErrorCode, message: string) => {
      if (done) return;
      const status = res.headersSent ? res.statusCode : code === 'ERR_PROXY_TIMEOUT' ? 504 : 502;
      errorResponse(res, code, message);
      finish({ status, code, scrubbed: 0 });
    };
    const send = tls ? httpsRequest : httpRequest;
    const up = send({
      agent: tls ? o.agents.https : o.agents.http,
      host,
      port,
      method: req.method,
      path: req.path,
      headers: req.headers,
      timeout: o.timeoutMs,
      ...(tls ? { servername: host } : {}),
    });
    up.on('timeout', () => {
      up.destroy();
      fail('ERR_PROXY_TIMEOUT', 'upstream timed out');
    });
    up.on('error', (err: NodeJS.ErrnoException) =>
      fail('ERR_PROXY_UPSTREAM', `upstream failed: ${err.code ?? 'error'}`),
    );
    up.on('response', (upRes) => {
      const r = answer(upRes, secret, res, up, (n) => (resBytes += n));
      if (r.refused)
        return fail('ERR_PROXY_UPSTREAM_ENCODING', 'upstream answered with a content-encoding the proxy cannot decode');
      r.done.then(finish, () => undefined);
    });
    res.on('close', () => {
      if (done || res.writableFinished) return;
      // The proxy went away mid-request: stop the upstream exchange too.
      up.destroy();
      finish({ status: 499, code: undefined, scrubbed: 0 });
    });
    up.end(req.body);
  });
}

/** Pass an upstream answer on: headers and body scrubbed of the real token, compressed bodies decoded first. */
function answer(
  upRes: IncomingMessage,
  secret: string,
  res: ServerResponse,
  up: { destroy(): void },
  count: (n: number) => void,
): { refused: true } | { refused: false; done: Promise<Omit<ExchangeResult, 'resBytes'>> } {
  // The scrubber only sees plain bytes: a coding the gateway cannot undo is refused, since its
  // bytes could carry the token past the scrubber.
  const codings = contentCodings(upRes.headers['content-encoding']);
  if (codings.some((c) => !DECODABLE_CODINGS.includes(c))) {
    upRes.on('error', () => {});
    upRes.destroy();
    up.destroy();
    return { refused: true };
  }
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
    const name = upRes.rawHeaders[i].toLowerCase();
    if (DROP_RESPONSE.has(name) || (codings.length && DROP_DECODED.has(name))) continue;
    const value = scrubString(upRes.rawHeaders[i + 1], secret);
    const prev = out[name];
    out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
  }
  const status = upRes.statusCode ?? 502;
  // Headers go with the first decoded bytes (or the end): a body that does not decode as
  // labelled is then refused whole (502) instead of cut off after its headers.
  const head = () => res.headersSent || res.writeHead(status, out);
  if (!codings.length) head();
  const plain = decodeBody(upRes, codings);
  const scrub = new Scrubber(secret);
  const decoded = codings.length ? { decoded: codings } : {};
  const done = new Promise<Omit<ExchangeResult, 'resBytes'>>((resolve) => {
    plain.on('data', (d: Buffer) => {
      const clean = scrub.push(d);
      count(clean.length);
      head();
      if (clean.length && !res.write(clean)) {
        plain.pause();
        res.once('drain', () => plain.resume());
      }
    });
    plain.on('end', () => {
      const tail = scrub.end();
      count(tail.length);
      head();
      res.end(tail);
      resolve({ status, scrubbed: scrub.hits, ...decoded });
    });
    plain.on('error', (err) => {
      const code = err instanceof DecodeError ? 'ERR_PROXY_UPSTREAM_ENCODING' : 'ERR_PROXY_UPSTREAM';
      up.destroy();
      if (!res.headersSent) {
        errorResponse(res, code, 'upstream body did not decode as labelled');
        return resolve({ status: 502, code, scrubbed: scrub.hits, ...decoded });
      }
      // Headers are out: the proxy (and the child) sees a cut-off response, never undecoded bytes.
      res.destroy();
      resolve({ status, code, scrubbed: scrub.hits, ...decoded });
    });
  });
  return { refused: false, done };
}
