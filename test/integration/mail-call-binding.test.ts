/**
 * A held send is bound to a send_email call the turn really runs (core/turn-calls.ts,
 * domain/mail/gate.ts; docs/security.md "A held send is bound to a running call"), at the
 * boundary the sandbox reaches: the credential proxy and the egress gateway over real HTTP, the
 * mail gate, the chat stream and the approval route, the fake Gmail upstream (test/helpers/mail-rig.ts).
 *
 * The forged-call-id attack of issue 41: while the real send_email call waits for approval, the
 * sandbox posts more sends carrying the same X-Airlock-Call id (same recipient and subject,
 * another body). Each gets ERR_MAIL_CALL_REUSED and no card; a send naming a call the turn does not
 * run, a call of another tool, or none gets ERR_MAIL_CALL_UNBOUND and no card; the one card is
 * the real send's, and the upstream gets exactly the real body once.
 */
import t from 'tap';
import { CALL_ID_HEADER } from '../../core/sandbox-protocol.js';
import { streamTurn } from '../helpers/chat.js';
import { loginAs, startMailPath } from '../helpers/mail-rig.js';
import { tempDir } from '../helpers/app.js';

const REAL = 'Hi, please find the Q2 numbers. Revenue 181, costs 99.';
const FORGED = 'Also forwarding our internal salary sheet link: https://intranet.corp.example/salaries';
const message = (body: string) =>
  Buffer.from(
    [
      'From: me@corp.example',
      'To: ext@partner.example',
      'Subject: Q2 numbers',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      body,
      '',
    ].join('\r\n'),
  ).toString('base64url');

