/**
 * An agent policy change reaches live sandboxes (`SessionManager.policyChanged`): real containers,
 * the real overlay preparer reading agent policies from a real SQLite database. A marked session
 * keeps its warm sandbox when its agent settings did not change, moves to a new sandbox under the
 * new policy when they did (tools seen in the new agent child's env), and is refused when the
 * model is now forbidden. Sessions of other users are not touched.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createLogger, Encryptor, silentLogger } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import type { AgentEvent } from '../../core/sandbox-protocol.js';
import { OverlayPreparer } from '../../daemon/host/overlay.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { TokenService } from '../../daemon/host/tokens.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';
import { openDatabase } from '../../domain/db/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { dbInsertId, dbRun } from '../helpers/db.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    'policyChanged: same settings keep the sandbox, new tools replace it, a forbidden model refuses',
    async (t) => {
      const owner = uniqueOwner('policy');
      t.teardown(() => sweep(docker, owner));
      const config = runtimeConfig(dataDir(t), image, {
        AIRLOCK_POOL_SIZE: '0',
        AIRLOCK_MODEL_PROVIDER: 'demo',
        AIRLOCK_MODEL: 'demo',
      });
      const database = await openDatabase({ file: ':memory:' });
      const db = database.sql;
      t.teardown(() => database.close());
      const tokens = new TokenService({
        store: new AccountStore(database.sql, new Encryptor(randomBytes(32))),
        refresh: async () => {
          throw new Error('no account in this test');
        },
        log: silentLogger(),
      });
      const preparer = new OverlayPreparer({ config, db: database.sql, tokens, log: silentLogger() });
      const ended: string[] = [];
      const m = new SessionManager({
        config,
        docker,
        owner,
        preparer,
        log: createLogger({ level: 'warn', destination: process.stderr }),
        hooks: { onSessionEnded: (id, why) => ended.push(`${id} ${why}`) },
      });
      t.teardown(() => m.close({ removeContainers: true }));
      await m.start();

      const u = await createUser(database.sql, { username: 'u', email: 'u@x.test' });
      const v = await createUser(database.sql, { username: 'v', email: 'v@x.test' });
      const org = await dbInsertId(db, "INSERT INTO organisations (name) VALUES ('Acme')");
      await dbRun(
        db,
        'INSERT INTO organisation_members (organisation_id, user_id) VALUES (?, ?), (?, ?)',
        org,
        u.id,
        org,
        v.id,
      );
      const turn = async (sessionId: string, userId: number, prompt = 'hello') => {
        const events: AgentEvent[] = [];
        const r = await m.runTurn({
          userId,
          sessionId,
          turnId: randomBytes(6).toString('hex'),
          prompt,
          signal: new AbortController().signal,
          onEvent: (e) => void events.push(e),
        });
        return {
          ...r,
          events,
          notices: events.filter((e) => e.type === 'text_delta' && e.text.startsWith('[sandbox]')),
        };
      };
      // Which tools the agent was configured with (its settings reach it over stdin at claim, not in
      // its environ): the demo model calls send_email for this prompt only when it is offered.
      const offersMail = async (sessionId: string, userId: number) => {
        const r = await turn(sessionId, userId, 'chart 3 5 8 and email the chart to x@example.test');
        return r.events.some((e) => e.type === 'tool_start' && e.tool === 'send_email');
      };

      const a1 = await turn('s-u', u.id);
      const b1 = await turn('s-v', v.id);
      t.equal(a1.stop_reason, 'end_turn', a1.error?.message ?? 'turn');
      t.equal(b1.stop_reason, 'end_turn', b1.error?.message ?? 'turn');
      t.equal(await offersMail('s-u', u.id), true, 'no policy: every tool, send_email too');

      // Marked, but nothing that decides the agent's settings changed: the warm sandbox goes on.
      m.policyChanged([u.id]);
      const a2 = await turn('s-u', u.id);
      t.equal(a2.containerId, a1.containerId, 'same sandbox');
      t.same(a2.notices, [], 'no notice');

      // A policy that takes tools away: u's next turn runs in a new sandbox under it.
      await dbRun(
        db,
        `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_tools) VALUES (?, 'charts only', 'all', '["rasterize_chart","render_chart"]')`,
        org,
      );
      m.policyChanged([u.id]);
      const a3 = await turn('s-u', u.id);
      t.equal(a3.stop_reason, 'end_turn', a3.error?.message ?? 'turn');
      t.not(a3.containerId, a1.containerId, 'a new sandbox');
      t.same(a3.notices, [], 'no notice: the new sandbox gets the stored conversation from the chat route');
      t.equal(await offersMail('s-u', u.id), false, 'the new agent runs under the new policy (no send_email)');
      await t.rejects(
        docker.getContainer(a1.containerId!).inspect(),
        { statusCode: 404 } as unknown as Error,
        'the old sandbox is removed',
      );
      t.ok(ended.includes('s-u policy changed'), 'the lifecycle heard why');
      // v was not named: its sandbox keeps the policy it started with until v is named.
      const b2 = await turn('s-v', v.id);
      t.equal(b2.containerId, b1.containerId, "another user's sandbox is not touched");
      t.equal(await offersMail('s-v', v.id), true, "v's agent keeps every tool");

      // A policy that forbids the model: the turn is refused with the policy's code, the sandbox goes.
      await dbRun(
        db,
        `INSERT INTO agent_policies (organisation_id, name, applies_to, denied_models) VALUES (?, 'no demo model', 'all', '["demo"]')`,
        org,
      );
      m.policyChanged([u.id, v.id]);
      const a4 = await turn('s-u', u.id);
      t.equal(a4.stop_reason, 'error');
      t.equal(a4.error?.code, 'ERR_POLICY_MODEL_DENIED');
      t.notOk(m.isLive('s-u', u.id), 'no live sandbox left for the session');
      await t.rejects(
        docker.getContainer(a3.containerId!).inspect(),
        { statusCode: 404 } as unknown as Error,
        'its sandbox is removed',
      );
      const b3 = await turn('s-v', v.id);
      t.equal(b3.error?.code, 'ERR_POLICY_MODEL_DENIED', 'v too, once named');
    },
  );
}
