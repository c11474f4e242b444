/**
 * Chat titles made from the first exchange (docs/chat.md "Chat titles"): the chat's own model is
 * asked once, with the chat model entry's key, after the first turn; the fallback (the first
 * message, cleaned and cut at a word boundary) stays when the model fails, is slow or is the demo
 * one; a renamed chat is never retitled.
 */
import t from 'tap';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import * as anthropicModel from '../../emulator/model-anthropic.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { createSession, renameSession } from '../../domain/chat/store.js';
import { createChatModel, setSessionModel } from '../../domain/chat/models.js';
import { askModelForTitle, cleanModelTitle, fallbackTitle, titleAfterTurn } from '../../domain/chat/titles.js';
import { addUser, logSink, startTestApp } from '../helpers/app.js';
import { MODEL_PLACEHOLDER, startChatHarness, streamTurn, waitFor } from '../helpers/chat.js';

t.test('fallback and cleaning', async (t) => {
  t.equal(fallbackTitle('  Sales   of week\n12 in 100%_ detail '), 'Sales of week 12 in 100%_ detail');
  t.equal(fallbackTitle('# **Plan** the `offsite`'), 'Plan the offsite');
  const long = fallbackTitle(
    'please write a detailed summary of every quarterly sales figure for the northern region in 2025',
  );
  t.ok(long.length <= 60 && long.endsWith('…'), long);
  t.match(long, /^please write a detailed summary of every quarterly sales…$/, 'cut at a word boundary');
  t.equal(fallbackTitle('   '), 'New chat');
  // The page's "Attached:" line is a marker for the agent, not the user's words (issue 41).
  t.equal(fallbackTitle('chart the sales\n\nAttached: uploads/sales.csv, uploads/logo.png'), 'chart the sales');
  t.equal(fallbackTitle('\n\nAttached: uploads/sales.csv'), 'sales.csv', 'files only: named by its files');
  t.equal(fallbackTitle('Attached: uploads/a.csv, uploads/b.csv'), 'a.csv, b.csv');
  t.equal(
    fallbackTitle('see Attached: uploads/x in the text'),
    'see Attached: uploads/x in the text',
    'only the trailing marker line goes',
  );
  t.equal(cleanModelTitle('Title: "Quarterly sales summary."\nmore'), 'Quarterly sales summary');
  t.equal(cleanModelTitle('\n\n'), undefined);
});

t.test('the chat model titles a new chat after its first turn, once', async (t) => {
  const h = await startChatHarness(t, {
    chatModels: true,
    title: () => ({ kind: 'reply', text: 'Quarterly sales summary' }),
  });
  const c = await h.login('tia');
  h.model.push({ kind: 'reply', text: 'Here are the numbers.' });
  const r = await streamTurn(c, { message: 'please summarise the quarterly sales numbers for me' });
  const sid = r.sessionId!;
  const list = async () =>
    (await c.json('GET', '/api/chat/sessions')).body.sessions.find((s: { id: string }) => s.id === sid);
  const titled = await waitFor(
    async () => ((await list()).title_source !== 'message' ? list() : undefined),
    'the title',
  );
  t.match(titled, { title: 'Quarterly sales summary', title_source: 'model' });
  t.equal(h.model.requests.length, 1, 'the turn took its scripted step; the title request took none');
  t.equal(h.model.titleRequests.length, 1);
  const req = h.model.titleRequests[0];
  t.equal(req.headers.authorization, `Bearer ${MODEL_PLACEHOLDER}`, "the chat model entry's key, from the host");
  t.match(
    JSON.stringify(req.body.messages),
    /please summarise the quarterly sales numbers.*Here are the numbers/,
    'the first exchange',
  );

  h.model.push({ kind: 'reply', text: 'More.' });
  await streamTurn(c, { message: 'and the year before?', session_id: sid });
  t.equal(h.model.titleRequests.length, 1, 'no title request after the second turn');
  t.equal((await list()).title, 'Quarterly sales summary');
});

