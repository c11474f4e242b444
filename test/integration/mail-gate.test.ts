/**
 * The daemon's mail gate (domain/mail/gate.ts) behind the real credential proxy, over real HTTP,
 * without a container: the web app with its chat routes and the approval route, the MailGate, the
 * proxy with the send policy and the fake Google upstream. The sandbox is replaced by a turn
 * runner that posts Gmail sends to the proxy during the turn, as the agent's tool would (with the
 * tool's X-Airlock-Call header); the proxy's holds go straight to the gate, where the supervisor
 * would relay them (that relay is tested from inside a container in test/docker/mail-approval.test.ts).
 *
 * Covered here: the per-hour limit (ERR_MAIL_RATE_LIMITED, per user across sessions, nothing
 * upstream); the action-log entries mail.approved / mail.denied / mail.approval_timed_out /
 * mail.refused, with counts and ids but never a body or a secret; the recipients count and the
 * call id of each proxied request; the trace header never reaching the upstream; and "approve for
 * this recipient in this session" through POST …/approvals/:id.
 */
import t from 'tap';
import type { Test } from 'tap';
import { CALL_ID_HEADER } from '../../core/sandbox-protocol.js';
import type { MailGate } from '../../domain/mail/index.js';
import { queryActionLog } from '../../domain/action-log.js';
import { mailPolicyFor } from '../../domain/mail/store.js';
import type { FakeUpstream } from '../../emulator/fake-upstream.js';
import type { ProxyDecision } from '../../proxy/index.js';
import { addUser, type TestApp } from '../helpers/app.js';
import { streamTurn } from '../helpers/chat.js';
import type { Client } from '../helpers/client.js';
import { MAIL_TOKEN, startMailPath } from '../helpers/mail-rig.js';

const TOKEN = MAIL_TOKEN;
const BODY = 'the confidential body of the message';

/** One send the turn runner posts: the headers of the message and the tool call id it names. */
interface Send {
  to: string;
  cc?: string;
  bcc?: string;
  subject: string;
  call?: string;
}
interface SendResult {
  status: number;
  code: string | null;
}

const message = (s: Send) =>
  [
    `From: me@corp.example`,
    `To: ${s.to}`,
    ...(s.cc ? [`Cc: ${s.cc}`] : []),
    ...(s.bcc ? [`Bcc: ${s.bcc}`] : []),
    `Subject: ${s.subject}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain',
    '',
    BODY,
    '',
  ].join('\r\n');

interface Rig {
  app: TestApp;
  gate: MailGate;
  upstream: FakeUpstream;
  placeholder: string;
  /** What each send of each turn got back from the proxy, by subject. */
  results: Map<string, SendResult>;
  /** Every decision the proxy reported (what the supervisor relays to the gate). */
  proxyDecisions: ProxyDecision[];
  login(name: string): Promise<Client>;
  /** Subjects of the sends that reached the upstream. */
  arrived(): string[];
}

/**
 * The app, the gate and one proxy for all sessions of the test (its turns run one at a time; the
 * proxy asks about the turn now running, as the supervisor's does).
 */
async function startRig(t: Test, env: Record<string, string>): Promise<Rig> {
  const results = new Map<string, SendResult>();
  const proxyDecisions: ProxyDecision[] = [];
  const { app, gate, upstream, placeholder } = await startMailPath(t, {
    env,
    async turn(req, path) {
      for (const [n, s] of (JSON.parse(req.prompt) as Send[]).entries()) {
        // Each send is made by a send_email call of the turn, as the agent's tool makes it.
        const call = s.call ?? `call_${req.turnId}-${n}`;
        req.onEvent({ type: 'tool_start', call_id: call, tool: 'send_email', input: { subject: s.subject } });
        const res = await fetch(`${path.proxyUrl}/gmail/mail/v1/users/me/messages/send`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${path.placeholder}`,
            'content-type': 'application/json',
            [CALL_ID_HEADER]: call,
          },
          body: JSON.stringify({ raw: Buffer.from(message(s)).toString('base64url') }),
        });
        await res.text();
        const r = { status: res.status, code: res.headers.get('x-airlock-error') };
        results.set(s.subject, r);
        req.onEvent({ type: 'tool_end', call_id: call, tool: 'send_email', ok: res.ok, duration_ms: 1 });
        req.onEvent({ type: 'text_delta', text: `${s.subject}: ${r.status} ${r.code ?? ''}\n` });
      }
      return { stop_reason: 'end_turn' };
    },
    onDecision: (d) => proxyDecisions.push(d),
  });
  t.equal(
    (await mailPolicyFor(app.database.sql, app.config.mail, 0)).other,
    'ask',
    'the server policy asks for other domains',
  );
  return {
    app,
    gate,
    upstream,
    placeholder,
    results,
    proxyDecisions,
    async login(name) {
      await addUser(app.database, name, `${name}-password`);
      const c = app.client();
      t.equal((await c.login(name, `${name}-password`)).status, 200);
      return c;
    },
    arrived: () =>
      upstream.requests
        .filter((r) => r.path === '/gmail/v1/users/me/messages/send')
        .map((r) => /Subject: ([^\r\n]*)/.exec(Buffer.from(JSON.parse(r.body).raw, 'base64url').toString())?.[1] ?? ''),
  };
}

