import { setTimeout as pause } from 'node:timers/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Tests wait on events, never on fixed sleeps (docs/architecture.md, "Tests"). Where the thing a
 * test waits for has no event of its own (a row written by another process, a page's request
 * count, a container's state), it polls for it here: `fn` is checked every `everyMs` and the wait
 * ends the moment it returns a truthy value, or throws naming `what` at the deadline. Tests never
 * assert on timing; this only waits. This file is the one place a test's timer is allowed
 * (test/unit/data-layer-rules.test.ts checks that).
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 60_000,
  everyMs = 25,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pause(everyMs);
  }
}

/**
 * Resolves once `server` has seen the response to the next request for a path starting with
 * `path` close, finished or cut off by the client: "the server saw the client leave". Call it
 * before the request is made.
 */
export function responseClosed(server: Server, path: string): Promise<void> {
  return new Promise((resolve) => {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (!req.url?.startsWith(path)) return;
      server.off('request', onRequest);
      res.once('close', () => resolve());
    };
    server.on('request', onRequest);
  });
}
