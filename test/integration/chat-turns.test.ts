import t from 'tap';
import { queryActionLog } from '../../domain/action-log.js';
import { startChatHarness, streamTurn, waitFor, type ChatHarness } from '../helpers/chat.js';
import type { Client } from '../helpers/client.js';

/**
 * Turns that outlive their request (the turn registry), and conversation management: replay a
 * turn by seq while it runs and after, rename, delete, search, regenerate and edit.
 */

let h: ChatHarness;
t.before(async () => {
  h = await startChatHarness(t, { childEnv: { AGENT_MODEL_TIMEOUT_S: '60' } });
});

/** GET …/events?after=N as parsed NDJSON lines. */
async function readEvents(
  c: Client,
  sid: string,
  turnId: string,
  after?: number | string,
): Promise<{ status: number; events: any[]; body?: any }> {
  const q = after === undefined ? '' : `?after=${after}`;
  const res = await fetch(`${c.base}/api/chat/sessions/${sid}/turns/${turnId}/events${q}`, {
    headers: { cookie: c.cookieHeader() },
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, events: [], body: JSON.parse(text) };
  return {
    status: 200,
    events: text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  };
}

t.test('a reader that leaves mid-turn reattaches with after=SEQ and gets exactly the rest', async (t) => {
  const c = await h.login('rita');
  h.model.push(
    { kind: 'reply', text: 'Working. ', tool_calls: [{ name: 'slow', arguments: { ms: 1500 } }] },
    { kind: 'reply', text: 'Finished after the wait.' },
  );
  const first = await streamTurn(c, { message: 'wait a bit' }, (e) => (e.type === 'tool_start' ? 'abort' : undefined));
  const sid = first.sessionId!;
  const turnId = first.headers.get('x-chat-turn-id')!;
  const seen = first.events[first.events.length - 1].seq;
  t.equal(seen, 2, 'saw text_delta and tool_start');
  // Reattach while the tool still runs: the follow-up stream waits for the rest.
  const rest = await readEvents(c, sid, turnId, seen);
  t.equal(rest.status, 200);
  t.equal(rest.events[0].type, 'tool_end');
  t.ok(
    rest.events.slice(1, -1).every((e) => e.type === 'text_delta'),
    'then the answer text',
  );
  t.same(
    rest.events.map((e) => e.seq),
    rest.events.map((_, i) => seen + 1 + i),
    'seq continues where the reader left off',
  );
  t.match(rest.events.at(-1), { type: 'done', stop_reason: 'end_turn', turn_id: turnId, session_id: sid });
  // A finished turn replays whole from memory.
  const all = await readEvents(c, sid, turnId);
  t.same([...first.events, ...rest.events], all.events, 'the same events, byte for byte');
  const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns[0];
  t.equal(stored.text, 'Working. Finished after the wait.');
  t.equal(stored.tool_calls[0].status, 'ok');

  const bad = await readEvents(c, sid, turnId, 'x');
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'ERR_VALIDATION');
  const missing = await readEvents(c, sid, '00000000-0000-0000-0000-000000000000', 0);
  t.equal(missing.status, 404);
  t.equal(missing.body.error.code, 'ERR_CHAT_TURN_NOT_FOUND');
  const other = await h.login('sam');
  const foreign = await readEvents(other, sid, turnId, 0);
  t.equal(foreign.status, 404, "another user's turn reads as missing");
  t.equal(foreign.body.error.code, 'ERR_CHAT_SESSION_NOT_FOUND');
  const foreignStop = await other.json('POST', `/api/chat/sessions/${sid}/turns/${turnId}/cancel`);
  t.equal(foreignStop.status, 404);
});

