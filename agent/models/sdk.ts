import { runtimeImport } from '../../core/runtime-import.js';
import { ModelError } from '../types.js';

/**
 * What the two vendor SDKs (openai, @anthropic-ai/sdk) share, and how their failures become our
 * codes. The SDKs do the wire work (SSE, event types, tool-call assembly); this file owns the
 * policy around it: the stall timeout, retries and the error mapping. The SDKs' own retries are
 * off (maxRetries 0) because theirs are not bounded by our stall timeout.
 */

/**
 * Load a vendor SDK on first use, from node_modules (core/runtime-import.ts, which also works in
 * an agent started from its startup snapshot). The name is not a string literal `import()` sees,
 * so esbuild leaves it alone: the SDKs (openai ≈ 0.4 MB, @anthropic-ai/sdk with
 * its dependencies ≈ 1.4 MB of bundled code) stay out of the sandbox's one-file agent bundle,
 * whose parse every agent start would pay (measured: ready 80 ms later with them inside). The
 * image ships them in its node_modules. `warm()` starts the load in the background once the
 * agent has announced itself ready, so the first turn rarely waits for it.
 */
export function lazyModule<T>(name: string): { load(): Promise<T>; warm(): void } {
  let p: Promise<T> | undefined;
  const load = () =>
    (p ??= runtimeImport<T>(name).catch((err: unknown) => {
      p = undefined; // a later call tries again
      throw new ModelError('ERR_MODEL_SDK', `the model client library ${name} could not be loaded`, err);
    }));
  return {
    load,
    warm() {
      // After the current tick: main() sends `ready` synchronously after building the model.
      setTimeout(() => void load().catch(() => undefined /* reported by the first model call */), 0).unref();
    },
  };
}

/** Retries after the first attempt, for 408/409/429/5xx and connection failures (as the SDKs' defaults). */
export const MAX_RETRIES = 2;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8000;

/** The error classes of one SDK, so the mapping uses instanceof (bundlers may rename classes). */
export interface SdkErrors {
  APIError: abstract new (...args: any[]) => Error & { status?: number; headers?: Headers; error?: unknown };
  APIUserAbortError: abstract new (...args: any[]) => Error;
  APIConnectionError: abstract new (...args: any[]) => Error;
}

/**
 * A stall timeout: the wait for the response headers and for each next stream event. `kick()`
 * `progress()` re-arms it; past `timeoutMs` with no kick it aborts `signal` and marks `timedOut`. The turn's
 * cancel signal aborts it too.
 */
export class Watchdog {
  private readonly ac = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  timedOut = false;
  /** Set once the response started (headers or a stream event): from then on no retry, lest text repeat. */
  started = false;
  private finished = false;
  readonly signal = this.ac.signal;
  private readonly onCancel = () => this.ac.abort();

  constructor(
    private readonly cancel: AbortSignal,
    private readonly timeoutMs: number,
  ) {
    cancel.addEventListener('abort', this.onCancel, { once: true });
    if (cancel.aborted) this.ac.abort();
    this.kick();
  }

  /** The response made progress: re-arm the stall timer. */
  progress(): void {
    this.started = true;
    this.kick();
  }

  private kick(): void {
    clearTimeout(this.timer);
    if (this.ac.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.ac.abort();
    }, this.timeoutMs);
  }

  /**
   * The response was read to its end: nothing is left to abort. (An abort after the end still
   * costs: the SDK and fetch each make and dispatch an AbortError, ~0.1 ms a model call.)
   */
  ended(): void {
    this.finished = true;
  }

  /** Stops the timer and aborts whatever still runs (the stream, if the caller stopped early). */
  close(): void {
    clearTimeout(this.timer);
    this.cancel.removeEventListener('abort', this.onCancel);
    if (!this.finished) this.ac.abort();
  }
}

/**
 * Run one model call (`attempt`, a fresh request each time) under a stall watchdog, retrying
 * 408/409/429/5xx answers and connection failures up to MAX_RETRIES times. The wait honours
 * `retry-after-ms` / `Retry-After` (seconds or an HTTP date), else backs off 0.5 s, 1 s…; a wait
 * longer than the stall timeout is not taken (the turn ends with the HTTP error at once rather
 * than hang past the time a stalled model would be given up on). Text may only stream on the
 * last attempt that got a 200, so a retry never repeats text.
 */