/** Start a turn with these sends; the stream's approval requests go to `decide` (undefined: left to time out). */
async function turn(
  c: Client,
  sends: Send[],
  opts: {
    sessionId?: string;
    decide?: (e: any) => { decision: 'approve' | 'deny'; scope?: 'once' | 'recipient' } | undefined;
    answers?: Map<string, unknown>;
  } = {},
): Promise<{ sessionId: string; events: any[] }> {
  const r = await streamTurn(
    c,
    { message: JSON.stringify(sends), ...(opts.sessionId ? { session_id: opts.sessionId } : {}) },
    async (e, _all, sid) => {
      if (e.type !== 'approval_request') return;
      const d = opts.decide?.(e);
      if (!d) return;
      const res = await c.json('POST', `/api/chat/sessions/${sid}/approvals/${e.approval_id}`, d);
      if (res.status !== 200) throw new Error(`decision refused: ${res.status} ${JSON.stringify(res.body)}`);
      opts.answers?.set(e.subject, res.body);
    },
  );
  if (r.status !== 200) throw new Error(`turn refused: ${r.status} ${JSON.stringify(r.error)}`);
  return { sessionId: r.sessionId!, events: r.events };
}

const asked = (events: any[]) => events.filter((e) => e.type === 'approval_request').map((e) => e.subject);

t.test(
  'the per-hour limit: a user past it is refused with 429 and nothing upstream, on every session; others still send',
  async (t) => {
    const rig = await startRig(t, { AIRLOCK_MAIL_MAX_PER_HOUR: '3' });
    const ann = await rig.login('ann');
    const first = await turn(ann, [
      { to: 'a@corp.example', subject: 'one' },
      { to: 'b@corp.example', subject: 'two' },
    ]);
    // A refused send is not a sent one: it does not use up the limit.
    await turn(ann, [{ to: 'x@partner.example', subject: 'denied' }], {
      sessionId: first.sessionId,
      decide: () => ({ decision: 'deny' }),
    });
    // A new chat of the same user: the limit is the user's, not the session's.
    await turn(ann, [
      { to: 'c@corp.example', subject: 'three' },
      { to: 'd@corp.example', subject: 'four' },
    ]);
    t.same(rig.results.get('three'), { status: 200, code: null }, 'the third send of the hour goes through');
    t.same(rig.results.get('four'), { status: 429, code: 'ERR_MAIL_RATE_LIMITED' }, 'the fourth is refused');
    // An approval does not get past the limit either: the limit is checked before asking.
    const held = await turn(ann, [{ to: 'y@partner.example', subject: 'five' }], {
      decide: () => ({ decision: 'approve' }),
    });
    t.same(
      rig.results.get('five'),
      { status: 429, code: 'ERR_MAIL_RATE_LIMITED' },
      'an ask send past the limit is refused without asking',
    );
    t.same(asked(held.events), [], 'nobody was asked');
    const bob = await rig.login('bob');
    await turn(bob, [{ to: 'e@corp.example', subject: 'bob one' }]);
    t.same(rig.results.get('bob one'), { status: 200, code: null }, 'another user has a limit of their own');
    t.same(rig.arrived(), ['one', 'two', 'three', 'bob one'], 'nothing past the limit reached the upstream');

    await rig.gate.flushed();
    const annId = (
      await rig.app.database.sql
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'ann')
        .executeTakeFirstOrThrow()
    ).id;
    const refused = (await queryActionLog(rig.app.database.sql, { event: 'mail.refused' })).filter(
      (r) => r.subject_id === annId,
    );
    t.same(
      refused.map((r) => r.data.code).sort(),
      ['ERR_MAIL_RATE_LIMITED', 'ERR_MAIL_RATE_LIMITED'],
      'each refusal is in the action log with its code',
    );
    t.ok(
      refused.every((r) => r.data.recipients === 1 && typeof r.data.turn_id === 'string'),
      'with the recipients count and the turn',
    );
    t.notOk(
      JSON.stringify(refused).includes(BODY) || JSON.stringify(refused).includes(rig.placeholder),
      'never the body or the placeholder',
    );
    const holds = await rig.app.database.sql
      .selectFrom('mail_holds')
      .select(['subject', 'state', 'code'])
      .where('user_id', '=', annId)
      .orderBy('created_at')
      .execute();
    t.same(
      holds.map((h) => [h.subject, h.state, h.code]),
      [
        ['one', 'sent', null],
        ['two', 'sent', null],
        ['denied', 'denied', 'ERR_MAIL_DENIED'],
        ['three', 'sent', null],
        ['four', 'refused', 'ERR_MAIL_RATE_LIMITED'],
        ['five', 'refused', 'ERR_MAIL_RATE_LIMITED'],
      ],
      'mail_holds: the refusals with their code',
    );
  },
);

