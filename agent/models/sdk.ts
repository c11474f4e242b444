import { runtimeImport } from '../../core/runtime-import.js';
import { ModelError } from '../types.js';
import { httpFetchWith } from './http-fetch.js';

/**
 * What the two vendor SDKs (openai, @anthropic-ai/sdk) share, and how their failures become our
 * codes. The SDKs do the wire work (SSE, event types, tool-call assembly); this file owns the
 * policy around it: the stall timeout, retries and the error mapping. The SDKs' own retries are
 * off (maxRetries 0) because theirs are not bounded by our stall timeout.
 */

/** SDK modules already in the heap: the agent's startup snapshot holds them (agent/snapshot.ts). */
const PRELOADED = new Map<string, unknown>();

/** Called while the agent's startup snapshot is built: `name` loads from the heap, not node_modules. */
export function preloadModule(name: string, module: unknown): void {
  PRELOADED.set(name, module);
}

/**
 * Load a vendor SDK on first use: from the heap when the agent's startup snapshot holds it (the
 * image: agent/snapshot.ts), else from node_modules (core/runtime-import.ts, which also works in
 * an agent started from its startup snapshot). The name is not a string literal `import()` sees,
 * so esbuild leaves it alone: the SDKs (openai ≈ 0.4 MB, @anthropic-ai/sdk with
 * its dependencies ≈ 1.4 MB of bundled code) stay out of the sandbox's one-file agent bundle,
 * whose parse every agent started without a snapshot would pay (measured: ready 80 ms later with
 * them inside); the snapshot holds them compiled once (docs/runtime.md, "Cold start", step 12).
 * The image ships them in its node_modules too. `warm()` starts a load from there in the
 * background once the model is made (at configure), so the first turn rarely waits for all of it.
 */
export function lazyModule<T>(name: string): { load(): Promise<T>; warm(): void } {
  let p: Promise<T> | undefined;
  const load = () =>
    (p ??= (PRELOADED.has(name) ? Promise.resolve(PRELOADED.get(name) as T) : runtimeImport<T>(name)).catch(
      (err: unknown) => {
        p = undefined; // a later call tries again
        throw new ModelError('ERR_MODEL_SDK', `the model client library ${name} could not be loaded`, err);
      },
    ));
  return {
    load,
    warm() {
      // After the current tick: main() sends `ready` synchronously after building the model.
      setTimeout(() => void load().catch(() => undefined /* reported by the first model call */), 0).unref();
    },
  };
}

/** How long a model call may take, phase by phase, and how often it is tried again (docs/chat.md, "Bounds"). */
export interface ModelBounds {
  /** TCP (and TLS) connect to the model endpoint, or to the sandbox proxy (http-fetch.ts). */
  connectMs: number;
  /** From the request to the first event of the answer (the response headers alone do not count). */
  firstByteMs: number;
  /** Between two events of the answer (stall). */
  stallMs: number;
  /** Retries after the first attempt, only while nothing of the call's text was shown. */
  retries: number;
  /** The longest Retry-After waited out; a longer ask ends the call at once. */
  retryAfterMaxMs: number;
}

/** The defaults of agent/env.ts, for callers that set only some bounds. */
export const DEFAULT_BOUNDS: ModelBounds = {
  connectMs: 10_000,
  firstByteMs: 60_000,
  stallMs: 30_000,
  retries: 3,
  retryAfterMaxMs: 30_000,
};

/** What the chat shows while a call is retried: `{type:"status"}` (core/sandbox-protocol.ts). */
export interface ModelStatus {
  text: string;
  /** This retry (1-based) of `of`. */
  attempt: number;
  of: number;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8000;

/** The error classes of one SDK, so the mapping uses instanceof (bundlers may rename classes). */
export interface SdkErrors {
  APIError: abstract new (...args: never[]) => Error & { status?: number; headers?: Headers; error?: unknown };
  APIUserAbortError: abstract new (...args: never[]) => Error;
  APIConnectionError: abstract new (...args: never[]) => Error;
}

/**
 * The timer of one attempt: first the wait for the answer's first event (`firstByteMs`), then
 * for each next one (`stallMs`); past it the attempt is aborted and `timedOut` says in which
 * phase. The turn's cancel signal aborts it too. `output()` notes that text of this call was
 * shown: from then on no retry, lest text repeat.
 */
export class Watchdog {
  private readonly ac = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  timedOut: 'first_byte' | 'stall' | undefined;
  /** The answer's first event came (the stall timeout applies from then on). */
  started = false;
  /** Text of this call was passed on to the chat. */
  shown = false;
  private finished = false;
  readonly signal = this.ac.signal;
  private readonly onCancel = () => this.ac.abort();

