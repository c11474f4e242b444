import { request as httpRequest, type Agent, type IncomingMessage, type OutgoingHttpHeaders, type RequestOptions, type ServerResponse } from 'node:http';
import type { Admission } from './admit.js';
import { contentCodings, DECODABLE_CODINGS, decodeBody, DecodeError } from './decode.js';
import { errorResponse, PROXY_ERRORS, ProxyRefusal, type ProxyErrorCode } from './errors.js';
import { upstreamHeaders } from './headers.js';
import { Scrubber, scrubString } from './scrub.js';

const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'proxy-authenticate', 'proxy-connection']);
/** Also dropped when the proxy decoded the body: the child gets it plain. */
const DROP_DECODED = new Set(['content-encoding', 'content-md5']);

/** What the audit trail gets of a request besides its outcome (proxy/server.ts fills in the rest). */
export interface DecisionInfo {
  req_bytes?: number;
  res_bytes?: number;
  ms?: number;
}

/** What forwarding needs from the running proxy. */
export interface ForwardContext {
  agent: Agent;
  timeoutMs: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
  decide: (route: string | null, outcome: 'forwarded' | 'refused' | 'upstream_error', status: number, code?: string, dropped?: number, info?: DecisionInfo) => void;
}

/**
 * Forward one admitted request (its body already read in full) to the route's upstream through
 * the egress tunnel, and stream the answer back through the token scrubber. Calls `done` once,
 * when the exchange is over in any way (the caller frees the session's upstream slot then).
 */
export function forward(
  ctx: ForwardContext,
  req: IncomingMessage,
  res: ServerResponse,
  a: Admission,
  body: Buffer,
  started: bigint,
  base: Record<string, unknown>,
  done: () => void,
): void {
  const { route, upstream } = a.compiled;
  let upPath = a.target.path;
  if (route.rewrite && upPath.startsWith(route.rewrite.from)) upPath = route.rewrite.to + upPath.slice(route.rewrite.from.length);
  upPath = a.compiled.upstreamPath + upPath + (a.target.query ? `?${a.target.query}` : '');

  const { headers, dropped } = upstreamHeaders(req, route, a.compiled.headers, { host: upstream.host, bodyLength: body.length, real: a.real, placeholder: a.placeholder });
  if (dropped.length) base.dropped_headers = dropped;

  const port = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
  const host = upstream.hostname.replace(/^\[|\]$/g, '');
  let resBytes = 0;
  let finished = false;
  const info = (): DecisionInfo => ({ req_bytes: body.length, res_bytes: resBytes, ms: ms(started) });
  const finish = (status: number, extra: Record<string, unknown> = {}) => {
    if (finished) return;
    finished = true;
    done();
    ctx.log('info', 'proxy request', { ...base, status, req_bytes: body.length, res_bytes: resBytes, ms: ms(started), ...extra });
  };
  const fail = (code: ProxyErrorCode, message: string, extra: Record<string, unknown> = {}) => {
    if (finished) return;
    const status = res.headersSent ? res.statusCode : PROXY_ERRORS[code];
    ctx.decide(route.name, 'upstream_error', status, code, dropped.length, info());
    finish(status, { code, ...extra });
    errorResponse(res, code, message);
  };

  const up = httpRequest({ agent: ctx.agent, host, port, method: req.method, path: upPath, headers, timeout: ctx.timeoutMs, tls: upstream.protocol === 'https:' } as RequestOptions);
  up.on('timeout', () => {
    up.destroy();
    fail('ERR_PROXY_TIMEOUT', 'upstream timed out');
  });
  up.on('error', (err) => {
    if (err instanceof ProxyRefusal) fail('ERR_PROXY_UPSTREAM', err.message);
    else fail('ERR_PROXY_UPSTREAM', `upstream failed: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  });
  up.on('response', (upRes) => {
    // Scrub the value this request carried (rotation may change the env meanwhile).
    const secret = a.real ?? '';
    // The scrubber only sees plain bytes: a compressed body is decoded first. We asked for
    // identity, but an upstream may answer compressed anyway; a coding we cannot undo is
    // refused, since its bytes could carry the token past the scrubber.
    const codings = contentCodings(upRes.headers['content-encoding']);
    const unknown = codings.find((c) => !DECODABLE_CODINGS.includes(c));
    if (unknown !== undefined) {
      upRes.on('error', () => {}); // its body is thrown away; an abort error changes nothing
      upRes.destroy();
      up.destroy();
      fail('ERR_PROXY_UPSTREAM_ENCODING', 'upstream answered with a content-encoding the proxy cannot decode', { encoding: scrubString(unknown, secret).slice(0, 40) });
      return;
    }
    const out: OutgoingHttpHeaders = {};
    for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
      const name = upRes.rawHeaders[i].toLowerCase();
      if (DROP_RESPONSE.has(name) || (codings.length && DROP_DECODED.has(name))) continue;
      const value = scrubString(upRes.rawHeaders[i + 1], secret);
      const prev = out[name];
      out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
    }
    res.writeHead(upRes.statusCode ?? 502, out);
    const plain = decodeBody(upRes, codings);
    const scrub = new Scrubber(secret);
    plain.on('data', (d: Buffer) => {
      const clean = scrub.push(d);
      resBytes += clean.length;
      if (clean.length && !res.write(clean)) {
        plain.pause();
        res.once('drain', () => plain.resume());
      }
    });
    plain.on('end', () => {
      const tail = scrub.end();
      resBytes += tail.length;
      res.end(tail);
      if (!finished) ctx.decide(route.name, 'forwarded', upRes.statusCode ?? 0, undefined, dropped.length, info());
      finish(upRes.statusCode ?? 0, { ...(scrub.hits ? { scrubbed: scrub.hits } : {}), ...(codings.length ? { decoded: codings } : {}) });
    });
    plain.on('error', (err) => {
      // Headers are out: the child sees a cut-off response, never undecoded bytes.
      const code = err instanceof DecodeError ? 'ERR_PROXY_UPSTREAM_ENCODING' : 'ERR_PROXY_UPSTREAM';
      if (!finished) ctx.decide(route.name, 'upstream_error', upRes.statusCode ?? 502, code, dropped.length, info());
      finish(upRes.statusCode ?? 0, { code });
      up.destroy();
      res.destroy();
    });
  });
  res.on('close', () => {
    if (finished) return;
    // The child went away mid-request: stop the upstream exchange too.
    finish(499, { code: 'client_closed' });
    up.destroy();
  });
  up.end(body);
}

export function ms(started: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
}