t.test(
  'approvals, denials, timeouts and refusals are in the action log; each request with its call id and recipients count; no trace header upstream',
  async (t) => {
    const rig = await startRig(t, { AIRLOCK_MAIL_BLOCK_DOMAINS: 'evil.example', AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '5' });
    const cleo = await rig.login('cleo');
    const decisions: Record<string, 'approve' | 'deny'> = { approved: 'approve', denied: 'deny' };
    const answers = new Map<string, unknown>();
    const r = await turn(
      cleo,
      [
        {
          to: 'Ann <ann@corp.example>, bo@corp.example',
          cc: 'cy@corp.example',
          bcc: 'di@corp.example',
          subject: 'four recipients',
          call: 'call_fine-1',
        },
        { to: 'p@partner.example', subject: 'approved', call: 'call_ask-2' },
        { to: 'p@partner.example', subject: 'denied', call: 'call_ask-3' },
        { to: 'p@partner.example', subject: 'timed out', call: 'call_ask-4' },
        { to: 'ok@corp.example', bcc: 'x@evil.example', subject: 'blocked', call: 'call_bad-5' },
      ],
      // The deny also names a scope: a deny still answers as a deny, without one.
      {
        decide: (e) =>
          decisions[e.subject] === 'deny'
            ? { decision: 'deny', scope: 'recipient' }
            : decisions[e.subject]
              ? { decision: decisions[e.subject] }
              : undefined,
        answers,
      },
    );
    t.same(
      answers.get('denied'),
      {
        approval_id: r.events.find((e) => e.type === 'approval_request' && e.subject === 'denied').approval_id,
        decision: 'denied',
      },
      'a deny answers {approval_id, decision: denied}: no scope',
    );
    t.match(answers.get('approved'), { decision: 'approved', scope: 'once' }, 'an approval answers with its scope');
    t.same(
      ['four recipients', 'approved', 'denied', 'timed out', 'blocked'].map((s) => rig.results.get(s)),
      [
        { status: 200, code: null },
        { status: 200, code: null },
        { status: 403, code: 'ERR_MAIL_DENIED' },
        { status: 403, code: 'ERR_MAIL_APPROVAL_TIMEOUT' },
        { status: 403, code: 'ERR_MAIL_BLOCKED' },
      ],
    );
    t.same(asked(r.events), ['approved', 'denied', 'timed out'], 'asked for each ask send');

    // The trace header names the call for the audit trail and never goes upstream.
    const sent = rig.upstream.requests.filter((x) => x.path === '/gmail/v1/users/me/messages/send');
    t.equal(sent.length, 2);
    t.ok(
      sent.every((x) => x.headers[CALL_ID_HEADER] === undefined && x.headers.authorization === `Bearer ${TOKEN}`),
      'the upstream saw the real token and no X-Airlock-Call',
    );
    // The proxy's own header: read and removed, not dropped as a stranger (the count would say so).
    t.same(
      rig.proxyDecisions.map((d) => d.dropped_headers ?? 0),
      [0, 0, 0, 0, 0],
      'X-Airlock-Call is not counted as a dropped header',
    );

    await rig.gate.flushed();
    const sql = rig.app.database.sql;
    const reqs = await sql
      .selectFrom('proxy_requests')
      .select(['call_id', 'recipients', 'outcome', 'status', 'code', 'turn_id', 'session_id'])
      .orderBy('id')
      .execute();
    t.same(
      reqs.map((x) => [x.call_id, x.recipients, x.outcome, x.status, x.code]),
      [
        ['call_fine-1', 4, 'forwarded', 200, null],
        ['call_ask-2', 1, 'forwarded', 200, null],
        ['call_ask-3', 1, 'refused', 403, 'ERR_MAIL_DENIED'],
        ['call_ask-4', 1, 'refused', 403, 'ERR_MAIL_APPROVAL_TIMEOUT'],
        ['call_bad-5', 2, 'refused', 403, 'ERR_MAIL_BLOCKED'],
      ],
      'proxy_requests: each send with its call id and recipients count (To + Cc + Bcc)',
    );
    const turnId = reqs[0].turn_id;
    t.ok(
      turnId && reqs.every((x) => x.turn_id === turnId && x.session_id === r.sessionId),
      'all in the turn and session that made them',
    );

    const cleoId = (await sql.selectFrom('users').select('id').where('username', '=', 'cleo').executeTakeFirstOrThrow())
      .id;
    const log = (await queryActionLog(sql, { subjectId: cleoId })).filter((e) => e.event.startsWith('mail.')).reverse();
    t.same(
      log.map((e) => [e.event, e.data.call_id, e.data.recipients, e.actor_id]),
      [
        ['mail.approved', 'call_ask-2', 1, cleoId],
        ['mail.denied', 'call_ask-3', 1, cleoId],
        ['mail.approval_timed_out', 'call_ask-4', 1, cleoId],
      ],
      'one action-log entry per decision, with the call and the recipients count',
    );
    t.ok(
      log.every(
        (e) => e.data.session_id === r.sessionId && e.data.turn_id === turnId && typeof e.data.hold_id === 'string',
      ),
      'each names its session, turn and hold',
    );
    t.same(
      log.map((e) => e.data.scope),
      ['once', null, null],
      'the approval says its scope',
    );
    // The proxy refuses a blocked send itself: the gate never sees it, so its refusal is only in
    // proxy_requests. A refusal the gate makes (limit, policy changed since the session start) is
    // a mail.refused entry (the per-hour test above).
    t.same(await queryActionLog(sql, { event: 'mail.refused' }), [], 'no gate refusal here');
    const audit = JSON.stringify(log) + JSON.stringify(reqs);
    for (const secret of [BODY, TOKEN, rig.placeholder])
      t.notOk(audit.includes(secret), `no ${secret.slice(0, 10)}… in the action log or proxy_requests`);
  },
);

