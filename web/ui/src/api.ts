// Typed calls to the API. The shapes come from web/chat-api.ts and web/admin-api.ts, the files the
// server routes use.
import type { ChatEvent } from '../../chat-api.js';
import type { ApiErrorDetail, CsrfResponse } from '../../admin-api.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole error object: `field` and `problems` for a refused body, other details by code. */
    readonly detail: ApiErrorDetail = { code, message },
  ) {
    super(message);
  }
}

let csrfToken: string | null = null;

/** The token the login answer carries (the session changed), or null on logout: fetched again when needed. */
export function setCsrf(token: string | null): void {
  csrfToken = token;
}

export async function csrf(): Promise<string> {
  if (!csrfToken) {
    const r = await fetch('/api/auth/csrf', { credentials: 'same-origin' });
    csrfToken = ((await r.json()) as CsrfResponse).csrf_token;
  }
  return csrfToken;
}

async function errorOf(res: Response): Promise<ApiError> {
  let e: ApiErrorDetail = { code: 'ERR_HTTP', message: `HTTP ${res.status}` };
  try {
    e = ((await res.json()) as { error?: ApiErrorDetail }).error ?? e;
  } catch {
    // Not JSON (a proxy's error page): keep the status.
  }
  if (e.code === 'ERR_AUTH_CSRF') csrfToken = null;
  return new ApiError(res.status, e.code, e.message, e);
}

/** A JSON call with the session cookie (and the CSRF token on writes). */
export async function api<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  retried = false,
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = await csrf();
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    const err = await errorOf(res);
    // The session changed under a cached token (logged out and in again in this tab): one retry
    // with a fresh token, so the user never sees a CSRF error for it.
    if (err.code === 'ERR_AUTH_CSRF' && !retried) return api<T>(method, path, body, true);
    throw err;
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** Open an NDJSON stream (a new turn, or a turn's events after a seq); throws ApiError when refused. */
export async function openStream(path: string, init: RequestInit = {}, retried = false): Promise<Response> {
  const headers: Record<string, string> = {
    accept: 'application/x-ndjson',
    ...((init.headers as Record<string, string>) ?? {}),
  };
  if (init.method && init.method !== 'GET') headers['x-csrf-token'] = await csrf();
  const res = await fetch(path, { credentials: 'same-origin', ...init, headers });
  if (!res.ok) {
    const err = await errorOf(res);
    // Refused by the CSRF check, the prompt was not taken: safe to send once more with a fresh token.
    if (err.code === 'ERR_AUTH_CSRF' && !retried) return openStream(path, init, true);
    throw err;
  }
  return res;
}

/** The stream broke: the connection dropped, or a line was not JSON. */
export class StreamBroken extends Error {}

/** The events of an NDJSON body, one per line, as they arrive. */
export async function* ndjson(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatEvent> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw new StreamBroken('the response stream failed', { cause: err });
      }
      if (chunk.done) return;
      buf += dec.decode(chunk.value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let e: ChatEvent;
        try {
          e = JSON.parse(line) as ChatEvent;
        } catch (err) {
          throw new StreamBroken('a line of the response is not JSON', { cause: err });
        }
        yield e;
      }
    }
  } finally {
    reader.cancel().catch(() => {
      // Already closed or failed.
    });
  }
}
