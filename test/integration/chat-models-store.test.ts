import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Encryptor, Secret, type Config } from '../../core/index.js';
import * as models from '../../domain/chat/models.js';
import * as chat from '../../domain/chat/store.js';
import { createUser } from '../../domain/users.js';
import { tempDir } from '../helpers/app.js';
import { TEST_ENGINE, dbRow, openTestDatabase } from '../helpers/db.js';

/** The chat models store (domain/chat/models.ts) on this pass's engine (run on SQLite and PostgreSQL). */

const envModel = (): Config['model'] =>
  ({
    provider: 'openai',
    model: 'gpt-env',
    baseUrl: 'http://127.0.0.1:9/v1',
    apiKey: new Secret('sk-env-key-0001'),
    contextTokens: 50_000,
    maxSteps: 6,
    timeoutS: 5,
  }) as unknown as Config['model'];

t.test(`chat models on ${TEST_ENGINE}`, async (t) => {
  const db = (await openTestDatabase(t, tempDir(t))).sql;
  const enc = new Encryptor(randomBytes(32));
  const ann = await createUser(db, { username: 'ann' });

  // The default entry: written from the environment on first use.
  const d = await models.resolveModel(db, enc, envModel(), null);
  t.match(d, {
    id: 'default',
    provider: 'openai',
    model: 'gpt-env',
    baseUrl: 'http://127.0.0.1:9/v1',
    apiKey: 'sk-env-key-0001',
    contextTokens: 50_000,
    revision: 'default:1',
  });
  const raw = await dbRow(db, "SELECT api_key_enc FROM chat_models WHERE id = 'default'");
  t.notMatch(String(raw.api_key_enc), /sk-env-key/, 'the key is encrypted at rest');
  t.match((await models.listChatModels(db))[0], { id: 'default', has_key: true, default: true, env_managed: true });
  t.notOk(JSON.stringify(await models.listChatModels(db)).includes('sk-env'), 'no view holds the key');

  // A changed environment is followed while no admin has changed the entry (a new process: a new handle's first use).
  const db2 = (await openTestDatabase(t, tempDir(t))).sql;
  await models.resolveModel(db2, enc, envModel(), null);
  const moved = await models.resolveModel(db2, enc, { ...envModel(), model: 'gpt-env-2' } as Config['model'], null);
  t.equal(moved.model, 'gpt-env', 'one check per process: the handle already synced');

  // Create, read, resolve, switch a chat.
  const ant = await models.createChatModel(db, enc, {
    id: 'claude',
    label: 'Claude',
    provider: 'anthropic',
    model: 'claude-x',
    base_url: 'http://127.0.0.1:9',
    api_key: 'sk-ant-secret',
    context_tokens: 20_000,
  });
  t.match(ant, { id: 'claude', has_key: true, enabled: true, default: false, env_managed: false, version: 1 });
  await t.rejects(
    models.createChatModel(db, enc, {
      id: 'claude',
      label: 'x',
      provider: 'demo',
      model: 'demo',
      context_tokens: 1000,
    }),
    { code: 'ERR_CHAT_MODEL_EXISTS' },
  );
  const s = await chat.createSession(db, ann.id, 'hello');
  t.equal(
    (await models.sessionModel(db, enc, envModel(), s.id)).id,
    'default',
    'a chat without a model runs with the default',
  );
  await models.setSessionModel(db, s.id, 'claude');
  t.match(await models.sessionModel(db, enc, envModel(), s.id), {
    id: 'claude',
    provider: 'anthropic',
    apiKey: 'sk-ant-secret',
    contextTokens: 20_000,
    revision: 'claude:1',
  });
  t.equal((await chat.listSessions(db, ann.id))[0].model_id, 'claude', 'the session list carries the model');
  t.equal(await models.chatsUsing(db, 'claude'), 1);

  // Update: a key left out stays; every change bumps the version; the revision lookup follows it.
  const upd = await models.updateChatModel(db, enc, 'claude', { label: 'Claude 2', context_tokens: 30_000 });
  t.match(upd, { label: 'Claude 2', has_key: true, version: 2 });
  t.equal((await models.sessionModel(db, enc, envModel(), s.id)).apiKey, 'sk-ant-secret', 'key kept');
  t.equal(await models.modelAtRevision(db, enc, 'claude:1'), undefined, 'an old revision gives no key');
  t.equal((await models.modelAtRevision(db, enc, 'claude:2'))?.apiKey, 'sk-ant-secret');
  t.match(await models.updateChatModel(db, enc, 'claude', { api_key: null }), { has_key: false, version: 3 });

  // Disabled: its chats run with the default, the choice kept; enabled again, it is theirs again.
  await models.updateChatModel(db, enc, 'claude', { enabled: false });
  t.equal(
    (await models.sessionModel(db, enc, envModel(), s.id)).id,
    'default',
    'a disabled model falls back to the default',
  );
  t.same([...(await models.enabledModelIds(db))], ['default']);
  await models.updateChatModel(db, enc, 'claude', { enabled: true });
  t.equal((await models.sessionModel(db, enc, envModel(), s.id)).id, 'claude');

  // The default cannot be disabled or deleted; an admin change ends env_managed, and the env is then ignored.
  await t.rejects(models.updateChatModel(db, enc, 'default', { enabled: false }), { code: 'ERR_CHAT_MODEL_DEFAULT' });
  await t.rejects(models.deleteChatModel(db, 'default'), { code: 'ERR_CHAT_MODEL_DEFAULT' });
  await t.rejects(models.updateChatModel(db, enc, 'nope', { label: 'x' }), { code: 'ERR_CHAT_MODEL_NOT_FOUND' });
  await models.updateChatModel(db, enc, 'default', { label: 'House model' });

  // Delete: its chats fall back to the default (model_id null), in one change.
  t.equal(await models.deleteChatModel(db, 'claude'), 1, 'one chat moved');
  t.equal((await chat.getOwnedSession(db, ann.id, s.id))?.model_id, null);
  t.equal((await models.sessionModel(db, enc, envModel(), s.id)).id, 'default');
  await t.rejects(models.deleteChatModel(db, 'claude'), { code: 'ERR_CHAT_MODEL_NOT_FOUND' });

  // A demo entry is always model "demo".
  t.match(
    await models.createChatModel(db, enc, {
      id: 'demo',
      label: 'Demo',
      provider: 'demo',
      model: 'anything',
      context_tokens: 1000,
    }),
    { model: 'demo', has_key: false },
  );
  // Deleting a chat is not stopped by its model.
  await models.setSessionModel(db, s.id, 'demo');
  await chat.deleteSession(db, s.id);
  t.equal(await models.chatsUsing(db, 'demo'), 0);
});

t.test(`the env follows into the default until an admin changes it (${TEST_ENGINE})`, async (t) => {
  const dir = tempDir(t);
  const enc = new Encryptor(randomBytes(32));
  const first = (await openTestDatabase(t, dir)).sql;
  await models.resolveModel(first, enc, envModel(), null);
  // Another process (another handle on the same data) with a changed environment.
  const again = first.withoutPlugins(); // a new handle object on the same connection: a "new process" for the per-handle check
  const m = await models.resolveModel(
    again,
    enc,
    { ...envModel(), model: 'gpt-env-2', apiKey: new Secret('sk-env-key-0002') } as Config['model'],
    null,
  );
  t.match(m, { model: 'gpt-env-2', apiKey: 'sk-env-key-0002', revision: 'default:2' }, 'followed');
  await models.updateChatModel(again, enc, 'default', { context_tokens: 9000 });
  const third = first.withoutPlugins();
  const n = await models.resolveModel(third, enc, { ...envModel(), model: 'gpt-env-3' } as Config['model'], null);
  t.match(n, { model: 'gpt-env-2', contextTokens: 9000 }, 'an admin-changed default keeps its values');
});
