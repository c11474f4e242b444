import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createMetrics } from '../../core/index.js';
import * as chat from '../../domain/chat/store.js';
import { feedbackCounts } from '../../domain/chat/feedback.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

/**
 * Feedback on answers over HTTP (web/feedback-routes.ts), on this pass's engine: the chat's owner
 * rates a finished answer up or down with an optional note (≤ 2,000 characters), one per user
 * per turn, changeable and removable; another user's chat is 404; the admin turn audit shows it
 * and /metrics counts the ratings given.
 */

t.test(`feedback on answers on ${TEST_ENGINE}`, async (t) => {
  const metrics = createMetrics();
  const app = await startTestApp(t, { services: { metrics } });
  const db = app.database.sql;
  const ann = await addUser(app.database, 'ann', 'pw-123456789');
  await addUser(app.database, 'ben', 'pw-123456789');
  await addUser(app.database, 'root', 'pw-123456789', { superuser: true });
  const s = await chat.createSession(db, ann.id, 'Numbers');
  const done = randomUUID();
  await chat.startTurn(db, s.id, done, 'add 2 and 3');
  await chat.endTurn(db, done, 'It is 5.', 'end_turn');
  const running = randomUUID();
  await chat.startTurn(db, s.id, running, 'still going');

  const annC = app.client();
  await annC.login('ann', 'pw-123456789');
  const url = (turn: string) => `/api/chat/sessions/${s.id}/turns/${turn}/feedback`;
  t.same((await annC.json('GET', `/api/chat/sessions/${s.id}/feedback`)).body, { feedback: [] });

  const up = await annC.json('PUT', url(done), { rating: 'up' });
  t.equal(up.status, 200);
  t.match(up.body, { turn_id: done, rating: 'up', note: null });
  const down = await annC.json('PUT', url(done), { rating: 'down', note: '  It forgot the units.  ' });
  t.match(down.body, { rating: 'down', note: 'It forgot the units.' }, 'changed; the note trimmed');
  t.match(
    (await annC.json('GET', `/api/chat/sessions/${s.id}/feedback`)).body,
    { feedback: [{ turn_id: done, rating: 'down', note: 'It forgot the units.' }] },
    'one per user per turn',
  );
  t.same(await feedbackCounts(db), { up: 0, down: 1 });
  await annC.json('PUT', url(done), { rating: 'down', note: 'same rating, new note' });
  const counted = await metrics.registry.getSingleMetricAsString('airlock_chat_feedback_total');
  t.match(counted, /airlock_chat_feedback_total\{rating="up"\} 1/);
  t.match(counted, /airlock_chat_feedback_total\{rating="down"\} 1/, 'a new note on the same rating is no new rating');

  // Refused: a bad body, a note over 2,000 characters, a running turn, a turn of no chat of hers.
  for (const body of [{ rating: 'meh' }, { rating: 'up', note: 'x'.repeat(2001) }, { rating: 'up', extra: 1 }, {}])
    t.match(
      await annC.json('PUT', url(done), body),
      { status: 400, body: { error: { code: 'ERR_VALIDATION' } } },
      JSON.stringify(body).slice(0, 40),
    );
  t.equal(
    (await annC.json('PUT', url(done), { rating: 'up', note: 'y'.repeat(2000) })).status,
    200,
    '2,000 characters is allowed',
  );
  t.match(await annC.json('PUT', url(running), { rating: 'up' }), {
    status: 409,
    body: { error: { code: 'ERR_FEEDBACK_TURN_RUNNING' } },
  });
  t.match(await annC.json('PUT', url('no-such-turn'), { rating: 'up' }), {
    status: 404,
    body: { error: { code: 'ERR_CHAT_TURN_NOT_FOUND' } },
  });

  // Another user: 404 for the chat, whatever the turn.
  const benC = app.client();
  await benC.login('ben', 'pw-123456789');
  t.match(await benC.json('PUT', url(done), { rating: 'up' }), {
    status: 404,
    body: { error: { code: 'ERR_CHAT_SESSION_NOT_FOUND' } },
  });
  t.equal((await benC.json('GET', `/api/chat/sessions/${s.id}/feedback`)).status, 404);
  t.equal((await benC.json('DELETE', url(done))).status, 404);

  // The admin turn audit shows it.
  const root = app.client();
  await root.login('root', 'pw-123456789');
  const audit = await root.json('GET', `/api/admin/turns/${done}`);
  t.match(audit.body.feedback, [{ user: { id: ann.id, username: 'ann' }, rating: 'up', note: 'y'.repeat(2000) }]);

  // Taken back.
  t.equal((await annC.request('DELETE', url(done))).status, 204);
  t.same((await annC.json('GET', `/api/chat/sessions/${s.id}/feedback`)).body, { feedback: [] });
  t.same((await root.json('GET', `/api/admin/turns/${done}`)).body.feedback, []);
  // Deleting the chat deletes its feedback.
  await annC.json('PUT', url(done), { rating: 'up' });
  await annC.request('DELETE', `/api/chat/sessions/${s.id}`);
  t.same(await feedbackCounts(db), { up: 0, down: 0 });
});