t.test(
  '"approve for this recipient" through the API: the same recipient in the same session passes; another recipient or another session is asked again',
  async (t) => {
    const rig = await startRig(t, {});
    const dan = await rig.login('dan');
    const first = await turn(dan, [{ to: 'carol@partner.example', subject: 'carol 1' }], {
      decide: () => ({ decision: 'approve', scope: 'recipient' }),
    });
    const decided = first.events.find((e) => e.type === 'approval_result');
    t.match(decided, { decision: 'approved', scope: 'recipient' }, 'the stream says approved for the recipient');
    const again = await turn(
      dan,
      [
        { to: 'Carol <carol@partner.example>', subject: 'carol 2' },
        { to: 'dave@partner.example', subject: 'dave 1' },
        { to: 'carol@partner.example, erin@partner.example', subject: 'carol and erin' },
      ],
      { sessionId: first.sessionId, decide: (e) => ({ decision: e.subject === 'dave 1' ? 'deny' : 'approve' }) },
    );
    const requests = again.events.filter((e) => e.type === 'approval_request');
    t.same(
      requests.map((e) => [e.subject, e.ask]),
      [
        ['dave 1', ['dave@partner.example']],
        ['carol and erin', ['erin@partner.example']],
      ],
      'no question for carol again; another recipient is asked about (and only about the one not approved)',
    );
    const other = await turn(dan, [{ to: 'carol@partner.example', subject: 'carol elsewhere' }], {
      decide: () => ({ decision: 'deny' }),
    });
    t.same(asked(other.events), ['carol elsewhere'], 'another chat session of the same user is asked again');
    t.not(other.sessionId, first.sessionId);
    t.same(
      ['carol 1', 'carol 2', 'dave 1', 'carol and erin', 'carol elsewhere'].map(
        (s) => rig.results.get(s)?.code ?? null,
      ),
      [null, null, 'ERR_MAIL_DENIED', null, 'ERR_MAIL_DENIED'],
    );
    t.same(rig.arrived(), ['carol 1', 'carol 2', 'carol and erin'], 'only the approved sends arrived');
    const holds = await rig.app.database.sql
      .selectFrom('mail_holds')
      .select(['subject', 'state', 'scope'])
      .orderBy('created_at')
      .execute();
    t.same(
      holds.map((h) => [h.subject, h.state, h.scope]),
      [
        ['carol 1', 'approved', 'recipient'],
        ['carol 2', 'approved', 'recipient'],
        ['dave 1', 'denied', null],
        ['carol and erin', 'approved', 'once'],
        ['carol elsewhere', 'denied', null],
      ],
      'mail_holds: the second send to carol passed on the earlier approval',
    );
    const stale = await dan.json('POST', `/api/chat/sessions/${first.sessionId}/approvals/${decided.approval_id}`, {
      decision: 'approve',
      scope: 'recipient',
    });
    t.equal(stale.status, 409, 'a decided approval cannot be decided again');
  },
);
