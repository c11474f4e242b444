/**
 * Faults in a row and at once through `airlock demo`'s own wiring (real sandboxes, the credential
 * proxy, the egress gateway) with a model an admin added (/api/admin/chat-models), DEFAULT bounds
 * (docs/chat.md "Bounds"): a stalled stream must not poison the turns after it (issue 41).
 *
 * Turn 1 (one chunk, then silence) ends at the stall bound with ERR_MODEL_TIMEOUT; turn 2 in a new
 * chat (HTTP 500 four times) reaches the model four times (each retry is a new request at the fake
 * model) and ends with ERR_MODEL_HTTP in seconds; turn 3 in a new chat answers.
 *
 * Why the order matters: the pool member that takes turn 2's chat starts while turn 1 runs and
 * sits idle through its 30 s stall. An agent from its startup snapshot that was older than a
 * stale timer expiry frozen into the blob never fired a timer again (core/snapshot-timers.ts):
 * before that fix turn 2 showed "retrying (1 of 3)…", made one request and had no `done`.
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { streamTurn } from '../helpers/chat.js';
import { startTestDemo } from './demo-rig.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';

const MODEL_KEY = 'sk-fault-sequence-key-0123456789abcdef';
/** The documented defaults (docs/chat.md "Bounds"): the stall bound, and the slack a turn may take past it. */
const STALL_MS = 30_000;
const SLACK_MS = 10_000;

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  t.test('airlock demo, admin-added model, default bounds: stall → 500 → healthy', async (t) => {
    const model = await openaiModel.start({ apiKey: MODEL_KEY });
    t.teardown(() => model.close());
    const demo = await startTestDemo(t, docker!, image, 'fault-seq');
    const admin = new Client(demo.url);
    t.equal((await admin.login(demo.users.admin.username, demo.users.admin.password)).status, 200);
    const made = await admin.json('POST', '/api/admin/chat-models', {
      id: 'scripted',
      label: 'Scripted',
      provider: 'openai',
      model: 'gpt-scripted',
      base_url: model.url,
      api_key: MODEL_KEY,
      context_tokens: 16_000,
    });
    t.equal(made.status, 201, JSON.stringify(made.body));
    const c = new Client(demo.url);
    t.equal((await c.login(demo.users.user.username, demo.users.user.password)).status, 200);

    const turn = async (name: string, steps: Parameters<typeof model.push>) => {
      model.push(...steps);
      const n0 = model.requests.length;
      const t0 = Date.now();
      const r = await streamTurn(c, { message: name, model_id: 'scripted' });
      const took = Date.now() - t0;
      t.comment(
        `${name}: ${took} ms, ${model.requests.length - n0} model requests, last ${JSON.stringify(r.events.at(-1))}`,
      );
      return { r, took, requests: model.requests.length - n0, done: r.events.filter((e) => e.type === 'done') };
    };

    const stall = await turn('stall', [{ kind: 'stall', text: 'one chunk' }]);
    t.equal(stall.done.length, 1, 'the stalled turn has its done');
    t.match(stall.done[0], { stop_reason: 'error', error: { code: 'ERR_MODEL_TIMEOUT' } });
    t.ok(stall.took < STALL_MS + SLACK_MS, `the stalled turn ends within the stall bound (${stall.took} ms)`);

    const failing = await turn('http 500', [{ kind: 'error', status: 500, times: 4 }]);
    t.equal(failing.requests, 4, 'every retry of the 500 turn reached the model');
    t.equal(failing.done.length, 1, 'the 500 turn has its done');
    t.match(failing.done[0], { stop_reason: 'error', error: { code: 'ERR_MODEL_HTTP' } });
    t.ok(failing.took < SLACK_MS + 8_000, `the 500 turn ends after its backoffs (${failing.took} ms)`);

    const healthy = await turn('healthy', [{ kind: 'reply', text: 'all is well' }]);
    t.match(healthy.done[0], { stop_reason: 'end_turn' });
    t.equal(
      healthy.r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join(''),
      'all is well',
      'the healthy turn answers',
    );
    t.equal(model.clearScript(), 0, 'every scripted step was played');
  });
}
