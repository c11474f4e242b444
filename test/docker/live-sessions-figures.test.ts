/**
 * Live sessions' figures through the real API (GET /api/admin/sessions) with real sandboxes: a
 * turn stuck on a silent model shows its phase and how long it has been in it, the sandbox's
 * memory (PSS) and CPU time come from its cgroup, and an idle session shows its idle time.
 */
import t from 'tap';
import { hashPassword } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { Client } from '../helpers/client.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { dockerOrSkip, ensureTestImage } from './helpers.js';
import { chatRig } from './chat-e2e-rig.js';
import type { LiveSession } from '../../web/admin-api.js';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { startStalling } = chatRig(docker, image);

  t.test('a stuck turn shows its phase and time; memory, CPU and idle time are listed', async (t) => {
    const { d, c } = await startStalling(t, 'Back again.');
    await createUser(d.database.sql, {
      username: 'root',
      email: 'root@example.test',
      passwordHash: await hashPassword('root-password'),
      isSuperuser: true,
    });
    const admin = new Client(d.web.url);
    t.equal((await admin.login('root', 'root-password')).status, 200);
    const listed = async (sid: string | undefined): Promise<LiveSession | undefined> => {
      const r = await admin.json('GET', '/api/admin/sessions');
      if (r.status !== 200) throw new Error(`GET /api/admin/sessions: ${r.status}`);
      return (r.body.sessions as LiveSession[]).find((s) => s.id === sid);
    };
    let sid: string | undefined;
    // The model says "Thinking" and then nothing: the turn is stuck in "model answering".
    const turn = streamTurn(c, { message: 'take your time' }, (e, _all, sessionId) => {
      if (e.type === 'text_delta') sid = sessionId;
    });
    await waitFor(() => sid, 'the model to start answering');
    const stuck = await waitFor(async () => {
      const s = await listed(sid);
      return s?.turn && s.turn.phase_s >= 2 ? s : undefined;
    }, 'the stuck phase to last 2 s');
    t.equal(stuck.turn!.phase, 'model answering', 'the phase the turn is stuck in');
    t.ok(stuck.turn!.running_s >= stuck.turn!.phase_s, 'the turn runs at least as long as its phase');
    t.equal(stuck.idle_s, null, 'not idle while a turn runs');
    t.equal(stuck.status, 'busy');
    if (process.getuid?.() === 0) {
      t.ok(stuck.memory_bytes! > 10 * 1048576, `memory: the PSS of its processes (${stuck.memory_bytes} bytes)`);
      t.ok(stuck.cpu_seconds! > 0, `CPU time (${stuck.cpu_seconds} s)`);
    } else {
      t.comment('not root: the cgroup PSS figures are not readable here');
    }
    // The admin kills it (the stuck turn ends); the chat goes on in a new sandbox, then idles.
    t.equal((await admin.json('POST', `/api/admin/sessions/${sid}/kill`)).status, 204);
    t.match((await turn).events.at(-1), { type: 'done', stop_reason: 'error' });
    const next = await streamTurn(c, { message: 'again', session_id: sid });
    t.match(next.events.at(-1), { type: 'done', stop_reason: 'end_turn' });
    const idle = await waitFor(async () => {
      const s = await listed(sid);
      return s && s.idle_s !== null && s.idle_s >= 1 ? s : undefined;
    }, 'an idle second');
    t.equal(idle.turn, null, 'no turn runs');
    t.equal(idle.status, 'ready');
  });
}
