/**
 * The send policy at the proxy, from INSIDE a live sandbox as the agent child's uid (1001): the
 * child posts Gmail sends straight to the proxy (not through send_email), during a running turn.
 * Allowed domains go through; blocked ones (also hidden in a folded Bcc) are refused with nothing
 * upstream; "ask" sends posted by the child itself belong to no send_email call the turn runs, so
 * they are refused with ERR_MAIL_CALL_UNBOUND and the user is never asked (docs/security.md "A held
 * send is bound to a running call"; the card for a real send_email call is proved by
 * test/docker/mail-approval-browser.test.ts). Every hold and proxied request is in the audit.
 * The red team's ambiguous messages (test/helpers/mail-hostile.ts) are refused from inside the
 * sandbox too (ERR_MAIL_AMBIGUOUS), with no question and nothing upstream.
 */
import t from 'tap';
import { HOSTILE_MAILS, hostileMessage, rawTwiceBody } from '../helpers/mail-hostile.js';
import { copyFileSync, chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../core/index.js';
import type { DaemonEvent, PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { EgressGatewayService, egressTarget } from '../../daemon/host/egress.js';
import { buildRoutes, serverMailPolicy } from '../../daemon/host/overlay.js';
import { MailGate } from '../../domain/mail/index.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { openTestDatabase } from '../helpers/db.js';
import { createUser } from '../../domain/users.js';
import { waitFor } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, ROOT, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const log = createLogger({ level: 'warn', destination: process.stderr });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

const msg = (headers: string, body = 'hello') =>
  `From: me@corp.example\r\n${headers}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n${body}\r\n`;

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('send policy and approvals, posted to the proxy from inside the sandbox', async (t) => {
    const upstream = await startUpstream();
    t.teardown(() => upstream.close());
    // The model stalls, so the turn keeps running while the child sends on its own.
    const model = await openaiModel.start({ apiKey: 'sk-unused', script: [{ kind: 'stall', text: 'thinking' }] });
    t.teardown(() => model.close());
    const routes = buildRoutes({
      google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
      model: { provider: 'openai', baseUrl: model.url },
      hasAccountToken: true,
      hasModelKey: true,
    });
    const dir = dataDir(t);
    const config = runtimeConfig(dir, image, {
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example',
      AIRLOCK_MAIL_BLOCK_DOMAINS: 'evil.example',
      AIRLOCK_MAIL_OTHER: 'ask',
      AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '5',
    });
    const database = await openTestDatabase(t, dir);
    const gate = new MailGate(database.sql, config, log);
    const user = await createUser(database.sql, {
      username: 'mailer',
      email: 'mailer@corp.example',
      passwordHash: 'x',
    });
    const placeholder = `ph-mail-${randomBytes(12).toString('hex')}`;
    let proxyPort = 0;
    const preparer: SessionPreparer = {
      async prepare(req): Promise<PreparedSession> {
        proxyPort = req.proxyPort;
        return {
          routes,
          tokens: {
            MAIL_ACCESS_TOKEN: 'ya29.real-mail',
            SHEETS_ACCESS_TOKEN: 'ya29.real-mail',
            SEARCH_ACCESS_TOKEN: 'ya29.real-mail',
            MODEL_API_KEY_REAL: 'sk-unused',
          },
          placeholders: {
            MAIL_API_KEY: placeholder,
            SHEETS_API_KEY: 'ph-s',
            SEARCH_SHEETS_API_KEY: 'ph-q',
            AGENT_MODEL_API_KEY: 'ph-m',
          },
          agentEnv: { AIRLOCK_MODEL_PROVIDER: 'openai', AGENT_MODEL_PROVIDER: 'openai', AGENT_MODEL: 'scripted' },
          egressAllow: [...new Set(routes.map((r) => egressTarget(r.upstream)))],
          mailPolicy: serverMailPolicy(config),
        };
      },
    };
    const owner = uniqueOwner('mail');
    t.teardown(() => sweep(docker, owner));
    const egress = new EgressGatewayService({ log });
    t.teardown(() => egress.close());
    const m = new SessionManager({ config, docker, log, owner, preparer, egress, auditor: gate });
    t.teardown(() => m.close({ removeContainers: true }));
    await m.start();

    // Decisions by subject, as the user would click them.
    const daemonEvents: DaemonEvent[] = [];
    const decisions: Record<string, { decision: 'approve' | 'deny'; scope: 'once' | 'recipient' } | undefined> = {
      'approve me': { decision: 'approve', scope: 'once' },
      'deny me': { decision: 'deny', scope: 'once' },
      'approve for recipient': { decision: 'approve', scope: 'recipient' },
    };
    const ac = new AbortController();
    const turn = m.runTurn({
      userId: user.id,
      sessionId: 'mail-session',
      turnId: 'turn-mail-1',
      prompt: 'send things',
      signal: ac.signal,
      onEvent: () => {},
      onDaemonEvent: (e) => {
        daemonEvents.push(e);
        if (e.type !== 'approval_request' || e.kind === 'connector') return;
        const d = decisions[e.subject];
        if (d) void gate.decide({ userId: user.id, sessionId: 'mail-session', approvalId: e.approval_id, ...d });
      },
    });
    await waitFor(() => m.list().find((s) => s.sessionId === 'mail-session' && s.state === 'busy'), 'the turn runs');
    const containerId = m.list().find((s) => s.sessionId === 'mail-session')!.containerId;

    const cases = [
      { id: 'allowed', raw: msg('To: Ann <ann@corp.example>, b@mail.corp.example\r\nSubject: fine') },
      { id: 'blocked', raw: msg('To: x@evil.example\r\nSubject: no') },
      { id: 'bcc-folded', raw: msg('To: ann@corp.example\r\nBcc:\r\n\tsneaky@sub.evil.example\r\nSubject: hidden') },
      { id: 'group-quoted', raw: msg('To: team: "ann@corp.example" <x@evil.example>;\r\nSubject: quoted') },
      { id: 'unparseable', body: JSON.stringify({ raw: Buffer.from('no headers here').toString('base64url') }) },
      {
        id: 'extra-field',
        body: JSON.stringify({
          raw: Buffer.from(msg('To: ann@corp.example')).toString('base64url'),
          payload: { headers: [] },
        }),
      },
      { id: 'ask-approved', raw: msg('To: bob@partner.example\r\nSubject: approve me') },
      { id: 'ask-denied', raw: msg('To: bob@partner.example\r\nSubject: deny me') },
      { id: 'ask-timeout', raw: msg('To: bob@partner.example\r\nSubject: let it time out') },
      { id: 'ask-recipient', raw: msg('To: carol@partner.example\r\nSubject: approve for recipient') },
      { id: 'recipient-again', raw: msg('To: carol@partner.example\r\nSubject: carol again') },
      // The red team's categories (test/helpers/mail-hostile.ts), posted by the child's uid: each
      // refused as ambiguous before anyone is asked, nothing upstream.
      ...HOSTILE_MAILS.map((h, i) => ({ id: `hostile-${i}`, raw: hostileMessage(h) })),
      { id: 'raw-twice', body: rawTwiceBody() },
    ];
    const ws = join(dir, 'workspaces', String(user.id));
    writeFileSync(join(ws, 'mail-cases.json'), JSON.stringify(cases));
    copyFileSync(join(ROOT, 'dist', 'test', 'fakes', 'mail-sender.js'), join(ws, 'mail-sender.mjs'));
    for (const f of ['mail-cases.json', 'mail-sender.mjs']) chmodSync(join(ws, f), 0o644);
    const run = await execIn(
      docker,
      containerId,
      ['/usr/local/bin/node', '/workspace/mail-sender.mjs', '/workspace/mail-cases.json'],
      {
        user: '1001',
        env: [`MAIL_PROXY_URL=http://127.0.0.1:${proxyPort}`, `MAIL_API_KEY=${placeholder}`],
      },
    );
    t.equal(run.code, 0, `sender ran (${run.stderr.slice(0, 300)})`);
    const results = Object.fromEntries(
      (JSON.parse(run.stdout) as { id: string; status: number; code: string | null }[]).map((r) => [r.id, r]),
    );
    const expect: Record<string, [number, string | null]> = {
      allowed: [200, null],
      blocked: [403, 'ERR_MAIL_BLOCKED'],
      'bcc-folded': [403, 'ERR_MAIL_BLOCKED'],
      'group-quoted': [400, 'ERR_MAIL_AMBIGUOUS'],
      unparseable: [400, 'ERR_MAIL_UNPARSEABLE'],
      'extra-field': [400, 'ERR_MAIL_UNPARSEABLE'],
      'ask-approved': [403, 'ERR_MAIL_CALL_UNBOUND'],
      'ask-denied': [403, 'ERR_MAIL_CALL_UNBOUND'],
      'ask-timeout': [403, 'ERR_MAIL_CALL_UNBOUND'],
      'ask-recipient': [403, 'ERR_MAIL_CALL_UNBOUND'],
      'recipient-again': [403, 'ERR_MAIL_CALL_UNBOUND'],
    };
    for (const [id, [status, code]] of Object.entries(expect))
      t.same([results[id]?.status, results[id]?.code], [status, code], id);
    HOSTILE_MAILS.forEach((h, i) =>
      t.same(
        [results[`hostile-${i}`]?.status, results[`hostile-${i}`]?.code],
        [400, 'ERR_MAIL_AMBIGUOUS'],
        `from inside the sandbox: ${h.name}`,
      ),
    );
    t.same(
      [results['raw-twice']?.status, results['raw-twice']?.code],
      [400, 'ERR_MAIL_AMBIGUOUS'],
      'from inside the sandbox: "raw" twice',
    );

    // Only what was allowed or approved reached the upstream, with the real token.
    const sent = upstream.requests.filter((r) => r.path === '/gmail/v1/users/me/messages/send');
    const subjects = sent
      .map((r) => /Subject: ([^\r\n]*)/.exec(Buffer.from(JSON.parse(r.body).raw, 'base64url').toString())?.[1])
      .sort();
    t.same(subjects, ['fine'], 'exactly the allowed send arrived');
    t.ok(
      sent.every(
        (r) => r.headers.authorization === 'Bearer ya29.real-mail' && r.headers['x-airlock-call'] === undefined,
      ),
      'real token upstream, no trace header',
    );

    // A direct post is bound to no send_email call: nobody was asked.
    t.same(daemonEvents, [], 'no approval_request for a send made outside a send_email call');

    ac.abort();
    const end = await turn;
    t.equal(end.stop_reason, 'cancelled', 'the stalled turn is stopped');

    // The audit trail: every hold with its decision, every proxied mail request with its turn.
    await gate.flushed();
    const holds = await database.sql
      .selectFrom('mail_holds')
      .select(['subject', 'state', 'code', 'turn_id'])
      .orderBy('created_at')
      .execute();
    t.same(
      holds.map((h) => [h.subject, h.state]),
      [
        ['fine', 'sent'],
        ['approve me', 'refused'],
        ['deny me', 'refused'],
        ['let it time out', 'refused'],
        ['approve for recipient', 'refused'],
        ['carol again', 'refused'],
      ],
      'mail_holds: one row per held send and its outcome',
    );
    t.ok(
      holds.every((h) => h.turn_id === 'turn-mail-1'),
      'each hold names its turn',
    );
    const reqs = await database.sql
      .selectFrom('proxy_requests')
      .selectAll()
      .where('route', '=', 'mail')
      .orderBy('id')
      .execute();
    t.equal(reqs.length, cases.length, 'every mail request is in the audit trail');
    t.ok(
      reqs.every(
        (r) =>
          r.turn_id === 'turn-mail-1' &&
          r.user_id === user.id &&
          r.session_id === 'mail-session' &&
          r.template === '/gmail/mail/v1/users/me/messages/send',
      ),
      'with its session, user, turn and path template',
    );
    t.same(reqs.filter((r) => r.outcome === 'forwarded').length, 1, 'one forwarded');
    const audit = JSON.stringify(reqs) + JSON.stringify(holds);
    for (const secret of ['ya29.real-mail', placeholder, 'hello'])
      t.notOk(audit.includes(secret), `no ${secret.slice(0, 8)}… in the audit rows`);
  });
}