  constructor(
    private readonly cancel: AbortSignal,
    private readonly firstByteMs: number,
    private readonly stallMs: number = firstByteMs,
  ) {
    cancel.addEventListener('abort', this.onCancel, { once: true });
    if (cancel.aborted) this.ac.abort();
    this.kick();
  }

  /** An event of the answer arrived: re-arm the stall timer. */
  progress(): void {
    this.started = true;
    this.kick();
  }

  /** Text of this call is about to be shown (call before passing it on). */
  output(): void {
    this.shown = true;
  }

  private kick(): void {
    clearTimeout(this.timer);
    if (this.ac.signal.aborted) return;
    const phase = this.started ? 'stall' : 'first_byte';
    this.timer = setTimeout(
      () => {
        this.timedOut = phase;
        this.ac.abort();
      },
      this.started ? this.stallMs : this.firstByteMs,
    );
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
 * Run one model call (`attempt`, a fresh request each time) under its Watchdog, retrying what
 * `retryWait` allows up to `bounds.retries` times, but only while none of the call's text was
 * shown (so text never repeats). Before each retry `onStatus` gets the sentence the chat shows.
 * Timeouts are not retried: a model that did not answer for the whole timeout ends the call.
 */
export async function withRetries<T>(
  errors: SdkErrors,
  cancel: AbortSignal,
  bounds: Pick<ModelBounds, 'firstByteMs' | 'stallMs' | 'retries' | 'retryAfterMaxMs'>,
  attempt: (dog: Watchdog) => Promise<T>,
  onStatus?: (s: ModelStatus) => void,
): Promise<T> {
  for (let n = 0; ; n++) {
    const dog = new Watchdog(cancel, bounds.firstByteMs, bounds.stallMs);
    let err: ModelError;
    try {
      return await attempt(dog);
    } catch (e) {
      if (cancel.aborted) throw cancel.reason ?? e;
      err = toModelError(errors, e, dog, bounds);
    } finally {
      dog.close();
    }
    const wait = n < bounds.retries && !dog.shown ? retryWait(err, n) : undefined;
    if (wait === undefined) throw err;
    if (wait > bounds.retryAfterMaxMs) {
      err.message += `; it asked to wait ${Math.ceil(wait / 1000)} s, longer than the ${Math.round(bounds.retryAfterMaxMs / 1000)} s allowed`;
      throw err;
    }
    onStatus?.({ text: statusText(err, n + 1, bounds.retries), attempt: n + 1, of: bounds.retries });
    await sleep(wait, cancel);
  }
}

/** The sentence the chat shows before retry `attempt` of `of`. */
export function statusText(err: ModelError, attempt: number, of: number): string {
  const s = err.upstreamStatus;
  const busy = s === 429 || s === 529 || /\((overloaded_error|rate_limit_error)\)/.test(err.message);
  return `${busy ? 'The model is busy' : 'The model is not answering'}, retrying (${attempt} of ${of})…`;
}

/** Errors reported inside a 200 stream that are worth a retry (Anthropic's overloaded_error, api_error). */
const overloaded = new WeakSet<ModelError>();
const RETRYABLE_STREAM_ERRORS = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'server_error']);

/** Wait before retry `n` (0-based), or undefined when the failure is not retryable. */
export function retryWait(err: ModelError, n: number): number | undefined {
  const status = err.upstreamStatus;
  const retryable =
    err.code === 'ERR_MODEL_UNREACHABLE' ||
    overloaded.has(err) ||
    (status !== undefined && (status === 408 || status === 409 || status === 429 || status >= 500));
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

/** Socket errors that mean the connection was refused, reset or never made (retried like a refusal). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNECTTIMEOUT',
  'UND_ERR_SOCKET',
]);

function connectionLost(e: unknown): boolean {
  let c = e as { code?: unknown; cause?: unknown } | undefined;
  for (let i = 0; c && i < 6; c = c.cause as typeof c, i++)
    if (typeof c.code === 'string' && CONNECTION_CODES.has(c.code)) return true;
  return false;
}

/** Map an SDK failure to our codes. Never copies the error body's message (it may echo input). */
export function toModelError(
  errors: SdkErrors,
  e: unknown,
  dog: Watchdog,
  bounds: Pick<ModelBounds, 'firstByteMs' | 'stallMs'>,
): ModelError {
  if (e instanceof ModelError) return e;
  if (dog.timedOut === 'first_byte')
    return new ModelError(
      'ERR_MODEL_TIMEOUT',
      `the model did not start answering within ${Math.round(bounds.firstByteMs / 1000)} s`,
      e,
    );
  if (dog.timedOut)
    return new ModelError(
      'ERR_MODEL_TIMEOUT',
      `the model stopped answering: nothing for ${Math.round(bounds.stallMs / 1000)} s`,
      e,
    );
  if (e instanceof errors.APIUserAbortError)
    return new ModelError('ERR_MODEL_UNREACHABLE', 'the model request was aborted', e);
  if (e instanceof errors.APIConnectionError || connectionLost(e))
    return new ModelError(
      'ERR_MODEL_UNREACHABLE',
      dog.started ? 'the connection to the model was lost mid-answer' : 'the model endpoint could not be reached',
      e,
    );
  if (e instanceof errors.APIError) {
    const type = errorType(e.error);
    if (e.status === undefined) {
      // An error event inside a 200 stream (Anthropic's overloaded_error, an OpenAI `error` chunk).
      const err = new ModelError('ERR_MODEL_STREAM', `the model reported an error mid-stream (${type ?? 'error'})`, e);
      if (type && RETRYABLE_STREAM_ERRORS.has(type)) overloaded.add(err);
      return err;
    }
    // The sandbox's credential proxy answers for an upstream it could not reach (x-airlock-error):
    // that is an unreachable model, as it would be without the proxy (docs/chat.md, "Bounds").
    const proxied = e.headers?.get('x-airlock-error');
    if (proxied === 'ERR_PROXY_UPSTREAM' || proxied === 'ERR_PROXY_TIMEOUT') {
      const err = new ModelError(
        'ERR_MODEL_UNREACHABLE',
        'the model endpoint could not be reached (through the sandbox proxy)',
        e,
      );
      err.upstreamStatus = e.status;
      return err;
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
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new ModelError('ERR_MODEL_STREAM', `the model sent non-object arguments for ${tool}`);
  return v as Record<string, unknown>;
}

/** The client options both SDKs take alike: our bounds decide (withRetries), the SDK's only back them up. */
export function clientBounds(bounds: ModelBounds) {
  return {
    maxRetries: 0, // ours are bounded and shown in the chat
    // The SDK's own timeout only backs ours up (it ends at the response headers).
    timeout: bounds.connectMs + bounds.firstByteMs + 1000,
    logLevel: 'off' as const, // its logger would print unparsable stream data (model output)
    fetch: httpFetchWith({ connectTimeoutMs: bounds.connectMs }), // http-fetch.ts says why
  };
}

/** An SDK client made on the first model call (from the module `sdk` loads), with the SDK's error classes. */
export function lazyClient<M extends SdkErrors, C>(
  sdk: { load(): Promise<M> },
  make: (m: M) => C,
): () => Promise<{ client: C; errors: SdkErrors }> {
  let made: { client: C; errors: SdkErrors } | undefined;
  return async () => {
    if (!made) {
      const m = await sdk.load();
      made = {
        client: make(m),
        errors: {
          APIError: m.APIError,
          APIUserAbortError: m.APIUserAbortError,
          APIConnectionError: m.APIConnectionError,
        },
      };
    }
    return made;
  };
}