t.test('rename, search by title and content, delete', async (t) => {
  const c = await h.login('una');
  h.model.push(
    { kind: 'reply', text: 'Quarterly numbers look fine.' },
    { kind: 'reply', text: 'Paris is the capital.' },
  );
  const a = await streamTurn(c, { message: 'review the budget' });
  const b = await streamTurn(c, { message: 'capital of France?' });
  const ids = [a.sessionId!, b.sessionId!];
  const list = (await c.json('GET', '/api/chat/sessions')).body.sessions;
  t.same(list.map((s: any) => s.id).sort(), [...ids].sort());
  t.ok(list.every((s: any) => typeof s.updated_at === 'string' && s.running_turn_id === null && s.turn_count === 1));

  const renamed = await c.json('PATCH', `/api/chat/sessions/${ids[0]}`, { title: '  Budget   review 2026 ' });
  t.equal(renamed.status, 200);
  t.equal(renamed.body.title, 'Budget review 2026');
  const empty = await c.json('PATCH', `/api/chat/sessions/${ids[0]}`, { title: '   ' });
  t.equal(empty.status, 400);
  t.equal(empty.body.error.code, 'ERR_VALIDATION');
  const long = await c.json('PATCH', `/api/chat/sessions/${ids[0]}`, { title: 'x'.repeat(121) });
  t.equal(long.status, 400);

  const search = async (q: string) =>
    (await c.json('GET', `/api/chat/sessions?q=${encodeURIComponent(q)}`)).body.sessions.map((s: any) => s.id);
  t.same(await search('budget REVIEW'), [ids[0]], 'title, case-insensitive');
  t.same(await search('Paris'), [ids[1]], 'answer text');
  t.same(await search('France'), [ids[1]], 'prompt');
  t.same(await search('100%'), [], 'LIKE wildcards are literal');
  t.same(await search('_'), [], 'an underscore is literal');
  const tooLong = await c.json('GET', `/api/chat/sessions?q=${'q'.repeat(201)}`);
  t.equal(tooLong.status, 400);

  const other = await h.login('vic');
  t.equal((await other.json('PATCH', `/api/chat/sessions/${ids[0]}`, { title: 'mine' })).status, 404);
  t.equal((await other.json('DELETE', `/api/chat/sessions/${ids[0]}`)).status, 404);

  const del = await c.json('DELETE', `/api/chat/sessions/${ids[1]}`);
  t.equal(del.status, 204);
  t.same(await search(''), [ids[0]]);
  t.equal((await c.json('GET', `/api/chat/sessions/${ids[1]}/messages`)).status, 404);
  const user = (await c.json('GET', '/api/auth/me')).body;
  const log = (await queryActionLog(h.app.database.sql, {})).filter(
    (r) => r.actor_id === user.id && r.event.startsWith('chat.'),
  );
  t.same(log.map((r) => r.event).sort(), ['chat.deleted', 'chat.renamed']);
  t.match(log.find((r) => r.event === 'chat.deleted')!.data, { session_id: ids[1] });
});

t.test('deleting a chat stops its running turn', async (t) => {
  const c = await h.login('walt');
  h.model.push({ kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 120_000 } }] });
  const r = await streamTurn(c, { message: 'long job' }, (e) => (e.type === 'tool_start' ? 'abort' : undefined));
  const del = await c.json('DELETE', `/api/chat/sessions/${r.sessionId}`);
  t.equal(del.status, 204);
  await waitFor(
    () => h.mcpEvents().some((x) => x.tool === 'slow' && x.ev === 'cancelled'),
    'the slow tool to be cancelled',
  );
  t.equal((await c.json('GET', '/api/chat/sessions')).body.sessions.length, 0);
  h.model.clearScript();
});

t.test('regenerate and edit make a sibling branch; the old turn stays and can be shown again', async (t) => {
  const c = await h.login('xena');
  h.model.push({ kind: 'reply', text: 'one' }, { kind: 'reply', text: 'two' });
  const first = await streamTurn(c, { message: 'first' });
  const sid = first.sessionId!;
  const second = await streamTurn(c, { message: 'second', session_id: sid });
  const t1 = first.events.at(-1).turn_id;
  const t2 = second.events.at(-1).turn_id;
  h.model.push({ kind: 'reply', text: 'two, edited' });
  const edited = await streamTurn(c, { message: 'second (edited)', session_id: sid, replaces_turn_id: t2 });
  t.match(edited.events.at(-1), { type: 'done', stop_reason: 'end_turn' });
  const turns = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
  t.same(
    turns.map((x: any) => [x.prompt, x.text]),
    [
      ['first', 'one'],
      ['second (edited)', 'two, edited'],
    ],
  );
  t.same(turns[1].siblings, [t2, edited.events.at(-1).turn_id], 'the edited turn is a sibling of the old one');
  t.same(turns[0].siblings, [t1]);
  t.ok(
    turns.every((x: any) => typeof x.started_at === 'string' && typeof x.ended_at === 'string'),
    'each message has its time',
  );
  // The replaced turn is kept: its events replay, and its branch can be shown again.
  t.equal((await readEvents(c, sid, t2, 0)).status, 200);
  const back = await c.json('POST', `/api/chat/sessions/${sid}/branch`, { turn_id: t2 });
  t.same(
    back.body.turns.map((x: any) => x.text),
    ['one', 'two'],
  );
  const bad = await c.json('POST', `/api/chat/sessions/${sid}/branch`, { turn_id: 'nope' });
  t.equal(bad.status, 404);
  t.equal(bad.body.error.code, 'ERR_CHAT_TURN_NOT_FOUND');
});
