import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Encryptor } from '../../core/index.js';
import * as chat from '../../domain/chat/store.js';
import { MemoryStore } from '../../domain/memories.js';
import { createUser } from '../../domain/users.js';
import { tempDir } from '../helpers/app.js';
import { TEST_ENGINE, openTestDatabase } from '../helpers/db.js';

/** The chat and memory stores on this pass's engine (npm test runs this file on SQLite and PostgreSQL). */

t.test(`chat store on ${TEST_ENGINE}`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const ann = await createUser(db, { username: 'ann' });
  const ben = await createUser(db, { username: 'ben' });

  const s = await chat.createSession(db, ann.id, '  Sales   of week\n12 in 100%_ detail ');
  t.equal(s.title, 'Sales of week 12 in 100%_ detail', 'title from the first message, spaces folded');
  t.same(await chat.getOwnedSession(db, ben.id, s.id), undefined, "another user's session reads as missing");
  t.equal((await chat.getOwnedSession(db, ann.id, s.id))?.id, s.id);

  // Turns started in the same millisecond keep their order.
  const ids = ['t-c', 't-a', 't-b'];
  for (const [i, id] of ids.entries()) await chat.startTurn(db, s.id, id, `prompt ${i}`);
  t.same(
    (await chat.messages(db, s.id)).map((m) => m.turn_id),
    ids,
    'oldest first, in start order',
  );
  t.same(await chat.placeTurn(db, s.id), { parent: 't-b', head: 't-b' }, 'a new turn continues the head');
  // The admin audit page finds a turn's session and owner by the turn id alone.
  t.same(await chat.turnOwner(db, 't-a'), { session_id: s.id, title: s.title, user_id: ann.id, username: 'ann' });
  t.equal(await chat.turnOwner(db, 'no-such-turn'), undefined);

  await chat.toolStarted(db, 't-b', 'c1', 'add', { a: 1 });
  await chat.toolStarted(db, 't-b', 'c1', 'add', { a: 99 }); // a repeated tool_start is ignored
  await chat.toolStarted(db, 't-b', 'c2', 'slow', {});
  await chat.toolEnded(db, 't-b', 'c1', 'add', true, 2, undefined, 12.4);
  await chat.toolEnded(db, 't-b', 'c3', 'late', false, undefined, 'boom', 3); // tool_end without tool_start
  t.equal(await chat.endTurn(db, 't-b', 'answer', 'cancelled'), true);
  const turn = await chat.storedTurn(db, s.id, 't-b');
  t.match(turn, { turn_id: 't-b', prompt: 'prompt 2', text: 'answer', status: 'done', stop_reason: 'cancelled' });
  t.same(
    turn!.tool_calls.map((c) => [c.call_id, c.status, c.input, c.output, c.error, c.duration_ms]),
    [
      ['c1', 'ok', { a: 1 }, 2, undefined, 12],
      ['c2', 'cancelled', {}, undefined, undefined, null],
      ['c3', 'error', {}, undefined, 'boom', 3],
    ],
    'the running tool ends with the turn',
  );
  // The chat route says when the turn started no tool: the end skips the running-tools update.
  t.equal(
    await chat.endTurn(db, 't-a', 'x', 'error', { code: 'ERR_SANDBOX_FAILED', message: 'went wrong' }, false),
    true,
  );
  t.same((await chat.storedTurn(db, s.id, 't-a'))?.error, { code: 'ERR_SANDBOX_FAILED', message: 'went wrong' });
  t.match(await chat.storedTurn(db, s.id, 't-a'), { text: 'x', status: 'done', stop_reason: 'error', tool_calls: [] });
  t.same(await chat.storedTurn(db, 'nope', 't-a'), undefined, 'a turn is found only in its own session');

  // Big outputs are capped, not refused.
  await chat.startTurn(db, s.id, 't-big', 'big');
  await chat.toolStarted(db, 't-big', 'b1', 'dump', {});
  await chat.toolEnded(db, 't-big', 'b1', 'dump', true, 'y'.repeat(100_000), undefined, 1);
  t.match((await chat.storedTurn(db, s.id, 't-big'))!.tool_calls[0].output, { truncated: true });

  // Search: title, prompts and answers, case-insensitive, wildcards literal.
  const other = await chat.createSession(db, ann.id, 'Nothing here');
  await chat.startTurn(db, other.id, 't-o', 'about PAYROLL');
  await chat.createSession(db, ben.id, 'payroll of ben');
  const search = async (q?: string) => (await chat.listSessions(db, ann.id, q)).map((x) => x.id);
  t.same((await search()).sort(), [s.id, other.id].sort());
  t.same(await search('payroll'), [other.id], 'a prompt matches, whatever its case; only own sessions');
  t.same(await search('ANSWER'), [s.id], 'an answer matches');
  t.same(await search('100%_'), [s.id], '% and _ are literal');
  t.same(await search('1_0'), [], '_ is no wildcard');
  const listed = await chat.listSessions(db, ann.id);
  t.equal(listed.find((x) => x.id === s.id)?.turn_count, 4, 'turn count');
  t.equal(listed[0].id, other.id, 'newest activity first');

  await chat.renameSession(db, s.id, '  New\ttitle ');
  t.equal(await chat.sessionTitle(db, s.id), 'New title');

  await chat.dropTurn(db, 't-b');
  t.same(
    (await chat.messages(db, s.id)).map((m) => m.turn_id),
    ['t-c', 't-a', 't-big'],
  );
  t.equal(
    Number(
      (
        await db
          .selectFrom('chat_tool_calls')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('turn_id', '=', 't-b')
          .executeTakeFirstOrThrow()
      ).n,
    ),
    0,
  );

  await chat.deleteSession(db, s.id);
  t.same(await chat.getOwnedSession(db, ann.id, s.id), undefined);
  t.same(await chat.messages(db, s.id), []);
  t.equal(await chat.endTurn(db, 't-big', 'late', 'end_turn'), false, 'ending a turn of a deleted chat writes nothing');
  const left = await db.selectFrom('chat_tool_calls').select('turn_id').execute();
  t.same(left, [], 'tool calls went with their chat');
});

