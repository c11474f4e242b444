/**
 * A model request the agent gives up on (its stall timer, a cancel) is ended at every hop at
 * once: the credential proxy stops its exchange with the egress gateway, the gateway stops its
 * upstream request, and the model server sees its connection closed — no connection is left
 * streaming into nothing (issue 41). Proved here with the real proxy and gateway over a real
 * unix socket and a model server on 127.0.0.1 that sends one chunk and then nothing, one stall
 * at a time and twenty at once; after them every next request of the session (a 500, its
 * retries, an answer) reaches the model at once. One give-up is one proxy decision (the three
 * events of a cut were each recorded before).
 */
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildProfile, buildRoutes } from '../../daemon/host/overlay.js';
import { startCredentialProxy, type ProxyDecision } from '../../proxy/index.js';
import { logSink, tempDir } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

/** What the model server does with each request, in order; every request is recorded with the time its connection closed. */
type Step = 'stall' | 500 | 'ok';

async function startModel(t: { teardown(fn: () => unknown): void }) {
  const script: Step[] = [];
  const seen: { at: number; closedAt?: number }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const rec: { at: number; closedAt?: number } = { at: Date.now() };
      seen.push(rec);
      res.on('close', () => (rec.closedAt = Date.now()));
      const step = script.shift() ?? 'ok';
      if (step === 500) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"scripted","type":"server_error"}}');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"one chunk"}}]}\n\n');
      if (step === 'ok') res.end('data: [DONE]\n\n');
      // 'stall': nothing more until the other side closes.
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, script, seen };
}

async function startRig(t: { teardown(fn: () => unknown): void }) {
  const model = await startModel(t);
  const socketPath = join(tempDir(t, 'airlock-give-up-'), 'egress.sock');
  const gateway = new EgressGatewayService({ log: createLogger({ level: 'warn', destination: logSink().stream }) });
  const routes = buildRoutes({
    google: { mailBaseUrl: model.url, sheetsBaseUrl: model.url, driveBaseUrl: model.url },
    model: { provider: 'openai', baseUrl: `${model.url}/v1` },
    hasAccountToken: false,
    hasModelKey: true,
  });
  const handle = await gateway.open('sess-give-up', socketPath, {
    userId: 1,
    routes,
    tokens: { MODEL_API_KEY_REAL: 'sk-real-give-up-0123456789' },
  });
  t.teardown(() => handle.close());
  const placeholder = 'ph-model-give-up-0123456789abcdef';
  const decisions: ProxyDecision[] = [];
  const proxy = await startCredentialProxy({
    profile: buildProfile('sess-give-up', 0, routes),
    getPlaceholder: () => placeholder,
    egressSocket: socketPath,
    onDecision: (d) => decisions.push(d),
  });
  t.teardown(() => proxy.close());
  const call = (signal?: AbortSignal) =>
    fetch(`http://127.0.0.1:${proxy.port}/model/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${placeholder}`, 'content-type': 'application/json' },
      body: '{"model":"m","messages":[],"stream":true}',
      signal,
    });
  return { model, decisions, call };
}

/** Start a call, read its first chunk (the model answered), then give up on it as the agent's stall timer does. */
async function stallAndGiveUp(call: (s: AbortSignal) => Promise<Response>): Promise<number> {
  const ac = new AbortController();
  const res = await call(ac.signal);
  const reader = res.body!.getReader();
  const first = await reader.read();
  if (first.done) throw new Error('no first chunk');
  const at = Date.now();
  ac.abort();
  await reader.closed.catch(() => undefined);
  return at;
}

t.test(
  'a stalled model call given up by the agent is closed at the model server at once, and the next calls all get through',
  async (t) => {
    const { model, decisions, call } = await startRig(t);
    model.script.push('stall');
    const gaveUp = await stallAndGiveUp(call);
    const closed = await waitFor(
      () => model.seen[0].closedAt,
      'the model server sees the stalled connection closed',
      10_000,
    );
    t.ok(
      closed - gaveUp < 2_000,
      `closed at the model ${closed - gaveUp} ms after the give-up (not at the gateway's 120 s)`,
    );
    await waitFor(() => decisions.length === 1 || undefined, 'the proxy recorded the give-up', 5_000);

    // The same session's next call fails with 500 and is retried three times: each reaches the model.
    model.script.push(500, 500, 500, 'ok');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await call();
      await r.text();
      statuses.push(r.status);
    }
    t.same(statuses, [500, 500, 500, 200], 'the 500s and the answer came back');
    t.equal(model.seen.length, 5, 'every retry reached the model');
    t.equal(decisions.length, 5, 'one decision per call: the give-up is recorded once, not once per event of the cut');
  },
);

t.test(
  'twenty stalled calls at once: each closed at the model after its give-up; a call after them answers at once',
  async (t) => {
    const { model, call } = await startRig(t);
    const N = 20;
    for (let i = 0; i < N; i++) model.script.push('stall');
    // Sixteen at a time is a session's upstream cap (proxy/limits.ts): twenty in two waves.
    const gaveUp = [
      ...(await Promise.all(Array.from({ length: 16 }, () => stallAndGiveUp(call)))),
      ...(await Promise.all(Array.from({ length: N - 16 }, () => stallAndGiveUp(call)))),
    ];
    await waitFor(
      () => model.seen.length === N && model.seen.every((s) => s.closedAt !== undefined),
      'every stalled connection closed at the model',
      10_000,
    );
    const lastGiveUp = Math.max(...gaveUp);
    t.ok(Math.max(...model.seen.map((s) => s.closedAt!)) - lastGiveUp < 2_000, 'each closed right after its give-up');
    const r = await call();
    t.equal(r.status, 200);
    t.match(await r.text(), /one chunk/, 'the next call answers');
    t.equal(model.seen.length, N + 1, 'and reached the model');
  },
);