t.test('a message with files: the chat is titled from its words, never the Attached line', async (t) => {
  const h = await startChatHarness(t, {});
  const c = await h.login('uma');
  h.model.push({ kind: 'reply', text: 'Done.' });
  const r = await streamTurn(c, { message: 'plot the sales figures\n\nAttached: uploads/sales.csv' });
  const entry = async () =>
    (await c.json('GET', '/api/chat/sessions')).body.sessions.find((s: { id: string }) => s.id === r.sessionId);
  const titled = await waitFor(
    async () => ((await entry()).title_source !== 'message' ? entry() : undefined),
    'the title',
  );
  t.equal(titled.title, 'plot the sales figures');
  t.notMatch(titled.title, /Attached|uploads\//);
});

t.test('fallback when the model fails, is slow, or is the demo model; a rename wins', async (t) => {
  const app = await startTestApp(t);
  const user = await addUser(app.database, 'uma', 'uma-password-1');
  const db = app.database.sql;
  const enc = atRestEncryptor(app.config);
  const log = createLogger({ level: 'silent', destination: logSink().stream });
  const message = 'please write a detailed summary of every quarterly sales figure for the northern region';
  const srcOf = async (id: string) =>
    await db
      .selectFrom('chat_sessions')
      .select(['title', 'title_source'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  // The demo model: nothing to ask.
  const demo = await createSession(db, user.id, message);
  t.equal(
    await titleAfterTurn({ db, encryptor: enc, model: app.config.model, log }, demo.id, message, 'ok'),
    fallbackTitle(message),
  );
  t.same(await srcOf(demo.id), { title: fallbackTitle(message), title_source: 'fallback' });

  // A model that answers 500, one that never answers (bounded wait): the fallback.
  const failing = await openaiModel.start({ title: () => ({ kind: 'error', status: 500 }) });
  const silent = await openaiModel.start({ title: () => ({ kind: 'silent' }) });
  t.teardown(() => Promise.all([failing.close(), silent.close()]));
  for (const [name, server] of [
    ['failing', failing],
    ['silent', silent],
  ] as const) {
    await createChatModel(db, enc, {
      id: name,
      label: name,
      provider: 'openai',
      model: 'gpt-x',
      base_url: server.url,
      context_tokens: 10_000,
    });
    const s = await createSession(db, user.id, message);
    await setSessionModel(db, s.id, name);
    t.equal(
      await titleAfterTurn({ db, encryptor: enc, model: app.config.model, log, timeoutMs: 300 }, s.id, message, 'ok'),
      fallbackTitle(message),
      name,
    );
    t.equal((await srcOf(s.id)).title_source, 'fallback', name);
    t.equal(server.titleRequests.length, 1, `${name}: asked once`);
  }

  // Renamed (before or while the title is made): never overwritten.
  const renamed = await createSession(db, user.id, message);
  await renameSession(db, renamed.id, 'My own name');
  t.equal(
    await titleAfterTurn({ db, encryptor: enc, model: app.config.model, log }, renamed.id, message, 'ok'),
    undefined,
  );
  t.same(await srcOf(renamed.id), { title: 'My own name', title_source: 'user' });
});

t.test('Anthropic-shaped models are asked in their own shape', async (t) => {
  const server = await anthropicModel.start({
    apiKey: 'sk-ant-test',
    title: () => ({ kind: 'reply', text: '"Travel plans for May"' }),
  });
  t.teardown(() => server.close());
  const title = await askModelForTitle(
    {
      id: 'a',
      label: 'A',
      provider: 'anthropic',
      model: 'claude-x',
      baseUrl: server.url,
      apiKey: 'sk-ant-test',
      contextTokens: 1000,
      images: false,
      revision: 'a:1',
    },
    'plan my trip',
    'sure',
    AbortSignal.timeout(5000),
  );
  t.equal(title, 'Travel plans for May');
  t.equal(server.titleRequests[0].headers['x-api-key'], 'sk-ant-test');
});