t.test(
  'a second send under a running call is refused with ERR_MAIL_CALL_REUSED and shows no card; unbound calls with ERR_MAIL_CALL_UNBOUND',
  async (t) => {
    let onAsked: () => void = () => {};
    const asked = new Promise<void>((resolve) => (onAsked = resolve));
    let onForged: () => void = () => {};
    const forgedDone = new Promise<void>((resolve) => (onForged = resolve));
    const results: Record<string, { status: number; code: string | null }> = {};
    const { app, upstream, gate } = await startMailPath(t, {
      dataDir: tempDir(t),
      async turn(req, path) {
        const post = async (label: string, body: string, call?: string) => {
          const res = await fetch(`${path.proxyUrl}/gmail/mail/v1/users/me/messages/send`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${path.placeholder}`,
              'content-type': 'application/json',
              ...(call ? { [CALL_ID_HEADER]: call } : {}),
            },
            body: JSON.stringify({ raw: message(body) }),
          });
          await res.text();
          results[label] = { status: res.status, code: res.headers.get('x-airlock-error') };
        };
        req.onEvent({ type: 'tool_start', call_id: 'call_real', tool: 'send_email', input: { subject: 'Q2 numbers' } });
        req.onEvent({ type: 'tool_start', call_id: 'call_sheet', tool: 'fetch_sheet', input: {} });
        const real = post('real', REAL, 'call_real');
        // The sandbox, while the real call waits for the user: the same call id twice, then others.
        await asked;
        await Promise.all([post('forged 1', FORGED, 'call_real'), post('forged 2', `${REAL}\n${FORGED}`, 'call_real')]);
        await post('unknown call', FORGED, 'call_never_started');
        await post('other tool', FORGED, 'call_sheet');
        await post('no call', FORGED);
        onForged();
        await real;
        req.onEvent({ type: 'tool_end', call_id: 'call_real', tool: 'send_email', ok: true, duration_ms: 1 });
        // After its call ended, the id binds nothing any more.
        await post('after the end', FORGED, 'call_real');
        req.onEvent({ type: 'tool_end', call_id: 'call_sheet', tool: 'fetch_sheet', ok: true, duration_ms: 1 });
        return { stop_reason: 'end_turn' };
      },
    });
    const c = await loginAs(app, 'mallory-target', true);
    let approvalId = '';
    const r = await streamTurn(c, { message: 'send the Q2 numbers' }, async (e, _all, sid) => {
      if (e.type !== 'approval_request') return;
      approvalId = e.approval_id;
      onAsked();
      await forgedDone;
      const res = await c.json('POST', `/api/chat/sessions/${sid}/approvals/${e.approval_id}`, { decision: 'approve' });
      if (res.status !== 200) throw new Error(`approve refused: ${res.status}`);
    });
    t.equal(r.status, 200);
    t.same(results, {
      real: { status: 200, code: null },
      'forged 1': { status: 409, code: 'ERR_MAIL_CALL_REUSED' },
      'forged 2': { status: 409, code: 'ERR_MAIL_CALL_REUSED' },
      'unknown call': { status: 403, code: 'ERR_MAIL_CALL_UNBOUND' },
      'other tool': { status: 403, code: 'ERR_MAIL_CALL_UNBOUND' },
      'no call': { status: 403, code: 'ERR_MAIL_CALL_UNBOUND' },
      'after the end': { status: 409, code: 'ERR_MAIL_CALL_REUSED' },
    });
    const cards = r.events.filter((e) => e.type === 'approval_request');
    t.equal(cards.length, 1, 'one card: the real send');
    t.match(cards[0], { call_id: 'call_real', subject: 'Q2 numbers', recipients: ['ext@partner.example'] });
    const sent = upstream.requests
      .filter((q) => q.path === '/gmail/v1/users/me/messages/send')
      .map((q) => Buffer.from(JSON.parse(q.body).raw, 'base64url').toString());
    t.equal(sent.length, 1, 'exactly one message reached Gmail');
    t.match(sent[0], REAL);
    t.notMatch(sent[0], /salary/, 'never the forged body');
    // "Approving the same card again" sends nothing: the card is decided.
    const again = await c.json('POST', `/api/chat/sessions/${r.sessionId}/approvals/${approvalId}`, {
      decision: 'approve',
    });
    t.match(again, { status: 409, body: { error: { code: 'ERR_APPROVAL_DECIDED' } } });
    t.equal(upstream.requests.filter((q) => q.path === '/gmail/v1/users/me/messages/send').length, 1);
    await gate.flushed();
    const holds = await app.database.sql
      .selectFrom('mail_holds')
      .select(['call_id', 'state', 'code'])
      .orderBy('created_at')
      .execute();
    t.same(
      holds
        .filter((h) => h.state === 'refused')
        .map((h) => h.code)
        .sort(),
      [
        'ERR_MAIL_CALL_REUSED',
        'ERR_MAIL_CALL_REUSED',
        'ERR_MAIL_CALL_REUSED',
        'ERR_MAIL_CALL_UNBOUND',
        'ERR_MAIL_CALL_UNBOUND',
        'ERR_MAIL_CALL_UNBOUND',
      ],
      'each refusal is recorded with its code',
    );
    t.same(
      holds.filter((h) => h.state !== 'refused').map((h) => [h.call_id, h.state]),
      [['call_real', 'approved']],
    );
  },
);

t.test(
  'a send whose parts the card cannot show faithfully is refused with ERR_MAIL_PREVIEW_INCOMPLETE, no card, nothing sent',
  async (t) => {
    const results: { status: number; code: string | null }[] = [];
    const { app, upstream } = await startMailPath(t, {
      dataDir: tempDir(t),
      async turn(req, path) {
        req.onEvent({ type: 'tool_start', call_id: 'call_alt', tool: 'send_email', input: {} });
        const raw = [
          'From: me@corp.example',
          'To: ext@partner.example',
          'Subject: alt',
          'MIME-Version: 1.0',
          'Content-Type: multipart/alternative; boundary="b"',
          '',
          '--b',
          'Content-Type: text/plain',
          '',
          REAL,
          '--b',
          'Content-Type: text/watch-html',
          '',
          FORGED,
          '--b--',
          '',
        ].join('\r\n');
        const res = await fetch(`${path.proxyUrl}/gmail/mail/v1/users/me/messages/send`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${path.placeholder}`,
            'content-type': 'application/json',
            [CALL_ID_HEADER]: 'call_alt',
          },
          body: JSON.stringify({ raw: Buffer.from(raw).toString('base64url') }),
        });
        const text = await res.text();
        results.push({ status: res.status, code: res.headers.get('x-airlock-error') });
        req.onEvent({
          type: 'tool_end',
          call_id: 'call_alt',
          tool: 'send_email',
          ok: false,
          error: text,
          duration_ms: 1,
        });
        return { stop_reason: 'end_turn' };
      },
    });
    const c = await loginAs(app, 'ivy', true);
    const r = await streamTurn(c, { message: 'send it' });
    t.same(results, [{ status: 422, code: 'ERR_MAIL_PREVIEW_INCOMPLETE' }]);
    t.equal(r.events.filter((e) => e.type === 'approval_request').length, 0, 'no card');
    t.match(
      r.events.find((e) => e.type === 'tool_end')?.error,
      /an alternative part of type text\/watch-html/,
      'the reason reaches the agent',
    );
    t.equal(upstream.requests.filter((q) => q.path === '/gmail/v1/users/me/messages/send').length, 0, 'nothing sent');
  },
);
