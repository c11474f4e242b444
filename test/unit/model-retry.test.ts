/** The retry policy around the model SDKs (agent/models/sdk.ts), without I/O. */
import t from 'tap';
import {
  DEFAULT_BOUNDS,
  retryAfterMs,
  retryWait,
  toModelError,
  Watchdog,
  withRetries,
  type ModelStatus,
} from '../../agent/models/sdk.js';
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
  t.equal(
    retryAfterMs(new Headers({ 'retry-after': new Date(Date.now() - 3000).toUTCString() })),
    0,
    'a past date: at once',
  );
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
  t.equal(DEFAULT_BOUNDS.retries, 3, 'three retries by default');
});

const B = { firstByteMs: 5_000, stallMs: 5_000, retries: 3, retryAfterMaxMs: 30_000 };

t.test(
  "the watchdog's signal: aborted when a call stops early or fails, not after a response read to its end",
  async (t) => {
    const errors = {
      APIError: class extends Error {},
      APIUserAbortError: class extends Error {},
      APIConnectionError: class extends Error {},
    };
    const cancel = new AbortController().signal;
    let ended: AbortSignal | undefined;
    t.equal(await withRetries(errors, cancel, B, async (dog) => ((ended = dog.signal), dog.ended(), 'ok')), 'ok');
    t.equal(ended!.aborted, false, 'read to its end: nothing to abort');
    let early: AbortSignal | undefined;
    await withRetries(errors, cancel, B, async (dog) => ((early = dog.signal), 'stopped early'));
    t.equal(early!.aborted, true, 'returned without reading to the end: what still runs is aborted');
    let failed: AbortSignal | undefined;
    await t.rejects(
      withRetries(errors, cancel, B, async (dog) => {
        failed = dog.signal;
        throw new Error('boom');
      }),
    );
    t.equal(failed!.aborted, true, 'a failed call is aborted');
  },
);

const errors = {
  APIError: class extends Error {},
  APIUserAbortError: class extends Error {},
  APIConnectionError: class extends Error {},
};
const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

t.test(
  'a refused connection is retried `retries` times, each retry announced, then ends ERR_MODEL_UNREACHABLE',
  async (t) => {
    const seen: ModelStatus[] = [];
    let calls = 0;
    const fast = { ...B, retries: 2 };
    const err = await withRetries(
      errors,
      new AbortController().signal,
      fast,
      async () => {
        calls++;
        throw new TypeError('fetch failed', { cause: refused() });
      },
      (s) => seen.push(s),
    ).catch((e: unknown) => e);
    t.match(err, { code: 'ERR_MODEL_UNREACHABLE' });
    t.equal(calls, 3, 'the first attempt and two retries');
    t.same(seen, [
      { text: 'The model is not answering, retrying (1 of 2)…', attempt: 1, of: 2 },
      { text: 'The model is not answering, retrying (2 of 2)…', attempt: 2, of: 2 },
    ]);
  },
);

t.test('no retry once text of the call was shown; a retry before that is taken', async (t) => {
  let calls = 0;
  const shown = await withRetries(errors, new AbortController().signal, B, async (dog) => {
    calls++;
    dog.progress();
    dog.output();
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  }).catch((e: unknown) => e);
  t.match(shown, { code: 'ERR_MODEL_UNREACHABLE', message: /lost mid-answer/ });
  t.equal(calls, 1, 'text was shown: not retried');
  calls = 0;
  const ok = await withRetries(errors, new AbortController().signal, B, async (dog) => {
    calls++;
    dog.progress(); // headers and events came, but no text yet
    if (calls === 1) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    return 'second';
  });
  t.equal(ok, 'second', 'reset before any text: retried');
});

t.test('an in-stream overloaded_error is retried and announced as busy; another stream error is not', async (t) => {
  class APIError extends Error {
    status: number | undefined = undefined;
    error: unknown;
    constructor(type: string) {
      super(type);
      this.error = { type: 'error', error: { type } };
    }
  }
  const e2 = { ...errors, APIError };
  const dog = new Watchdog(new AbortController().signal, 1000);
  dog.close();
  const over = toModelError(e2, new APIError('overloaded_error'), dog, B);
  t.match(over, { code: 'ERR_MODEL_STREAM', message: /overloaded_error/ });
  t.not(retryWait(over, 0), undefined, 'overloaded is retried');
  t.equal(
    retryWait(toModelError(e2, new APIError('invalid_request_error'), dog, B), 0),
    undefined,
    'invalid_request_error is not',
  );
  const seen: ModelStatus[] = [];
  let calls = 0;
  const r = await withRetries(
    e2,
    new AbortController().signal,
    B,
    async () => {
      if (++calls === 1) throw new APIError('overloaded_error');
      return 'ok';
    },
    (s) => seen.push(s),
  );
  t.equal(r, 'ok');
  t.equal(seen[0]?.text, 'The model is busy, retrying (1 of 3)…');
});

t.test('a Retry-After above the cap ends the call at once, saying so; one within it is waited out', async (t) => {
  let calls = 0;
  const err = await withRetries(errors, new AbortController().signal, { ...B, retryAfterMaxMs: 2_000 }, async () => {
    calls++;
    throw httpError(429, { 'retry-after': '10' });
  }).catch((e: unknown) => e);
  t.match(err, { code: 'ERR_MODEL_HTTP', message: /asked to wait 10 s, longer than the 2 s allowed/ });
  t.equal(calls, 1, 'not retried');
  calls = 0;
  const t0 = Date.now();
  const ok = await withRetries(errors, new AbortController().signal, { ...B, retryAfterMaxMs: 2_000 }, async () => {
    if (++calls === 1) throw httpError(429, { 'retry-after-ms': '200' });
    return 'ok';
  });
  t.equal(ok, 'ok');
  t.ok(Date.now() - t0 >= 190, 'waited what was asked');
});

t.test('the watchdog: first-byte timeout until the first event, then the stall timeout', async (t) => {
  const first = new Watchdog(new AbortController().signal, 30, 5_000);
  await new Promise((r) => first.signal.addEventListener('abort', r));
  t.equal(first.timedOut, 'first_byte');
  first.close();
  const stall = new Watchdog(new AbortController().signal, 5_000, 30);
  stall.progress();
  await new Promise((r) => stall.signal.addEventListener('abort', r));
  t.equal(stall.timedOut, 'stall');
  t.match(toModelError(errors, new Error('aborted'), stall, { firstByteMs: 5_000, stallMs: 30 }), {
    code: 'ERR_MODEL_TIMEOUT',
    message: /stopped answering/,
  });
  stall.close();
});
