import t from 'tap';
import type { Test } from 'tap';
import { join } from 'node:path';
import {
  createLogger,
  createMetrics,
  isAppError,
  type ChatEvent,
  type TurnResult,
  type TurnRunner,
} from '../../core/index.js';
import { LocalTurnRunner } from '../../daemon/dev/local-runner.js';
import * as store from '../../domain/chat/store.js';
import { TurnService, type LiveTurn, type NewTurn, type TurnServiceDeps } from '../../domain/chat/turn-service.js';
import type { Sql } from '../../domain/db/index.js';
import { createUser } from '../../domain/users.js';
import * as openaiModel from '../../emulator/model-openai.js';
import type { ModelServer } from '../../emulator/model-script.js';
import type { StoredTurn } from '../../core/chat-history.js';
import { tempDir } from '../helpers/app.js';
import { DIST, FAKE_MCP, MODEL_PLACEHOLDER } from '../helpers/chat.js';
import { TEST_ENGINE, openTestDatabase } from '../helpers/db.js';

/**
 * The chat turn without HTTP (domain/chat/turn-service.ts), on this pass's engine: a real store,
 * the local development runner (the real agent child) over a scripted model server, and the
 * service's own numbering, storage order, replace, cancel and failure handling.
 */

const log = createLogger({ level: 'silent' });

interface Rig {
  sql: Sql;
  model: ModelServer;
  service(opts?: { agentMain?: string; onTurnEnd?: TurnServiceDeps['onTurnEnd']; runner?: TurnRunner | null }): {
    service: TurnService;
    runner?: TurnRunner;
    metrics: ReturnType<typeof createMetrics>;
  };
  /** A new local runner (closed at teardown). */
  local(): LocalTurnRunner;
  userId: number;
}

async function rig(t: Test): Promise<Rig> {
  const dir = tempDir(t, 'airlock-turns-');
  const sql = (await openTestDatabase(t, dir)).sql;
  const model = await openaiModel.start({ apiKey: MODEL_PLACEHOLDER });
  t.teardown(() => model.close());
  const env = {
    AGENT_MODEL_PROVIDER: 'openai',
    AGENT_MODEL: 'gpt-scripted',
    AGENT_MODEL_BASE_URL: model.url,
    AGENT_MODEL_API_KEY: MODEL_PLACEHOLDER,
    AGENT_MAX_STEPS: '6',
    AGENT_MODEL_TIMEOUT_S: '60',
    AGENT_MCP_SERVERS: JSON.stringify([{ name: 'fake', command: process.execPath, args: [FAKE_MCP] }]),
    MAIL_BASE_URL: 'http://127.0.0.1:9/mail',
    MAIL_API_KEY: 'placeholder-mail-key',
  };
  const user = await createUser(sql, { username: 'tess' });
  return {
    sql,
    model,
    userId: user.id,
    service(opts = {}) {
      let runner: TurnRunner | undefined = opts.runner ?? undefined;
      if (opts.runner === undefined) {
        const local = new LocalTurnRunner({
          env,
          log,
          agentMain: opts.agentMain,
          cancelGraceMs: 5000,
          readyTimeoutMs: 150_000,
        });
        t.teardown(() => local.close());
        runner = local;
      }
      const metrics = createMetrics();
      const service = new TurnService({
        sql,
        services: { chat: { runner: runner ?? null }, metrics },
        model: async () => ({ contextTokens: 100_000, revision: 'default:1' }),
        onTurnEnd: opts.onTurnEnd,
      });
      t.teardown(() => service.close());
      return { service, runner, metrics };
    },
    local() {
      const local = new LocalTurnRunner({ env, log, cancelGraceMs: 5000, readyTimeoutMs: 150_000 });
      t.teardown(() => local.close());
      return local;
    },
  };
}

/** Every event of the turn, read by one reader until done; `on` sees each as it comes. */
async function readAll(
  service: TurnService,
  turn: LiveTurn,
  on?: (e: ChatEvent) => void | Promise<void>,
): Promise<ChatEvent[]> {
  const out: ChatEvent[] = [];
  for await (const e of service.follow(turn, 0)) {
    out.push(e);
    await on?.(e);
  }
  return out;
}

const start = (s: TurnService, r: Rig, x: Partial<NewTurn> & { message: string }) =>
  s.start({ userId: r.userId, log, ...x });

