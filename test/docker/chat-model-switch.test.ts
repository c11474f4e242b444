/**
 * A model per chat through the real runtime (docs/chat.md "A model per chat"): real containers,
 * the real overlay preparer reading the chat's model from a real database (its key decrypted on
 * the host), the egress gateway injecting that model's key. A chat switched from OpenAI to
 * Anthropic gets a new sandbox before its next turn, which reaches the Anthropic server with the
 * Anthropic key and the stored conversation; an admin's change of the entry (a new key) replaces
 * the sandbox again; an unchanged model keeps the warm one.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createLogger, Encryptor, silentLogger } from '../../core/index.js';
import type { AgentEvent } from '../../core/sandbox-protocol.js';
import type { TranscriptItem } from '../../core/transcript.js';
import { OverlayPreparer } from '../../daemon/host/overlay.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { TokenService } from '../../daemon/host/tokens.js';
import { AccountStore } from '../../domain/accounts.js';
import * as models from '../../domain/chat/models.js';
import { createSession } from '../../domain/chat/store.js';
import { openDatabase } from '../../domain/db/index.js';
import { createUser } from '../../domain/users.js';
import * as openaiModel from '../../emulator/model-openai.js';
import * as anthropicModel from '../../emulator/model-anthropic.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('switching a chat between providers replaces its sandbox; each model gets its own key', async (t) => {
    const OA_KEY = 'sk-openai-real-key-0123456789';
    const AN_KEY = 'sk-ant-real-key-0123456789';
    const AN_KEY_2 = 'sk-ant-rotated-key-0123456789';
    const oa = await openaiModel.start({ apiKey: OA_KEY });
    t.teardown(() => oa.close());
    const an = await anthropicModel.start({});
    t.teardown(() => an.close());

    const owner = uniqueOwner('models');
    t.teardown(() => sweep(docker, owner));
    const config = runtimeConfig(dataDir(t), image, {
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-real',
      AIRLOCK_MODEL_BASE_URL: oa.url,
      AIRLOCK_MODEL_API_KEY: OA_KEY,
      AIRLOCK_MODEL_TIMEOUT_S: '60',
    });
    const database = await openDatabase({ file: ':memory:' });
    t.teardown(() => database.close());
    const db = database.sql;
    const enc = new Encryptor(randomBytes(32));
    const tokens = new TokenService({
      store: new AccountStore(db, enc),
      refresh: async () => Promise.reject(new Error('no account')),
      log: silentLogger(),
    });
    const log = createLogger({ level: 'warn', destination: process.stderr });
    const egress = new EgressGatewayService({ log });
    t.teardown(() => egress.close());
    const preparer = new OverlayPreparer({ config, db, encryptor: enc, tokens, log: silentLogger() });
    const ended: string[] = [];
    const m = new SessionManager({
      config,
      docker,
      owner,
      preparer,
      egress,
      log,
      hooks: { onSessionEnded: (id, why) => ended.push(`${id} ${why}`) },
    });
    t.teardown(() => m.close({ removeContainers: true }));
    await m.start();

    const u = await createUser(db, { username: 'u', email: 'u@x.test' });
    const s = await createSession(db, u.id, 'hello', 'chat-1');
    await models.createChatModel(db, enc, {
      id: 'claude',
      label: 'Claude',
      provider: 'anthropic',
      model: 'claude-real',
      base_url: an.url,
      api_key: AN_KEY,
      context_tokens: 20_000,
    });

    // The chat route's side: the chat's model, its revision, the stored branch as context.
    const branch: TranscriptItem[] = [];
    let base: string | null = null;
    const turn = async (prompt: string) => {
      const model = await models.sessionModel(db, enc, config.model, s.id);
      const turnId = randomBytes(6).toString('hex');
      const events: AgentEvent[] = [];
      const r = await m.runTurn({
        userId: u.id,
        sessionId: s.id,
        turnId,
        prompt,
        base,
        context: async () => [...branch],
        modelRevision: model.revision,
        signal: new AbortController().signal,
        onEvent: (e) => void events.push(e),
      });
      if (r.items) branch.push(...r.items);
      base = turnId;
      return r;
    };

    oa.push({ kind: 'reply', text: 'OpenAI says hi.' });
    const t1 = await turn('first question');
    t.equal(t1.stop_reason, 'end_turn', t1.error?.message ?? '');
    t.equal(
      oa.requests.at(-1)!.headers.authorization,
      `Bearer ${OA_KEY}`,
      'the default model got its own key, injected on the host',
    );
    oa.push({ kind: 'reply', text: 'Still OpenAI.' });
    const t2 = await turn('second question');
    t.equal(t2.containerId, t1.containerId, 'the same model: the warm sandbox');

    // The user switches the chat to Claude: a new sandbox, the Anthropic key, the whole conversation.
    await models.setSessionModel(db, s.id, 'claude');
    an.push({ kind: 'reply', text: 'Claude here.' });
    const t3 = await turn('third question');
    t.equal(t3.stop_reason, 'end_turn', t3.error?.message ?? '');
    t.not(t3.containerId, t1.containerId, 'a new sandbox for the new model');
    t.ok(ended.includes(`${s.id} model changed`), 'the old one ended because the model changed');
    const req = an.requests.at(-1)!;
    t.equal(req.headers['x-api-key'], AN_KEY, "Claude's key, injected by the egress gateway");
    t.equal(req.body.model, 'claude-real');
    const wire = JSON.stringify(req.body.messages);
    for (const part of ['first question', 'OpenAI says hi.', 'second question', 'Still OpenAI.', 'third question'])
      t.match(wire, part, `the new sandbox's request holds "${part}"`);
    t.notOk(
      oa.requests.some((r) => JSON.stringify(r.headers).includes(AN_KEY)),
      'the Anthropic key never went to the OpenAI server',
    );

    // An admin gives Claude a new key: the entry's version grows, the sandbox is replaced again.
    await models.updateChatModel(db, enc, 'claude', { api_key: AN_KEY_2 });
    an.push({ kind: 'reply', text: 'Claude with a new key.' });
    const t4 = await turn('fourth question');
    t.equal(t4.stop_reason, 'end_turn', t4.error?.message ?? '');
    t.not(t4.containerId, t3.containerId, 'a changed entry replaces the sandbox');
    t.equal(an.requests.at(-1)!.headers['x-api-key'], AN_KEY_2, 'the new key');
    t.match(JSON.stringify(an.requests.at(-1)!.body.messages), /Claude here\./);
  });
}