export async function withRetries<T>(
  errors: SdkErrors,
  cancel: AbortSignal,
  timeoutMs: number,
  attempt: (dog: Watchdog) => Promise<T>,
): Promise<T> {
  for (let n = 0; ; n++) {
    const dog = new Watchdog(cancel, timeoutMs);
    let err: ModelError;
    try {
      return await attempt(dog);
    } catch (e) {
      if (cancel.aborted) throw cancel.reason ?? e;
      err = toModelError(errors, e, dog, timeoutMs);
    } finally {
      dog.close();
    }
    const wait = n < MAX_RETRIES && !dog.started ? retryWait(err, n) : undefined;
    if (wait === undefined || wait > timeoutMs) throw err;
    await sleep(wait, cancel);
  }
}

/** Wait before retry `n` (0-based), or undefined when the failure is not retryable. */
export function retryWait(err: ModelError, n: number): number | undefined {
  const status = err.upstreamStatus;
  const retryable = err.code === 'ERR_MODEL_UNREACHABLE' || (status !== undefined && (status === 408 || status === 409 || status === 429 || status >= 500));
  if (!retryable) return undefined;
  const asked = retryAfterMs(err.upstreamHeaders);
  if (asked !== undefined) return asked;
  const backoff = Math.min(BACKOFF_BASE_MS * 2 ** n, BACKOFF_MAX_MS);
  return Math.round(backoff * (1 - Math.random() * 0.25));
}

/** `retry-after-ms` (OpenAI, Anthropic) or `Retry-After` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = headers.get('retry-after');
  if (!raw) return undefined;
  const s = Number(raw);
  if (raw.trim() !== '' && Number.isFinite(s) && s >= 0) return Math.round(s * 1000);
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** Map an SDK failure to our codes. Never copies the error body's message (it may echo input). */
export function toModelError(errors: SdkErrors, e: unknown, dog: Watchdog, timeoutMs: number): ModelError {
  if (e instanceof ModelError) return e;
  if (dog.timedOut) return new ModelError('ERR_MODEL_TIMEOUT', `the model sent nothing for ${Math.round(timeoutMs / 1000)} s`, e);
  if (e instanceof errors.APIUserAbortError) return new ModelError('ERR_MODEL_UNREACHABLE', 'the model request was aborted', e);
  if (e instanceof errors.APIConnectionError) return new ModelError('ERR_MODEL_UNREACHABLE', 'the model endpoint could not be reached', e);
  if (e instanceof errors.APIError) {
    const type = errorType(e.error);
    if (e.status === undefined) {
      // An error event inside a 200 stream (Anthropic's overloaded_error, an OpenAI `error` chunk).
      return new ModelError('ERR_MODEL_STREAM', `the model reported an error mid-stream (${type ?? 'error'})`, e);
    }
    const code = e.status === 401 || e.status === 403 ? 'ERR_MODEL_AUTH' : 'ERR_MODEL_HTTP';
    const err = new ModelError(code, `the model answered HTTP ${e.status}${type ? ` (${type})` : ''}`, e);
    err.upstreamStatus = e.status;
    err.upstreamHeaders = e.headers;
    return err;
  }
  if (e instanceof SyntaxError) return new ModelError('ERR_MODEL_STREAM', 'the model sent a malformed stream event', e);
  // The SDKs' own errors for streams that break their rules (no finish_reason, ended early, …).
  return new ModelError('ERR_MODEL_STREAM', 'the model stream broke off or was not well-formed', e);
}

function errorType(body: unknown): string | undefined {
  const b = body as { type?: unknown; error?: { type?: unknown }; code?: unknown } | undefined;
  const t = b?.error?.type ?? b?.type ?? b?.code;
  // Only a short identifier, never free text.
  return typeof t === 'string' && /^[a-z_]{1,60}$/.test(t) && t !== 'error' ? t : undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Tool arguments as the model streamed them: a JSON object, or `{}` when empty. */
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
