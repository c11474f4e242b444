/**
 * Faults under load, the short run (docs/capacity.md "Chaos"): four simulated users chat through
 * the real web API of a real `airlock serve` child process (scripted model, Google emulator for
 * the mail) while sandboxes are docker-killed and the daemon is SIGKILLed and started again on its
 * data folder. Every turn ends with exactly one `done` (a stream the dying daemon cut is followed
 * again through the turn's events route), none that got a `done` is missing from its chat's
 * history, every model request of a chat held the chat's earlier stored turns, and no mail reached
 * the Google emulator twice. The longer run with PostgreSQL restarts and a lost fleet node is
 * `npm run bench -- chaos`.
 */
import t from 'tap';
import type Docker from 'dockerode';
import { chaosCounts, playFaults } from '../helpers/load-chaos.js';
import { startRig } from '../helpers/load-rig.js';
import { LoadUsers } from '../helpers/load-users.js';
import { dockerOrSkip, ensureTestImage, ENGINE_ENV } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    'under load: sandboxes killed and the daemon SIGKILLed; no turn hangs, is lost or loses context; no mail twice',
    async (t) => {
      const rig = await startRig({
        image,
        nodes: 1,
        users: 4,
        modelDelayMs: 100,
        env: { ...ENGINE_ENV, AIRLOCK_POOL_SIZE: '2' },
      });
      const load = new LoadUsers(rig, {
        turnsPerChat: 4,
        thinkMs: [300, 1200],
        toolShare: 0.2,
        mailShare: 0.3,
        boundMs: 90_000,
      });
      let closed = false;
      t.teardown(async () => {
        await load.stop();
        if (!closed) await rig.close(docker as Docker);
      });
      load.setActive(4);
      const log = await playFaults(
        docker,
        rig,
        [
          { at_s: 10, what: 'kill-sandbox' },
          { at_s: 18, what: 'kill-sandbox' },
          { at_s: 25, what: 'sigkill-daemon', node: 0 },
          { at_s: 35, what: 'kill-sandbox' },
        ],
        45,
      );
      await load.stop();
      const c = chaosCounts(rig, load);
      t.comment(log.join('\n'));
      t.comment(JSON.stringify({ ...c, details: undefined }));
      t.ok(
        log.some((l) => /SIGKILL node-a, back/.test(l)),
        'the daemon was SIGKILLed and came back',
      );
      t.ok(c.ended_with_done >= 10, `turns ran to their done (${c.ended_with_done} of ${c.turns})`);
      t.equal(c.hung, 0, 'no turn hung: each got its done within the bound');
      t.equal(c.more_than_one_done, 0, 'no turn got two done events');
      t.ok(c.chats_checked >= 4, `every user's chat history was read back (${c.chats_checked})`);
      t.same(c.details.lost, [], 'no turn that got a done is missing from its history');
      t.same(c.details.contextGaps, [], "each model request held the chat's earlier turns");
      t.ok(c.mail_received >= 1, `mail was sent under the faults (${c.mail_received})`);
      t.same(c.details.sentTwice, [], 'no mail reached the mailbox twice');
      t.same(c.details.reportedNotReceived, [], 'every send a turn reported as done is in the mailbox');
      t.ok(
        c.cut_and_followed_again >= 1,
        `a stream the SIGKILL cut was followed again to its done (${c.cut_and_followed_again})`,
      );

      closed = true;
      const left = await rig.close(docker as Docker);
      t.comment(`left after SIGTERM: ${JSON.stringify(left)}`);
      t.equal(left.containers, 0, 'no container of the daemon is left after it stopped');
      t.equal(left.loops, 0, 'no loop device under its data folder');
      t.same(
        left.mounts,
        [],
        'no mount is left: no workspace, and not the sandboxes tmpfs a SIGKILLed daemon left (the next one adopted it)',
      );
    },
  );
}
