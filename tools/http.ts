import { CALL_ID_HEADER } from '../core/sandbox-protocol.js';
import { ToolError } from './result.js';

export interface UpstreamOptions {
  method?: 'GET' | 'POST';
  bearer: string;
  body?: unknown;
  timeoutMs: number;
  /** What the caller was doing, for messages ("reading the sheet"). */
  what: string;
  /** Message for 401 (differs for the provider routes and the host route). */
  on401?: string;
  /** The model's tool call id, sent as X-Airlock-Call for the proxy's audit trail (never forwarded upstream). */
  callId?: string;
}

const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/**
 * One upstream call through the proxy: bearer auth, timeout, bounded body, and every
 * failure turned into a ToolError the model can act on. Upstream bodies are not echoed
 * beyond a short reason (they could be large or carry request details).
 */
export async function callUpstream<T>(url: string, opts: UpstreamOptions): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: opts.method ?? 'GET',
      headers: {
        authorization: `Bearer ${opts.bearer}`,
        accept: 'application/json',
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(opts.callId ? { [CALL_ID_HEADER]: opts.callId } : {}),
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs),
      redirect: 'error',
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    throw new ToolError(
      timedOut ? 'ERR_TOOL_UPSTREAM_TIMEOUT' : 'ERR_TOOL_UPSTREAM_UNREACHABLE',
      timedOut
        ? `the workspace service did not answer in time while ${opts.what}; try again`
        : `the workspace service could not be reached while ${opts.what}; start a new chat session if this persists`,
      { cause: err },
    );
  }
  const text = await readBounded(res);
  if (res.ok) {
    try {
      return (text ? JSON.parse(text) : {}) as T;
    } catch (err) {
      throw new ToolError(
        'ERR_TOOL_UPSTREAM_BAD_RESPONSE',
        `the workspace service answered something unexpected while ${opts.what}`,
        { cause: err },
      );
    }
  }
  const reason = upstreamReason(text);
  const proxyCode = res.headers.get('x-airlock-error');
  switch (res.status) {
    case 401:
      throw new ToolError(
        'ERR_TOOL_TOKEN_EXPIRED',
        opts.on401 ?? 'the access token expired in this session; start a new chat session to send again',
      );
    case 403:
      throw new ToolError(
        'ERR_TOOL_FORBIDDEN',
        `not allowed while ${opts.what}${proxyCode ? ` (${proxyCode})` : ''}${reason ? `: ${reason}` : ''}`,
      );
    case 404:
      throw new ToolError('ERR_TOOL_NOT_FOUND', `not found while ${opts.what}${reason ? `: ${reason}` : ''}`);
    case 400:
      throw new ToolError(
        'ERR_TOOL_BAD_REQUEST',
        `the workspace service refused the request while ${opts.what}${proxyCode ? ` (${proxyCode})` : ''}${reason ? `: ${reason}` : ''}`,
      );
    case 429:
      throw new ToolError(
        'ERR_TOOL_RATE_LIMITED',
        `the workspace service is rate limiting; wait a moment and try again`,
      );
    default:
      throw new ToolError(
        'ERR_TOOL_UPSTREAM_FAILED',
        `the workspace service failed (HTTP ${res.status}) while ${opts.what}; try again later`,
      );
  }
}

async function readBounded(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES)
      throw new ToolError('ERR_TOOL_UPSTREAM_BAD_RESPONSE', 'the workspace service answered too much data');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A short reason out of a Google ({error:{message}}) or Airlock ({error:{code,message}}) error body. */
function upstreamReason(text: string): string {
  try {
    const e = (JSON.parse(text) as { error?: { message?: unknown } }).error;
    if (e && typeof e.message === 'string') return e.message.slice(0, 200);
  } catch {
    // not JSON: no reason worth repeating
  }
  return '';
}
