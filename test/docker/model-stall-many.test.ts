/**
 * Many users on one model while it stalls, through `airlock demo`'s own wiring (real sandboxes, the
 * credential proxy, the egress gateway), both models added by an admin, DEFAULT bounds (docs/chat.md
 * "Bounds", issue 41): twenty chats on the stalling model each end with a `done` naming why
 * (ERR_MODEL_TIMEOUT) within the stall bound plus slack, and meanwhile a user of another, healthy
 * model gets answers, before the stalled turns end.
 *
 * Twenty chats are twenty sandboxes (one per chat, the product's path); the demo user may hold
 * them (AIRLOCK_MAX_SANDBOXES_PER_USER raised for the test, the cap is not what is under test).
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { streamTurn } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { startTestDemo } from './demo-rig.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';

const KEY = 'sk-stall-many-key-0123456789abcdef';
const CHATS = 20;
/** The documented defaults: first event 60 s (the stall sends one chunk first), then 30 s between events. */
const STALL_MS = 30_000;
/** Slack past the bound: twenty cold sandbox starts at once on a small machine come before it. */
const SLACK_MS = 120_000;

t.setTimeout(600_000);

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    `${CHATS} chats on a stalling model end with ERR_MODEL_TIMEOUT; another model answers meanwhile`,
    async (t) => {
      const stalling = await openaiModel.start({ apiKey: KEY, respond: () => ({ kind: 'stall', text: 'one chunk' }) });
      t.teardown(() => stalling.close());
      const healthy = await openaiModel.start({ apiKey: KEY, respond: () => ({ kind: 'reply', text: 'all is well' }) });
      t.teardown(() => healthy.close());
      const demo = await startTestDemo(t, docker!, image, 'stall-many', {
        AIRLOCK_MAX_SESSIONS: '32',
        AIRLOCK_MAX_SANDBOXES_PER_USER: String(CHATS + 2),
      });
      const admin = new Client(demo.url);
      t.equal((await admin.login(demo.users.admin.username, demo.users.admin.password)).status, 200);
      for (const [id, m] of [
        ['stalling', stalling],
        ['healthy', healthy],
      ] as const) {
        const made = await admin.json('POST', '/api/admin/chat-models', {
          id,
          label: id,
          provider: 'openai',
          model: `gpt-${id}`,
          base_url: m.url,
          api_key: KEY,
          context_tokens: 16_000,
        });
        t.equal(made.status, 201, JSON.stringify(made.body));
      }
      const user = new Client(demo.url);
      t.equal((await user.login(demo.users.user.username, demo.users.user.password)).status, 200);

      const answer = async () => {
        const r = await streamTurn(admin, { message: 'hello', model_id: 'healthy' });
        const text = r.events
          .filter((e) => e.type === 'text_delta')
          .map((e) => e.text)
          .join('');
        return { done: r.events.at(-1), text, at: Date.now() };
      };
      // The healthy model's user has a warm chat before the stall (its cold start is not under test).
      t.equal((await answer()).text, 'all is well', 'the healthy model answers before the stall');

      const t0 = Date.now();
      const stalled = Array.from({ length: CHATS }, (_, i) =>
        streamTurn(user, { message: `stall ${i}`, model_id: 'stalling' }).then((r) => ({ r, at: Date.now() })),
      );
      await waitFor(
        () => stalling.requests.length >= CHATS || undefined,
        `${CHATS} requests at the stalling model`,
        SLACK_MS,
      );
      const during = [await answer(), await answer(), await answer()];
      const ends = await Promise.all(stalled);
      const firstStallEnd = Math.min(...ends.map((e) => e.at));
      for (const [i, a] of during.entries()) {
        t.match(
          a.done,
          { type: 'done', stop_reason: 'end_turn' },
          `healthy turn ${i + 1} during the stall ends normally`,
        );
        t.equal(a.text, 'all is well', `healthy turn ${i + 1} answers`);
      }
      t.ok(during.at(-1)!.at < firstStallEnd, 'the healthy answers came while every stalled turn was still open');
      for (const [i, { r, at }] of ends.entries()) {
        const done = r.events.filter((e) => e.type === 'done');
        t.equal(done.length, 1, `stalled chat ${i}: one done`);
        t.match(
          done[0],
          { stop_reason: 'error', error: { code: 'ERR_MODEL_TIMEOUT' } },
          `stalled chat ${i}: the done names why`,
        );
        t.ok(at - t0 < STALL_MS + SLACK_MS, `stalled chat ${i}: ended within its bound plus slack (${at - t0} ms)`);
      }
      t.comment(
        `stalled turns ended between ${Math.min(...ends.map((e) => e.at - t0))} and ${Math.max(...ends.map((e) => e.at - t0))} ms`,
      );
    },
  );
}