t.test(`a failed write leaves nothing half-written on ${TEST_ENGINE}`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const ann = await createUser(db, { username: 'ann' });
  await t.rejects(
    chat.inTransaction(db, async (trx) => {
      await chat.createSession(trx, ann.id, 'first', 'sess-1');
      await chat.startTurn(trx, 'sess-1', 'turn-1', 'hello');
      await chat.startTurn(trx, 'sess-1', 'turn-1', 'again'); // duplicate id: fails
    }),
  );
  t.same(await chat.getOwnedSession(db, ann.id, 'sess-1'), undefined, 'the session went with its failed first turn');
  const s = await chat.createSession(db, ann.id, 'second');
  await chat.startTurn(db, s.id, 'turn-2', 'hello');
  await t.rejects(chat.startTurn(db, s.id, 'turn-2', 'dup'));
  t.equal(
    (await chat.getOwnedSession(db, ann.id, s.id))?.updated_at,
    (await chat.storedTurn(db, s.id, 'turn-2'))?.started_at,
    'the failed start did not touch the session',
  );
});

t.test(`memory store on ${TEST_ENGINE}`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const enc = new Encryptor(randomBytes(32));
  const store = new MemoryStore(db, enc);
  const ann = await createUser(db, { username: 'ann' });
  const ben = await createUser(db, { username: 'ben' });
  const a1 = await store.add(ann.id, 'likes bars', 'user');
  const a2 = await store.add(ann.id, 'payroll 1.2M', 'bi');
  const b1 = await store.add(ben.id, 'ben note', 'user');
  t.ok(b1.id > a2.id && a2.id > a1.id);
  t.same(
    (await store.list(ann.id)).map((m) => m.content),
    ['payroll 1.2M', 'likes bars'],
    'newest first, decrypted',
  );
  t.same(
    (await store.list(ann.id, { excludeSource: 'bi' })).map((m) => m.id),
    [a1.id],
  );
  t.same(
    (await store.list(ann.id, { source: 'bi' })).map((m) => m.id),
    [a2.id],
  );
  t.equal(await store.count(ann.id, 'bi'), 1);
  t.equal(await store.get(ben.id, a1.id), undefined, "another user's entry reads as missing");
  t.equal((await store.get(ann.id, a1.id))?.content, 'likes bars');
  const raw = await db.selectFrom('memories').select('content').where('id', '=', a1.id).executeTakeFirstOrThrow();
  t.notMatch(raw.content, /likes/, 'encrypted at rest');
  t.equal(await store.delete(ben.id, a1.id), false);
  t.equal(await store.delete(ann.id, a1.id), true);
  t.equal(await store.delete(ann.id, a1.id), false);
  const a3 = await store.add(ann.id, 'after delete', 'user');
  t.ok(a3.id > b1.id, 'ids are never reused');
});
