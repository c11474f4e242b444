import t from 'tap';
import { startChatHarness, streamTurn, waitFor, type ChatHarness } from '../helpers/chat.js';
import { addUser } from '../helpers/app.js';
import type { Client } from '../helpers/client.js';
import { interruptionNote } from '../../core/transcript.js';

/**
 * The conversation belongs to the service (docs/chat.md): the model's request is the branch the
 * page shows, item by item, whatever happened to the agent process (killed, replaced), after edits
 * of a middle message, regenerates, branch switches and a Stop. The scripted model server refuses
 * any request the real API would refuse (emulator/model-wire.ts).
 */

let h: ChatHarness;
t.before(async () => {
  h = await startChatHarness(t, { childEnv: { AGENT_MODEL_TIMEOUT_S: '30' } });
});

/** The page's view of a branch (GET …/messages turns), as a list of model-facing items. */
function fromHistory(turns: any[]): string[] {
  const out: string[] = [];
  for (const x of turns) {
    out.push(`user:${x.prompt}`);
    for (const c of x.tool_calls) out.push(`call:${c.tool}:${JSON.stringify(c.input)}`, `result:${c.tool}`);
    const mark = x.stop_reason === 'cancelled' ? ' [stopped]' : x.stop_reason === 'error' ? ' [error]' : '';
    if (x.text || mark) out.push(`text:${x.text}${mark}`);
  }
  return out;
}

/** A recorded Chat Completions request's conversation, in the same terms. */
function fromRequest(body: any): string[] {
  const out: string[] = [];
  const names = new Map<string, string>();
  for (const m of body.messages) {
    if (m.role === 'user') out.push(`user:${m.content}`);
    else if (m.role === 'tool') out.push(`result:${names.get(m.tool_call_id)}`);
    else if (m.role === 'assistant') {
      let text: string = m.content ?? '';
      for (const [mark, note] of [
        [' [stopped]', interruptionNote('stopped')],
        [' [error]', interruptionNote('error')],
      ] as const) {
        if (text.endsWith(note)) text = text.slice(0, -note.length).replace(/\n\n$/, '') + mark;
      }
      if (text) out.push(`text:${text}`);
      for (const c of m.tool_calls ?? []) {
        names.set(c.id, c.function.name);
        out.push(`call:${c.function.name}:${JSON.stringify(JSON.parse(c.function.arguments))}`);
      }
    }
  }
  return out;
}

