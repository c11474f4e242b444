/**
 * The model failures of test/helpers/model-faults.ts through `airlock demo`'s own wiring
 * (daemon/dev/demo.ts: startDemo with its emulators, its pool, its settings; serve() with real
 * sandboxes, the credential proxy and the egress gateway), so the demo ends each fault as
 * docs/chat.md ("Bounds") says, as serve does: the bounds reach the sandbox's agent through the
 * session's settings (AIRLOCK_MODEL_* → AGENT_MODEL_*), a refused port comes back from the proxy
 * as an unreachable model and is retried with each retry shown.
 */
import t, { type Test } from 'tap';
import type { Demo } from '../../daemon/dev/demo.js';
import * as openaiModel from '../../emulator/model-openai.js';
import * as anthropicModel from '../../emulator/model-anthropic.js';
import { closedPortUrl, type ModelServer } from '../../emulator/model-script.js';
import { Client } from '../helpers/client.js';
import { streamTurn } from '../helpers/chat.js';
import { FAULT_HOST_ENV, faultCases, REFUSED_CASE } from '../helpers/model-faults.js';
import { startTestDemo } from './demo-rig.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';

/** The real key the proxy injects (the scripted servers accept only it). */
const MODEL_KEY = 'sk-demo-faults-key-0123456789abcdef';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  async function demoWith(
    t: Test,
    provider: 'openai' | 'anthropic',
    baseUrl: string,
  ): Promise<{ demo: Demo; c: Client }> {
    const demo = await startTestDemo(t, docker!, image, 'demo-faults', {
      AIRLOCK_MODEL_PROVIDER: provider,
      AIRLOCK_MODEL: `${provider}-scripted`,
      AIRLOCK_MODEL_BASE_URL: baseUrl,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      ...FAULT_HOST_ENV,
    });
    const c = new Client(demo.url);
    t.equal((await c.login(demo.users.user.username, demo.users.user.password)).status, 200);
    return { demo, c };
  }

  for (const provider of ['openai', 'anthropic'] as const) {
    t.test(`airlock demo, ${provider}: each model failure ends as documented`, async (t) => {
      const model: ModelServer = await (provider === 'openai' ? openaiModel : anthropicModel).start({
        apiKey: MODEL_KEY,
      });
      t.teardown(() => model.close());
      const { c } = await demoWith(t, provider, model.url);
      let sid: string | undefined;
      for (const k of faultCases(provider)) {
        await t.test(k.name, async (t) => {
          model.push(...k.steps);
          const n0 = model.requests.length;
          const t0 = Date.now();
          const r = await streamTurn(c, { message: k.name, ...(sid ? { session_id: sid } : {}) });
          const took = Date.now() - t0;
          t.equal(r.events.filter((e) => e.type === 'done').length, 1, 'one done');
          t.match(
            r.events.at(-1),
            { type: 'done', stop_reason: k.stop_reason, ...(k.code ? { error: { code: k.code } } : {}) },
            JSON.stringify(r.events.at(-1)),
          );
          t.same(
            r.events.filter((e) => e.type === 'status').map((e) => e.text),
            k.statuses,
            'the retries shown',
          );
          t.equal(
            r.events
              .filter((e) => e.type === 'text_delta')
              .map((e) => e.text)
              .join(''),
            k.text ?? '',
            'the text shown, once',
          );
          t.equal(model.requests.length - n0, k.requests, 'model requests');
          t.equal(model.clearScript(), 0, 'every scripted step was played');
          if (k.atLeastMs) t.ok(took >= k.atLeastMs, `waited for Retry-After (${took} ms)`);
          t.comment(`${k.name}: ended in ${took} ms`);
          sid = r.sessionId;
        });
      }
    });
  }

  t.test('airlock demo: a model on a closed port ends the turn after three retries, each shown', async (t) => {
    const { c } = await demoWith(t, 'openai', await closedPortUrl('/v1'));
    const t0 = Date.now();
    const r = await streamTurn(c, { message: 'anyone there?' });
    t.match(
      r.events.at(-1),
      { type: 'done', stop_reason: 'error', error: { code: REFUSED_CASE.code } },
      JSON.stringify(r.events.at(-1)),
    );
    t.same(
      r.events.filter((e) => e.type === 'status').map((e) => e.text),
      REFUSED_CASE.statuses,
      'the retries shown',
    );
    t.comment(`refused port: ended in ${Date.now() - t0} ms`);
  });
}
