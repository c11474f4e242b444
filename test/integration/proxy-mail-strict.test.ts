/**
 * The strict reading of a mail through the real proxy (docs/proxy.md#reading-the-message): the
 * credential proxy on 127.0.0.1 with a send policy that asks about outside domains, the egress
 * gateway on a unix socket and the fake Google upstream. Each of the red team's categories is its
 * own test: the send is refused with 400 ERR_MAIL_AMBIGUOUS and a message saying what was wrong,
 * before anyone is asked (no hold) and with nothing upstream; the agent's tool sees the code.
 * A plain message to an outside recipient is held and asked about (the policy works).
 */
import t from 'tap';
import { join } from 'node:path';
import type { MailHold, MailPolicy } from '../../core/sandbox-protocol.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildProfile, buildRoutes } from '../../daemon/host/overlay.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { startCredentialProxy } from '../../proxy/index.js';
import { callUpstream } from '../../tools/http.js';
import { createLogger } from '../../core/index.js';
import { tempDir } from '../helpers/app.js';
import { AMBIGUOUS_MAILS, HOSTILE_MAILS, hostileMessage, rawTwiceBody } from '../helpers/mail-hostile.js';

const POLICY: MailPolicy = {
  allow_domains: ['corp.example'],
  block_domains: [],
  other: 'ask',
  max_recipients: 50,
  max_per_hour: 100,
  approval_timeout_s: 60,
};
const PLACEHOLDER = 'ph-mail-strict-0123456789';

t.test('the strict reading through the real proxy', async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const routes = buildRoutes({
    google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
    model: { provider: 'openai', baseUrl: upstream.url },
    hasAccountToken: true,
    hasModelKey: true,
  });
  const socketPath = join(tempDir(t, 'airlock-strict-'), 'egress.sock');
  const egress = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
  const holds: MailHold[] = [];
  // The gateway on the host holds the token and decides each send on the bytes it forwards.
  const handle = await egress.open('strict-test', socketPath, {
    userId: 0,
    routes,
    tokens: { MAIL_ACCESS_TOKEN: 'ya29.real-strict-token' },
    mailPolicy: POLICY,
    hold: async (h) => {
      holds.push(h);
      return { allow: true };
    },
  });
  t.teardown(() => handle.close());
  const proxy = await startCredentialProxy({
    profile: buildProfile('strict-test', 0, routes),
    getPlaceholder: (n) => (n === 'MAIL_API_KEY' ? PLACEHOLDER : undefined),
    egressSocket: socketPath,
    mailPolicy: POLICY,
  });
  t.teardown(() => proxy.close());
  const url = `http://127.0.0.1:${proxy.port}/gmail/mail/v1/users/me/messages/send`;
  const send = async (body: string) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${PLACEHOLDER}`, 'content-type': 'application/json' },
      body,
    });
    return {
      status: res.status,
      code: res.headers.get('x-airlock-error'),
      body: (await res.json()) as { error?: { code: string; message: string } },
    };
  };
  const sendRaw = (raw: string) => send(JSON.stringify({ raw: Buffer.from(raw, 'latin1').toString('base64url') }));

  t.test('a plain message to an outside recipient is held and asked about', async (t) => {
    const r = await sendRaw(
      'From: me@corp.example\r\nTo: "Lee, Ann" <a@corp.example>, x@evil.example\r\nSubject: plain\r\n\r\nhi\r\n',
    );
    t.equal(r.status, 200);
    t.equal(holds.length, 1);
    t.match(holds[0], {
      verdict: 'ask',
      ask: ['x@evil.example'],
      summary: { recipients: ['a@corp.example', 'x@evil.example'] },
    });
    t.equal(upstream.requests.length, 1);
  });

  for (const m of [...HOSTILE_MAILS, ...AMBIGUOUS_MAILS]) {
    t.test(m.name, async (t) => {
      const before = { holds: holds.length, upstream: upstream.requests.length };
      const r = await sendRaw(hostileMessage(m));
      t.equal(r.status, 400);
      t.equal(r.code, 'ERR_MAIL_AMBIGUOUS');
      t.equal(r.body.error?.code, 'ERR_MAIL_AMBIGUOUS');
      t.match(r.body.error?.message, m.says, 'the message says what was wrong');
      t.equal(holds.length, before.holds, 'nobody was asked');
      t.equal(upstream.requests.length, before.upstream, 'nothing went upstream');
    });
  }

  t.test('a request body with "raw" twice', async (t) => {
    const before = upstream.requests.length;
    const r = await send(rawTwiceBody());
    t.equal(r.status, 400);
    t.equal(r.code, 'ERR_MAIL_AMBIGUOUS');
    t.match(r.body.error?.message, /"raw" more than once/);
    t.equal(upstream.requests.length, before, 'nothing went upstream');
  });

  t.test("the agent's tool sees the refusal as an error naming the code and what was wrong", async (t) => {
    const raw = Buffer.from(hostileMessage(HOSTILE_MAILS[0]), 'latin1').toString('base64url');
    await t.rejects(
      callUpstream(url, {
        method: 'POST',
        bearer: PLACEHOLDER,
        body: { raw },
        timeoutMs: 5000,
        what: 'sending the e-mail',
      }),
      {
        code: 'ERR_TOOL_BAD_REQUEST',
        message: /ERR_MAIL_AMBIGUOUS.*comments/,
      },
    );
  });
});