async function history(c: Client, sid: string): Promise<any> {
  return (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body;
}

/** Send a turn and return the model's first request of it and the turn's done event. */
async function turn(c: Client, body: Record<string, unknown>): Promise<{ request: any; done: any; sid: string }> {
  const before = h.model.requests.length;
  const r = await streamTurn(c, body);
  if (r.status !== 200) throw new Error(`turn refused: ${JSON.stringify(r.error)}`);
  return { request: h.model.requests[before]?.body, done: r.events.at(-1), sid: r.sessionId! };
}

t.test('the model sees exactly the branch shown: lost agent, middle edit, regenerate, switch, stop', async (t) => {
  const c = await h.login('nora');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: 1, b: 2 } }] },
    { kind: 'reply', text: 'three' },
  );
  const t1 = await turn(c, { message: 'first' });
  const sid = t1.sid;
  t.same(fromRequest(t1.request), ['user:first']);
  h.model.push({ kind: 'reply', text: 'second answer' });
  const t2 = await turn(c, { message: 'second', session_id: sid });
  t.same(
    fromRequest(t2.request),
    [...fromHistory((await history(c, sid)).turns.slice(0, 1)), 'user:second'],
    'turn 2 sees turn 1 with its tool call',
  );
  h.model.push({ kind: 'reply', text: 'third answer' });
  await turn(c, { message: 'third', session_id: sid });

  // The agent process goes away (as a killed sandbox): the next request still holds everything.
  const pid = h.runner.pidOf!(sid)!;
  process.kill(pid, 'SIGKILL');
  await waitFor(() => h.runner.pidOf!(sid) === undefined, 'the agent to be gone');
  h.model.push({ kind: 'reply', text: 'fourth answer' });
  const shown3 = (await history(c, sid)).turns;
  const t4 = await turn(c, { message: 'fourth', session_id: sid });
  t.same(
    fromRequest(t4.request),
    [...fromHistory(shown3), 'user:fourth'],
    'after a lost agent: every earlier message, call and result, in order',
  );
  t.notMatch(JSON.stringify(t4.request), /sandbox|context is gone/i, 'no notice');

  // Edit the middle message: the model sees turn 1 and the edit only.
  const ids = (await history(c, sid)).turns.map((x: any) => x.turn_id);
  h.model.push({ kind: 'reply', text: 'edited answer' });
  const e = await turn(c, { message: 'second, edited', session_id: sid, replaces_turn_id: ids[1] });
  t.same(fromRequest(e.request), [...fromHistory(shown3.slice(0, 1)), 'user:second, edited']);
  let shown = (await history(c, sid)).turns;
  t.same(
    shown.map((x: any) => x.prompt),
    ['first', 'second, edited'],
    'the page shows the new branch',
  );
  t.same(shown[1].siblings, [ids[1], e.done.turn_id], 'the old message stays as a sibling');

  // Regenerate the edited answer: the question once, no replaced answer.
  h.model.push({ kind: 'reply', text: 'regenerated answer' });
  const g = await turn(c, { message: 'second, edited', session_id: sid, replaces_turn_id: e.done.turn_id });
  t.same(
    fromRequest(g.request),
    [...fromHistory(shown3.slice(0, 1)), 'user:second, edited'],
    'the replaced question is not there twice',
  );
  shown = (await history(c, sid)).turns;
  t.equal(shown[1].siblings.length, 3);
  t.equal(shown[1].text, 'regenerated answer');

  // Back to the first branch (its newest turn), then continue it.
  const sw = await c.json('POST', `/api/chat/sessions/${sid}/branch`, { turn_id: ids[1] });
  t.equal(sw.status, 200);
  t.same(
    sw.body.turns.map((x: any) => x.prompt),
    ['first', 'second', 'third', 'fourth'],
  );
  h.model.push({ kind: 'reply', text: 'fifth answer' });
  const t5 = await turn(c, { message: 'fifth', session_id: sid });
  t.same(
    fromRequest(t5.request),
    [...fromHistory(sw.body.turns), 'user:fifth'],
    'the switched-to branch, though the agent last ran another',
  );

  // Stop mid-answer: the partial text is in the next request, marked.
  h.model.push({ kind: 'stall', text: 'partial answ' });
  const stopped = await streamTurn(c, { message: 'long one', session_id: sid }, async (ev, _all, s) => {
    if (ev.type !== 'text_delta') return;
    const running = (await c.json('GET', '/api/chat/sessions')).body.sessions.find(
      (x: any) => x.id === s,
    ).running_turn_id;
    await c.json('POST', `/api/chat/sessions/${s}/turns/${running}/cancel`);
  });
  t.match(stopped.events.at(-1), { type: 'done', stop_reason: 'cancelled' });
  h.model.push({ kind: 'reply', text: 'after stop' });
  const shownBefore = (await history(c, sid)).turns;
  const t7 = await turn(c, { message: 'go on', session_id: sid });
  t.same(fromRequest(t7.request), [...fromHistory(shownBefore), 'user:go on']);
  t.ok(fromRequest(t7.request).includes('text:partial answ [stopped]'), 'the partial answer, marked as interrupted');

  // Usage is stored per turn and summed for the branch.
  const final = await history(c, sid);
  t.ok(final.turns.at(-1).usage.input_tokens > 0, 'the provider counted tokens');
  t.ok(final.usage.input_tokens >= final.turns.at(-1).usage.input_tokens);
  // The admin's turn audit shows them, and /metrics counts them.
  await addUser(h.app.database, 'audit-root', 'audit-root-password', { superuser: true });
  const admin = h.app.client();
  t.equal((await admin.login('audit-root', 'audit-root-password')).status, 200);
  const audit = await admin.json('GET', `/api/admin/turns/${final.turns.at(-1).turn_id}`);
  t.equal(audit.status, 200);
  t.same(audit.body.usage, final.turns.at(-1).usage, 'the turn audit shows the tokens');

  // Off-branch and unknown turns are refused for edits.
  const off = await streamTurn(c, { message: 'x', session_id: sid, replaces_turn_id: e.done.turn_id });
  t.equal(off.status, 409);
  t.equal(off.error.error.code, 'ERR_CHAT_REPLACE_OFF_BRANCH');
  const none = await streamTurn(c, {
    message: 'x',
    session_id: sid,
    replaces_turn_id: '00000000-0000-0000-0000-000000000000',
  });
  t.equal(none.error.error.code, 'ERR_CHAT_TURN_NOT_FOUND');
});

t.test('export: Markdown and JSON of the branch shown', async (t) => {
  const c = await h.login('omar');
  h.model.push(
    { kind: 'reply', tool_calls: [{ name: 'add', arguments: { a: 2, b: 2 } }] },
    { kind: 'reply', text: 'It is **4**.' },
  );
  const r = await turn(c, { message: 'what is 2+2?' });
  const md = await fetch(`${c.base}/api/chat/sessions/${r.sid}/export?format=markdown`, {
    headers: { cookie: c.cookieHeader() },
  });
  t.equal(md.status, 200);
  t.match(md.headers.get('content-type'), /text\/markdown/);
  t.match(md.headers.get('content-disposition'), /attachment; filename="chat-.*\.md"/);
  const text = await md.text();
  t.match(text, /## 1\. You/);
  t.match(text, /what is 2\+2\?/);
  t.match(text, /Tool `add`/);
  t.match(text, /It is \*\*4\*\*\./);
  const js = await c.json('GET', `/api/chat/sessions/${r.sid}/export?format=json`);
  t.equal(js.status, 200);
  t.match(js.body, { format: 'airlock-chat', version: 1, session: { id: r.sid } });
  t.same(
    js.body.transcript.map((i: any) => i.role),
    ['user', 'assistant', 'tool', 'assistant'],
  );
  t.equal(js.body.turns.length, 1);
  const bad = await c.json('GET', `/api/chat/sessions/${r.sid}/export?format=pdf`);
  t.equal(bad.status, 400);
  const other = await h.login('olga');
  t.equal(
    (await other.json('GET', `/api/chat/sessions/${r.sid}/export`)).status,
    404,
    "another user's chat reads as missing",
  );
});