t.test(`numbering and storage order (${TEST_ENGINE})`, async (t) => {
  const r = await rig(t);
  const ended: [string, TurnResult['stop_reason']][] = [];
  // The local runner; it hands back its result once the test holds the turn's row (below), and says so.
  const local = r.local();
  let holding!: () => void;
  const rowHeld = new Promise<void>((resolve) => (holding = resolve));
  let returned!: () => void;
  const runnerReturned = new Promise<void>((resolve) => (returned = resolve));
  const runner: TurnRunner = {
    runTurn: async (req) => {
      const result = await local.runTurn(req);
      await rowHeld;
      returned();
      return result;
    },
  };
  const { service, metrics } = r.service({
    runner,
    onTurnEnd: (turn, result) => ended.push([turn.turnId, result.stop_reason]),
  });
  r.model.push(
    { kind: 'reply', text: 'Adding. ', tool_calls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
    { kind: 'reply', text: 'It is 5.' },
  );
  const turn = await start(service, r, { message: 'what is 2 + 3?' });
  t.equal(service.runningIn(turn.sessionId), turn, 'the session has a running turn');
  let storedAtDone: StoredTurn | undefined;
  let doneWhileHeld: boolean | undefined;
  const events = await readAll(service, turn, async (e) => {
    if (e.type === 'tool_end') {
      // Hold the turn's row (a transaction that wrote it) until the runner has returned: the end's
      // write waits for it, and so must done.
      const hold = store.inTransaction(r.sql, async (trx) => {
        await trx.updateTable('chat_turns').set({ prompt: 'what is 2 + 3?' }).where('id', '=', turn.turnId).execute();
        holding();
        await runnerReturned;
        await new Promise((resolve) => setImmediate(resolve));
        doneWhileHeld = turn.events.some((x) => x.type === 'done');
      });
      await rowHeld;
      void hold.catch((err: unknown) => t.fail(String(err))); // ends by itself once the runner returned
    }
    // When done is out, the store already holds the whole turn: its writes came first.
    if (e.type === 'done') storedAtDone = await store.storedTurn(r.sql, turn.sessionId, turn.turnId);
  });
  t.equal(doneWhileHeld, false, 'no done while the end of the turn could not be stored');
  t.same(
    events.map((e) => e.seq),
    events.map((_, i) => i + 1),
    'seq 1, 2, 3 … with no gap',
  );
  t.equal(events.filter((e) => e.type === 'done').length, 1, 'exactly one done');
  t.match(events.at(-1), { type: 'done', stop_reason: 'end_turn', session_id: turn.sessionId, turn_id: turn.turnId });
  const types = events.map((e) => e.type);
  t.ok(types.indexOf('tool_start') < types.indexOf('tool_end'), 'tool_start before tool_end');
  const text = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');
  t.equal(text, 'Adding. It is 5.');
  t.match(storedAtDone, { status: 'done', stop_reason: 'end_turn', text, prompt: 'what is 2 + 3?' });
  t.match(storedAtDone?.tool_calls, [{ tool: 'add', status: 'ok', input: { a: 2, b: 3 } }]);
  t.equal(service.runningIn(turn.sessionId), undefined, 'no running turn after done');
  t.same(ended, [[turn.turnId, 'end_turn']], 'the end hook ran once');
  t.equal(
    (await metrics.turns.get()).values.find((v) => v.labels.stop_reason === 'end_turn')?.value,
    1,
    'the turn is counted',
  );

  // From memory: the same events; in another process (a new service): rebuilt from the store.
  const found = await service.events(turn.sessionId, turn.turnId);
  t.ok('live' in found && found.live.events.length === events.length);
  const other = r.service({ runner: null }).service;
  const stored = await other.events(turn.sessionId, turn.turnId);
  t.ok('stored' in stored);
  if ('stored' in stored) {
    t.same(
      stored.stored.map((e) => [e.seq, e.type]),
      [
        [1, 'tool_start'],
        [2, 'tool_end'],
        [3, 'text_delta'],
        [4, 'done'],
      ],
    );
  }
  await t.rejects(
    other.events('no-such-session', turn.turnId),
    { code: 'ERR_CHAT_TURN_NOT_FOUND' },
    'a turn is found only in its own session',
  );
  await t.rejects(start(other, r, { message: 'hi' }), { code: 'ERR_CHAT_UNAVAILABLE' }, 'no runner: no chat');
});

t.test(
  `replace: an edit goes beside the turn it replaces, with the branch before it as context (${TEST_ENGINE})`,
  async (t) => {
    const r = await rig(t);
    const { service } = r.service();
    r.model.push(
      { kind: 'reply', text: 'Hello Ann.' },
      { kind: 'reply', text: 'Blue is nice.' },
      { kind: 'reply', text: 'Green is nice.' },
    );
    const first = await start(service, r, { message: 'I am Ann' });
    await readAll(service, first);
    const session = (await store.getOwnedSession(r.sql, r.userId, first.sessionId))!;
    const second = await start(service, r, { message: 'I like blue', session });
    await readAll(service, second);
    const edit = await start(service, r, { message: 'I like green', session, replacesTurnId: second.turnId });
    const events = await readAll(service, edit);
    t.match(events.at(-1), { type: 'done', stop_reason: 'end_turn' });
    const turns = await store.messages(r.sql, first.sessionId);
    t.same(
      turns.map((x) => x.turn_id),
      [first.turnId, edit.turnId],
      'the branch shown: the first turn, then the edit',
    );
    t.equal(turns[1].parent_id, first.turnId, 'the edit continues what the replaced turn continued');
    t.same(turns[1].siblings, [second.turnId, edit.turnId], 'the replaced turn stays as a sibling');
    const asked = JSON.stringify(r.model.requests.at(-1)?.body.messages);
    t.match(asked, /I am Ann/, 'the model got the branch before the edit');
    t.notMatch(asked, /I like blue/, 'not the replaced turn');

    await t.rejects(
      start(service, r, { message: 'x', replacesTurnId: edit.turnId }),
      { code: 'ERR_CHAT_TURN_NOT_FOUND' },
      'a new chat replaces nothing',
    );
    await t.rejects(start(service, r, { message: 'x', session, replacesTurnId: 'no-such-turn' }), {
      code: 'ERR_CHAT_TURN_NOT_FOUND',
    });
  },
);

t.test(
  `cancel: the running turn stops with one done, cancelled, and so does its tool call (${TEST_ENGINE})`,
  async (t) => {
    const r = await rig(t);
    const { service } = r.service();
    r.model.push({ kind: 'reply', text: 'Waiting. ', tool_calls: [{ name: 'slow', arguments: { ms: 60_000 } }] });
    const turn = await start(service, r, { message: 'wait a minute' });
    const session = (await store.getOwnedSession(r.sql, r.userId, turn.sessionId))!;
    const events = await readAll(service, turn, async (e) => {
      if (e.type !== 'tool_start') return;
      t.throws(() => service.assertIdle(turn.sessionId), { code: 'ERR_SESSION_BUSY' }, 'busy while it runs');
      await t.rejects(start(service, r, { message: 'another', session }), { code: 'ERR_SESSION_BUSY' });
      t.equal(await service.cancel(turn.sessionId, turn.turnId), true, 'cancelling');
    });
    t.match(events.at(-1), { type: 'done', stop_reason: 'cancelled', seq: events.length });
    const stored = await store.storedTurn(r.sql, turn.sessionId, turn.turnId);
    t.match(stored, { status: 'done', stop_reason: 'cancelled', text: 'Waiting. ' });
    t.match(stored?.tool_calls, [{ tool: 'slow', status: 'cancelled' }]);
    t.equal(await service.cancel(turn.sessionId, turn.turnId), false, 'a finished turn is not cancelled again');
    await t.rejects(service.cancel(turn.sessionId, 'no-such-turn'), { code: 'ERR_CHAT_TURN_NOT_FOUND' });
    await t.rejects(service.cancel('no-such-session', turn.turnId), { code: 'ERR_CHAT_TURN_NOT_FOUND' });
  },
);

t.test(`runner failures (${TEST_ENGINE})`, async (t) => {
  const r = await rig(t);

  await t.test('a sandbox dying mid-turn: its forged events dropped, one done with the error, stored', async (t) => {
    const { service } = r.service({ agentMain: join(DIST, 'test', 'fakes', 'hostile-agent.js') });
    const turn = await start(service, r, { message: 'hi' });
    const events = await readAll(service, turn);
    t.same(
      events.map((e) => [e.type, e.seq]),
      [
        ['text_delta', 1],
        ['tool_start', 2],
        ['done', 3],
      ],
    );
    t.match(events[2], {
      stop_reason: 'error',
      error: { code: 'ERR_SANDBOX_CHILD_EXITED' },
      session_id: turn.sessionId,
    });
    const stored = await store.storedTurn(r.sql, turn.sessionId, turn.turnId);
    t.match(stored, {
      status: 'done',
      stop_reason: 'error',
      error: { code: 'ERR_SANDBOX_CHILD_EXITED' },
      text: 'hello',
    });
    t.equal(stored?.tool_calls[0].status, 'error', 'the unfinished tool call is closed');
  });

  await t.test(
    'a refusal before the turn began (the runner is busy with another process’s turn) leaves no trace',
    async (t) => {
      // Two services over one runner: two web processes of one node; only the runner knows both.
      const a = r.service();
      const b = r.service({ runner: a.runner ?? null });
      r.model.push({ kind: 'reply', text: 'Slow. ', tool_calls: [{ name: 'slow', arguments: { ms: 60_000 } }] });
      const first = await start(a.service, r, { message: 'first' });
      const session = (await store.getOwnedSession(r.sql, r.userId, first.sessionId))!;
      const running = readAll(a.service, first, async (e) => {
        if (e.type !== 'tool_start') return;
        const refused = await start(b.service, r, { message: 'second', session });
        t.same(await readAll(b.service, refused), [], 'no event');
        t.ok(isAppError(refused.refused, 'ERR_SESSION_BUSY'), 'refused: busy');
        t.same(
          (await store.messages(r.sql, first.sessionId)).map((x) => x.turn_id),
          [first.turnId],
          'the refused turn was dropped and the head restored',
        );
        t.equal((await b.metrics.turns.get()).values.length, 0, 'a refusal is no turn');
        await a.service.cancel(first.sessionId, first.turnId);
      });
      t.match((await running).at(-1), { type: 'done', stop_reason: 'cancelled' });
    },
  );
});
