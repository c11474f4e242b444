import type { Agent as HttpAgent, ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';

/**
 * The `fetch` the model SDKs get (their `fetch` client option): one request over node:http or
 * node:https with a keep-alive agent, answered with a standard `Response` whose body streams the
 * answer, so the SDK sees what it would see from the global fetch (status, headers, a
 * ReadableStream body, an AbortError when its signal fires, a rejection on a network failure).
 *
 * Why: in the agent, whose code is new at each session, the global fetch (undici's full fetch
 * algorithm, its Request/Response objects and web streams on both sides) cost more than the rest
 * of a model call. The same streamed call through the official `openai` client, 60 calls a fresh
 * process, host, four runs each: 1.24–1.48 ms p50 and 2.4 ms CPU a call with the global fetch,
 * 0.98–1.04 ms and 1.4 ms CPU with this one (docs/chat.md, turn overhead).
 *
 * What it does not do, and hands to the global fetch instead: a `Request` object as input, a body
 * that is a stream, a Blob or form data, a scheme other than http(s). It follows no redirect (a
 * model API answers none; the SDK reports a 3xx as the HTTP error it is) and asks for no
 * compression (the credential proxy asks upstream for identity anyway).
 */
export function httpFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return fetchOver(input, init, undefined);
}

/**
 * The same, with a connect timeout: a connection not made within `connectTimeoutMs` fails the
 * request with code ECONNECTTIMEOUT, which the SDK reports as a connection error and
 * sdk.ts retries like a refused one (docs/chat.md, "Bounds"). A reused keep-alive socket has no
 * connect phase.
 */
export function httpFetchWith(opts: { connectTimeoutMs: number }): typeof httpFetch {
  return (input, init = {}) => fetchOver(input, init, opts.connectTimeoutMs);
}

async function fetchOver(
  input: string | URL | Request,
  init: RequestInit,
  connectTimeoutMs: number | undefined,
): Promise<Response> {
  const body = init.body;
  const plainBody =
    body === undefined ||
    body === null ||
    typeof body === 'string' ||
    body instanceof Uint8Array ||
    body instanceof ArrayBuffer;
  if (input instanceof Request || !plainBody) return fetch(input, init);
  const url = input instanceof URL ? input : new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(input, init);

  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const payload =
    body === undefined || body === null
      ? undefined
      : typeof body === 'string'
        ? Buffer.from(body)
        : Buffer.from(body as Uint8Array);
  if (payload) headers['content-length'] = String(payload.length);
  const method = (init.method ?? 'GET').toUpperCase();
  const signal = init.signal ?? undefined;
  // As fetch does: an abort rejects the call, or errors the body once it streams, with the signal's reason.
  const reason = () => signal?.reason ?? new DOMException('This operation was aborted', 'AbortError');
  if (signal?.aborted) throw reason();
  const { request, agent } = transport(url.protocol);
  const options: RequestOptions = {
    agent,
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port || undefined,
    path: url.pathname + url.search,
    method,
    headers,
  };
  return new Promise<Response>((resolve, reject) => {
    let answer: IncomingMessage | undefined;
    const onAbort = () => {
      const err = reason();
      answer?.destroy(err);
      req.destroy(err);
    };
    const req = request(options, (res: IncomingMessage) => {
      answer = res;
      res.once('close', () => signal?.removeEventListener('abort', onAbort));
      const out = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) out.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
      const status = res.statusCode ?? 502;
      const noBody = method === 'HEAD' || NULL_BODY_STATUS.has(status);
      if (noBody) res.resume();
      try {
        resolve(
          new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
            status,
            statusText: res.statusMessage ?? '',
            headers: out,
          }),
        );
      } catch (err) {
        res.destroy();
        reject(err);
      }
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (connectTimeoutMs !== undefined) req.once('socket', (sock) => connectTimer(req, sock, connectTimeoutMs));
    req.on('error', (err) => {
      if (!answer) signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    req.end(payload);
  });
}

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/** Fail `req` when its new socket is not connected within `ms` (a reused one is already connected). */
function connectTimer(req: ClientRequest, sock: Socket, ms: number): void {
  if (!sock.connecting) return;
  const timer = setTimeout(() => {
    const err = Object.assign(new Error(`no connection within ${Math.round(ms / 1000)} s`), {
      code: 'ECONNECTTIMEOUT',
    });
    req.destroy(err);
  }, ms);
  const clear = () => clearTimeout(timer);
  sock.once('connect', clear);
  sock.once('close', clear);
}

type Transport = { request: typeof import('node:http').request; agent: HttpAgent };
const transports = new Map<string, Transport>();

/** node:http / node:https, loaded at first use (the agent's startup snapshot cannot hold node:http). */
function transport(protocol: string): Transport {
  let t = transports.get(protocol);
  if (!t) {
    const mod = process.getBuiltinModule(
      protocol === 'https:' ? 'node:https' : 'node:http',
    ) as typeof import('node:http');
    t = { request: mod.request, agent: new mod.Agent({ keepAlive: true }) };
    transports.set(protocol, t);
  }
  return t;
}
