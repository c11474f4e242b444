/**
 * A send policy set by an organisation admin in an agent policy (through the admin API, not the
 * server's AIRLOCK_MAIL_*) enforced by the proxy inside a real sandbox, end to end: the real
 * daemon (serve), the scripted model calling send_email, the Google-shaped mailbox. The agent
 * policy's allowed domain goes through without a question; its blocked domain is refused by the
 * proxy itself (no hold, nothing upstream), where the server's policy alone would only have asked.
 */
import t from 'tap';
import {
  createLogger,
  Encryptor,
  loadOrCreateEncryptionKey,
  hashPassword,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { createUser } from '../../domain/users.js';
import { serve } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const MODEL_KEY = 'sk-policy-e2e-model-key-0123456789abcdef';
const BODY = 'the body of a mail the policy decides on';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test("an agent policy's mail domains are enforced at the proxy in the sandbox", async (t) => {
    const g = await google.start({ userEmail: 'fay@corp.example' });
    t.teardown(() => g.close());
    const send = (to: string, subject: string) => ({
      kind: 'reply' as const,
      tool_calls: [{ name: 'send_email', arguments: { to: [to], subject, text: BODY } }],
    });
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        send('ann@partner.example', 'To the partner'),
        send('mole@rival.example', 'To the rival'),
        { kind: 'reply', text: 'One sent, one refused.' },
      ],
    });
    t.teardown(() => model.close());
    const dir = dataDir(t);
    const owner = uniqueOwner('mailpol');
    t.teardown(() => sweep(docker!, owner));
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AGENT_USER_TOKEN_SECRET: 'mailpol-agent-user-token-secret-00',
      MCP_INTERNAL_SECRET: 'mailpol-mcp-internal-secret-0123456',
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-mailpol',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
      AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
      AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
      // The server alone would ask about both recipients (and time out: nobody answers here).
      AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example',
      AIRLOCK_MAIL_OTHER: 'ask',
      AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '5',
    });
    const d = await serve(config, { log: createLogger({ level: 'silent' }), runtime: { owner } });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    const fay = await createUser(d.database.sql, {
      username: 'fay',
      email: 'fay@corp.example',
      passwordHash: await hashPassword('fay-password'),
    });
    await createUser(d.database.sql, {
      username: 'root',
      email: 'root@corp.example',
      passwordHash: await hashPassword('root-password'),
      isSuperuser: true,
    });
    await new AccountStore(d.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey))).connect(
      fay.id,
      {
        email: 'fay@corp.example',
        scopes: [...WORKSPACE_SCOPES],
        accessToken: g.token,
        expiresAt: Date.now() + 3600_000,
      },
    );

    // The organisation's admin sets the domains in an agent policy.
    const root = new Client(d.web.url);
    t.equal((await root.login('root', 'root-password')).status, 200);
    const org = (await root.json('POST', '/api/identity/organisations', { name: 'Corp' })).body;
    t.equal((await root.json('PUT', `/api/identity/organisations/${org.id}/members/${fay.id}`, {})).status, 200);
    const pol = await root.json('POST', `/api/identity/organisations/${org.id}/agent-policies`, {
      name: 'mail domains',
      applies_to: 'all',
      mail_allow_domains: ['partner.example'],
      mail_block_domains: ['rival.example'],
    });
    t.equal(pol.status, 201, JSON.stringify(pol.body));

    const c = new Client(d.web.url);
    t.equal((await c.login('fay', 'fay-password')).status, 200);
    const r = await streamTurn(c, { message: 'mail the partner and the rival' });
    t.equal(r.status, 200);
    const done = r.events.at(-1);
    t.match(done, { type: 'done', stop_reason: 'end_turn' }, 'the turn ends normally');
    t.same(
      r.events.filter((e) => e.type === 'approval_request'),
      [],
      'nobody was asked: the agent policy decided both',
    );
    const ends = r.events.filter((e) => e.type === 'tool_end' && e.tool === 'send_email');
    t.same(
      ends.map((e) => e.ok),
      [true, false],
      'the partner send succeeded, the rival send failed',
    );
    t.match(String(ends[1].error), /ERR_MAIL_BLOCKED/, 'refused as blocked');
    t.same(
      g.mailbox.map((m) => m.to),
      [['ann@partner.example']],
      'only the allowed mail arrived',
    );

    // The proxy refused it before any hold: the policy it got at session start was the agent policy's.
    const sql = d.database.sql;
    // The audit rows are written off the request's path.
    const mailRows = () =>
      sql
        .selectFrom('proxy_requests')
        .select(['outcome', 'status', 'code', 'recipients', 'call_id'])
        .where('route', '=', 'mail')
        .orderBy('id')
        .execute();
    await waitFor(async () => (await mailRows()).length >= 2, 'both mail requests in the audit trail');
    const holds = await sql.selectFrom('mail_holds').select(['subject', 'state']).execute();
    t.same(
      holds.map((h) => [h.subject, h.state]),
      [['To the partner', 'sent']],
      'no hold for the blocked send',
    );
    const reqs = await mailRows();
    t.same(
      reqs.map((x) => [x.outcome, x.status, x.code, x.recipients]),
      [
        ['forwarded', 200, null, 1],
        ['refused', 403, 'ERR_MAIL_BLOCKED', 1],
      ],
      'the proxy forwarded one and refused the other',
    );
    t.ok(
      reqs.every((x) => typeof x.call_id === 'string' && x.call_id.length > 0),
      'each with the tool call that made it',
    );
  });
}
