/** The retry policy around the model SDKs (agent/models/sdk.ts), without I/O. */
import t from 'tap';
import { MAX_RETRIES, retryAfterMs, retryWait, withRetries } from '../../agent/models/sdk.js';
import { ModelError } from '../../agent/types.js';

function httpError(status: number, headers: Record<string, string> = {}): ModelError {
  const e = new ModelError(status === 401 ? 'ERR_MODEL_AUTH' : 'ERR_MODEL_HTTP', `HTTP ${status}`);
  e.upstreamStatus = status;
  e.upstreamHeaders = new Headers(headers);
  return e;
}

t.test('Retry-After in seconds, as an HTTP date, and retry-after-ms', async (t) => {
  t.equal(retryAfterMs(new Headers({ 'retry-after': '1' })), 1000);
  t.equal(retryAfterMs(new Headers({ 'retry-after': '0.5' })), 500);
  t.equal(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' })), 250, 'retry-after-ms wins');
  const at = retryAfterMs(new Headers({ 'retry-after': new Date(Date.now() + 3000).toUTCString() }))!;
  t.ok(at > 1000 && at <= 3000, `an HTTP date (${at} ms)`);
  t.equal(retryAfterMs(new Headers({ 'retry-after': new Date(Date.now() - 3000).toUTCString() })), 0, 'a past date: at once');
  t.equal(retryAfterMs(new Headers({ 'retry-after': 'soon' })), undefined);
  t.equal(retryAfterMs(new Headers()), undefined);
  t.equal(retryAfterMs(undefined), undefined);
});

t.test('which failures are retried, and how long the wait is', async (t) => {
  for (const s of [408, 409, 429, 500, 502, 503, 529]) t.not(retryWait(httpError(s), 0), undefined, `${s} is retried`);
  for (const s of [400, 401, 403, 404, 413, 422]) t.equal(retryWait(httpError(s), 0), undefined, `${s} is not`);
  t.equal(retryWait(httpError(429, { 'retry-after': '2' }), 0), 2000, 'the server asked for 2 s');
  const first = retryWait(httpError(503), 0)!;
  const second = retryWait(httpError(503), 1)!;
  t.ok(first >= 375 && first <= 500, `backoff 0.5 s with jitter (${first})`);
  t.ok(second >= 750 && second <= 1000, `then 1 s (${second})`);
  t.not(retryWait(new ModelError('ERR_MODEL_UNREACHABLE', 'down'), 0), undefined, 'no connection is retried');
  t.equal(retryWait(new ModelError('ERR_MODEL_STREAM', 'bad'), 0), undefined, 'a broken stream is not');
  t.equal(MAX_RETRIES, 2);
});

t.test("the watchdog's signal: aborted when a call stops early or fails, not after a response read to its end", async (t) => {
  const errors = { APIError: class extends Error {}, APIUserAbortError: class extends Error {}, APIConnectionError: class extends Error {} };
  const cancel = new AbortController().signal;
  let ended: AbortSignal | undefined;
  t.equal(await withRetries(errors, cancel, 5_000, async (dog) => ((ended = dog.signal), dog.ended(), 'ok')), 'ok');
  t.equal(ended!.aborted, false, 'read to its end: nothing to abort');
  let early: AbortSignal | undefined;
  await withRetries(errors, cancel, 5_000, async (dog) => ((early = dog.signal), 'stopped early'));
  t.equal(early!.aborted, true, 'returned without reading to the end: what still runs is aborted');
  let failed: AbortSignal | undefined;
  await t.rejects(
    withRetries(errors, cancel, 5_000, async (dog) => {
      failed = dog.signal;
      throw new Error('boom');
    }),
  );
  t.equal(failed!.aborted, true, 'a failed call is aborted');
});
