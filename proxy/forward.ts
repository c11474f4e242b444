import {
  request as httpRequest,
  type Agent,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type RequestOptions,
  type ServerResponse,
} from 'node:http';
import { CALL_ID_HEADER } from '../core/sandbox-protocol.js';
import type { Admission } from './admit.js';
import { errorResponse, PROXY_ERRORS, ProxyRefusal, type ProxyErrorCode } from '../core/egress/errors.js';
import { HOP_BY_HOP_RESPONSE, upstreamHeaders } from '../core/egress/headers.js';

const DROP_RESPONSE = new Set(HOP_BY_HOP_RESPONSE);
/** What the proxy calls the egress gateway in the Host header (the gateway routes by path, never by Host). */
export const EGRESS_HOST = 'egress.airlock';

/** What the audit trail gets of a request besides its outcome (proxy/server.ts fills in the rest). */
export interface DecisionInfo {
  req_bytes?: number;
  res_bytes?: number;
  ms?: number;
}

/** What forwarding needs from the running proxy. */
export interface ForwardContext {
  /** Keep-alive connections to the egress socket (plain HTTP; the gateway does TLS). */
  agent: Agent;
  egressSocket: string;
  timeoutMs: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
  decide: (
    route: string | null,
    outcome: 'forwarded' | 'refused' | 'upstream_error',
    status: number,
    code?: string,
    dropped?: number,
    info?: DecisionInfo,
  ) => void;
}

/** A code the gateway answered with (its `X-Airlock-Error`; the gateway drops that header from upstream answers). */
function gatewayCode(res: IncomingMessage): string | undefined {
  const v = res.headers['x-airlock-error'];
  return typeof v === 'string' && /^ERR_[A-Z_]{1,48}$/.test(v) ? v : undefined;
}

/**
 * Forward one admitted request (its body already read in full) to the daemon's egress gateway
 * over the egress socket, as plain HTTP naming the proxy path (the gateway admits it again,
 * injects the real credential and talks to the upstream), and relay the answer. The proxy never
 * holds a token, so there is nothing to inject or scrub here. Calls `done` once, when the
 * exchange is over in any way (the caller frees the session's upstream slot then).
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
  const { route } = a.compiled;
  const path = a.target.path + (a.target.query ? `?${a.target.query}` : '');
  const { headers, dropped } = upstreamHeaders(req, route, a.compiled.headers, {
    host: EGRESS_HOST,
    bodyLength: body.length,
    placeholder: a.placeholder,
  });
  if (typeof base.call_id === 'string') headers[CALL_ID_HEADER] = base.call_id;
  if (dropped.length) base.dropped_headers = dropped;
  let resBytes = 0;
  let finished = false;
  const info = (): DecisionInfo => ({ req_bytes: body.length, res_bytes: resBytes, ms: ms(started) });
  const finish = (status: number, extra: Record<string, unknown> = {}) => {
    if (finished) return;
    finished = true;
    done();
    ctx.log('info', 'proxy request', {
      ...base,
      status,
      req_bytes: body.length,
      res_bytes: resBytes,
      ms: ms(started),
      ...extra,
    });
  };
  const fail = (code: ProxyErrorCode, message: string) => {
    if (finished) return;
    const status = res.headersSent ? res.statusCode : PROXY_ERRORS[code];
    ctx.decide(route.name, 'upstream_error', status, code, dropped.length, info());
    finish(status, { code });
    errorResponse(res, code, message);
  };
  const up = httpRequest({
    agent: ctx.agent,
    socketPath: ctx.egressSocket,
    method: req.method,
    path,
    headers,
    timeout: ctx.timeoutMs,
  } as RequestOptions);
  up.on('timeout', () => {
    up.destroy();
    fail('ERR_PROXY_TIMEOUT', 'upstream timed out');
  });
  up.on('error', (err) => {
    if (err instanceof ProxyRefusal) fail('ERR_PROXY_UPSTREAM', err.message);
    else fail('ERR_PROXY_UPSTREAM', `egress gateway unavailable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  });
  up.on('response', (upRes) =>
    relay(ctx, res, up, upRes, {
      route: route.name,
      dropped: dropped.length,
      info,
      finish,
      count: (n) => (resBytes += n),
    }),
  );
  res.on('close', () => {
    if (finished) return;
    // The child went away mid-request: stop the exchange too.
    finish(499, { code: 'client_closed' });
    up.destroy();
  });
  up.end(body);
}

/** Relay the gateway's answer to the child: its status, headers (hop-by-hop dropped) and body, re-framed. */
function relay(
  ctx: ForwardContext,
  res: ServerResponse,
  up: ReturnType<typeof httpRequest>,
  upRes: IncomingMessage,
  r: {
    route: string;
    dropped: number;
    info: () => DecisionInfo;
    finish: (status: number, extra?: Record<string, unknown>) => void;
    count: (n: number) => void;
  },
): void {
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
    const name = upRes.rawHeaders[i].toLowerCase();
    if (DROP_RESPONSE.has(name)) continue;
    const prev = out[name];
    const value = upRes.rawHeaders[i + 1];
    out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
  }
  const status = upRes.statusCode ?? 502;
  const code = gatewayCode(upRes);
  res.writeHead(status, out);
  let ended = false;
  upRes.on('data', (d: Buffer) => {
    r.count(d.length);
    if (!res.write(d)) {
      upRes.pause();
      res.once('drain', () => upRes.resume());
    }
  });
  upRes.on('end', () => {
    ended = true;
    res.end();
    // A refusal of the gateway (the second wall, the send policy) is the proxy's refusal too.
    if (code) ctx.decide(r.route, status >= 500 ? 'upstream_error' : 'refused', status, code, r.dropped, r.info());
    else ctx.decide(r.route, 'forwarded', status, undefined, r.dropped, r.info());
    r.finish(status, code ? { code } : {});
  });
  const cut = () => {
    // Once: 'error', 'aborted' and 'close' all come for one cut (each was recorded and logged
    // by the daemon before: three warnings for one stalled model call).
    if (ended) return;
    ended = true;
    // The gateway cut the answer (an upstream body that did not decode, a lost upstream): the child sees a cut-off response.
    ctx.decide(r.route, 'upstream_error', status, code ?? 'ERR_PROXY_UPSTREAM', r.dropped, r.info());
    r.finish(status, { code: code ?? 'ERR_PROXY_UPSTREAM' });
    up.destroy();
    res.destroy();
  };
  upRes.on('error', cut);
  upRes.on('aborted', cut);
  upRes.on('close', cut);
}

export function ms(started: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
}
