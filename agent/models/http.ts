import { ModelError } from '../types.js';

export interface SseEvent {
  event: string;
  data: string;
}

/**
 * POST a streaming model request and yield its server-sent events. `timeoutMs` is a stall
 * timeout: the wait for the response headers and for each next chunk; past it the request
 * is aborted with ERR_MODEL_TIMEOUT. The caller's signal (turn cancel) aborts it too.
 */
export async function* postSse(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  timeoutMs: number,
): AsyncGenerator<SseEvent> {
  const ac = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, timeoutMs);
  };
  const onAbort = () => ac.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) ac.abort(); // a cancel that came before the listener
  const fail = (err: unknown): never => {
    if (signal.aborted) throw signal.reason ?? err;
    if (timedOut) throw new ModelError('ERR_MODEL_TIMEOUT', `the model sent nothing for ${Math.round(timeoutMs / 1000)} s`);
    if (err instanceof ModelError) throw err;
    throw new ModelError('ERR_MODEL_UNREACHABLE', 'the model endpoint could not be reached', err);
  };
  arm();
  try {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
        body: JSON.stringify(body),
        signal: ac.signal,
      });
    } catch (err) {
      return fail(err);
    }
    if (!res.ok) {
      let detail = '';
      try {
        const j = (await res.json()) as { error?: { message?: string; type?: string } };
        detail = j.error?.type ?? '';
      } catch {
        // Error body not JSON: the status says enough.
      }
      const code = res.status === 401 || res.status === 403 ? 'ERR_MODEL_AUTH' : 'ERR_MODEL_HTTP';
      throw new ModelError(code, `the model answered HTTP ${res.status}${detail ? ` (${detail})` : ''}`);
    }
    if (!res.body) throw new ModelError('ERR_MODEL_STREAM', 'the model sent no body');
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        arm();
        chunk = await reader.read();
      } catch (err) {
        return fail(err);
      }
      if (chunk.done) break;
      buf += decoder.decode(chunk.value, { stream: true });
      let i: number;
      while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(buf[i] === '\r' ? i + 4 : i + 2);
        const ev = parseBlock(block);
        if (ev) yield ev;
      }
    }
    const tail = parseBlock(buf);
    if (tail) yield tail;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    // Ends the connection if the consumer stopped early (error, cancel).
    ac.abort();
  }
}

function parseBlock(block: string): SseEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(':')) continue;
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (!data.length) return undefined;
  return { event, data: data.join('\n') };
}

export function parseJson(data: string): any {
  try {
    return JSON.parse(data);
  } catch (err) {
    throw new ModelError('ERR_MODEL_STREAM', 'the model sent a malformed stream event', err);
  }
}

export function parseArgs(raw: string, tool: string): Record<string, unknown> {
  if (!raw.trim()) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw new ModelError('ERR_MODEL_STREAM', `the model sent malformed arguments for ${tool}`, err);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ModelError('ERR_MODEL_STREAM', `the model sent non-object arguments for ${tool}`);
  return v as Record<string, unknown>;
}

export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
