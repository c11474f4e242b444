import type { IncomingMessage } from 'node:http';
import { ProxyRefusal } from '../core/egress/errors.js';

import { MAX_BODY_BYTES } from '../core/egress/framing.js';

export { MAX_BODY_BYTES };
/** Upstream exchanges one session may have in flight at once. */
export const MAX_UPSTREAM_CONCURRENT = 16;
/** How long a request waits for a free upstream slot before 503 ERR_PROXY_BUSY. */
export const SLOT_WAIT_MS = 10_000;
/** The whole header block must arrive within this time (node's headersTimeout → 408). */
export const HEADERS_TIMEOUT_MS = 10_000;
/** The whole request body must arrive within this time of the request's start (408). */
export const BODY_TIMEOUT_MS = 30_000;
/** Request bytes one session may hold in memory at once (bodies are read before forwarding). */
export const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

export interface LimitOptions {
  maxConcurrent?: number;
  slotWaitMs?: number;
  bodyTimeoutMs?: number;
  maxBufferedBytes?: number;
}

/**
 * Per-session limits of the credential proxy (one proxy serves one session), so requests that
 * stall cannot starve the session's legitimate ones:
 *
 * - A request body is read in full (with a deadline) BEFORE any upstream request is made: a
 *   child that sends headers and then dribbles, or stops, holds no upstream connection; it holds
 *   only its own bytes of a per-session memory budget, and is cut at the body deadline (408).
 * - At most `maxConcurrent` upstream exchanges run at once; a request past that waits in line
 *   (FIFO) up to `slotWaitMs`, then gets 503 ERR_PROXY_BUSY. The tunnel pool is larger than the
 *   cap, so a slot always means a connection.
 */
export class SessionLimits {
  readonly maxConcurrent: number;
  readonly slotWaitMs: number;
  readonly bodyTimeoutMs: number;
  readonly maxBufferedBytes: number;
  #active = 0;
  #buffered = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(o: LimitOptions = {}) {
    this.maxConcurrent = o.maxConcurrent ?? MAX_UPSTREAM_CONCURRENT;
    this.slotWaitMs = o.slotWaitMs ?? SLOT_WAIT_MS;
    this.bodyTimeoutMs = o.bodyTimeoutMs ?? BODY_TIMEOUT_MS;
    this.maxBufferedBytes = o.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  }

  get active(): number {
    return this.#active;
  }

  /** Take an upstream slot; resolves with its release function (idempotent). */
  async acquire(signal: AbortSignal): Promise<() => void> {
    if (this.#active >= this.maxConcurrent) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const leave = (err: Error) => {
          const i = this.#waiting.indexOf(go);
          if (i !== -1) this.#waiting.splice(i, 1);
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          reject(err);
        };
        const onAbort = () => leave(new ProxyRefusal('ERR_PROXY_BUSY', 'client went away while waiting'));
        const timer = setTimeout(
          () => leave(new ProxyRefusal('ERR_PROXY_BUSY', 'too many upstream requests in flight for this session')),
          this.slotWaitMs,
        );
        signal.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(go);
      });
    } else this.#active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next in line (the count stays), or is freed.
      if (next) next();
      else this.#active--;
    };
  }

  /**
   * Read a request body in full, under the size cap, the session's memory budget and the body
   * deadline (counted from `startedMs`). Throws ProxyRefusal (413, 503, 408, 400).
   */
  readBody(req: IncomingMessage, declared: number | null, startedMs: number): Promise<Buffer> {
    const cap = Math.min(declared ?? Infinity, Number.MAX_SAFE_INTEGER);
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let got = 0;
      let held = 0;
      let settled = false;
      const reserve = (n: number): boolean => {
        if (this.#buffered + n > this.maxBufferedBytes) return false;
        this.#buffered += n;
        held += n;
        return true;
      };
      const finish = (err: ProxyRefusal | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        req.off('aborted', onAborted);
        // The bytes leave our hands once forwarded (or refused): give the budget back.
        this.#buffered -= held;
        held = 0;
        if (err) {
          req.resume(); // drain and ignore the rest; the connection is closed after the answer
          reject(err);
        } else resolve(Buffer.concat(chunks, got));
      };
      // A declared length is reserved up front: a request the budget cannot hold is refused now.
      if (declared !== null && declared > 0 && !reserve(declared)) {
        finish(new ProxyRefusal('ERR_PROXY_BUSY', 'too many request bytes in flight for this session'));
        return;
      }
      const onData = (d: Buffer) => {
        got += d.length;
        if (got > cap || got > MAX_BODY_BYTES)
          return finish(
            new ProxyRefusal(
              declared !== null ? 'ERR_PROXY_BAD_REQUEST' : 'ERR_PROXY_BODY_TOO_LARGE',
              declared !== null ? 'body longer than content-length' : 'request body too large',
            ),
          );
        if (declared === null && !reserve(d.length))
          return finish(new ProxyRefusal('ERR_PROXY_BUSY', 'too many request bytes in flight for this session'));
        chunks.push(d);
      };
      const onEnd = () => finish(null);
      const onError = () => finish(new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'request body broke off'));
      const onAborted = () => finish(new ProxyRefusal('ERR_PROXY_BAD_REQUEST', 'request body broke off'));
      const left = Math.max(0, startedMs + this.bodyTimeoutMs - Date.now());
      const timer = setTimeout(
        () => finish(new ProxyRefusal('ERR_PROXY_REQUEST_TIMEOUT', 'request body not received in time')),
        left,
      );
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
      req.on('aborted', onAborted);
    });
  }
}
