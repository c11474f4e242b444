/**
 * What the user sees of a held send (docs/chat.md#approvals), over real HTTP: the web app with its
 * chat routes, the MailGate, the credential proxy with the send policy, the egress gateway and the
 * fake Google upstream. A turn runner posts the message the send_email tool builds (tools/mime.ts:
 * text, a chart as an inline PNG named after its title) to the proxy during the turn.
 *
 * Covered: the preview route shows From, To, Cc, Bcc, Subject, the body text and the attachment
 * (name from the chart's title, a thumbnail's bytes) to the chat's owner only (404 for another
 * user); it answers 410 once the send is decided; the body is never in the stream, the history or
 * the database; after a restart of the app (the turn no longer in memory) the history and the
 * turn's replayed events still show the approval and its decision.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { addUser, tempDir } from '../helpers/app.js';
import { streamTurn } from '../helpers/chat.js';
import { BODY, loginAs, PNG, startMailRig } from '../helpers/mail-rig.js';

t.test(
  'the owner sees From, To, Cc, Bcc, Subject, the body and the chart while the send waits; nobody else; gone after the decision; the decision stays in the history',
  async (t) => {
    const dataDir = tempDir(t);
    const rig = await startMailRig(t, dataDir);
    const ann = await loginAs(rig.app, 'ann', true);
    const bob = await loginAs(rig.app, 'bob', true);
    const seen: Record<string, any> = {};
    const r = await streamTurn(ann, { message: 'Q3 revenue' }, async (e, _all, sid) => {
      if (e.type !== 'approval_request') return;
      const base = `/api/chat/sessions/${sid}/approvals/${e.approval_id}`;
      seen.request = e;
      seen.base = base;
      seen.preview = await ann.json('GET', `${base}/preview`);
      const img = await ann.request('GET', `${base}/attachments/0`);
      seen.image = {
        status: img.status,
        type: img.headers.get('content-type'),
        bytes: Buffer.from(await img.arrayBuffer()),
      };
      seen.bob = await bob.json('GET', `${base}/preview`);
      seen.bobImage = (await bob.request('GET', `${base}/attachments/0`)).status;
      seen.missing = await ann.json('GET', `/api/chat/sessions/${sid}/approvals/${randomUUID()}/preview`);
      const d = await ann.json('POST', base, { decision: 'approve' });
      t.equal(d.status, 200, 'approved');
    });
    t.equal(r.status, 200);
    const sid = r.sessionId!;
    const p = seen.preview;
    t.equal(p.status, 200, 'the owner gets the preview');
    t.same(
      { from: p.body.from, to: p.body.to, cc: p.body.cc, bcc: p.body.bcc, subject: p.body.subject },
      {
        from: ['me@corp.example'],
        to: ['ext@partner.example'],
        cc: ['colleague@corp.example'],
        bcc: ['audit@corp.example'],
        subject: 'Q3 revenue',
      },
      'From, To, Cc, Bcc and Subject as the message has them',
    );
    t.match(p.body.text, BODY, 'the body as text');
    t.equal(p.body.truncated, false);
    t.same(
      p.body.attachments,
      [{ n: 0, name: 'quarterly-revenue-eur-2026.png', content_type: 'image/png', size: PNG.length, thumbnail: true }],
      'the chart by the name made from its title',
    );
    t.equal(p.res.headers.get('cache-control'), 'no-store');
    t.same([seen.image.status, seen.image.type], [200, 'image/png'], 'the thumbnail is served');
    t.ok(seen.image.bytes.equals(PNG), 'with the bytes that are sent');
    t.same(
      [seen.bob.status, seen.bob.body.error.code, seen.bobImage],
      [404, 'ERR_CHAT_SESSION_NOT_FOUND', 404],
      'another user gets 404',
    );
    t.same(
      [seen.missing.status, seen.missing.body.error.code],
      [404, 'ERR_APPROVAL_NOT_FOUND'],
      'an unknown send: 404',
    );
    t.notOk(JSON.stringify(r.events).includes(BODY), 'the body is never in the stream');
    t.equal(
      rig.upstream.requests.filter((x) => x.path === '/gmail/v1/users/me/messages/send').length,
      1,
      'the approved send reached the upstream',
    );

    const after = await ann.json('GET', `${seen.base}/preview`);
    t.same([after.status, after.body.error.code], [410, 'ERR_APPROVAL_PREVIEW_GONE'], 'decided: the preview is gone');
    t.equal((await ann.request('GET', `${seen.base}/attachments/0`)).status, 410, 'and so is the image');

    // A restart: the turn is no longer in memory; the history is rebuilt from the store.
    await rig.gate.flushed();
    await rig.app.close();
    const again = await startMailRig(t, dataDir);
    const ann2 = await loginAs(again.app, 'ann', false);
    const h = await ann2.json('GET', `/api/chat/sessions/${sid}/messages`);
    t.equal(h.status, 200);
    const a = h.body.turns[0].approvals;
    t.equal(a.length, 1, 'the stored turn has its approval');
    t.match(a[0], {
      approval_id: seen.request.approval_id,
      call_id: 'call-1',
      recipients: ['ext@partner.example', 'colleague@corp.example', 'audit@corp.example'],
      ask: ['ext@partner.example'],
      subject: 'Q3 revenue',
      state: 'approved',
      scope: 'once',
    });
    t.same(
      a[0].fields,
      { to: ['ext@partner.example'], cc: ['colleague@corp.example'], bcc: ['audit@corp.example'] },
      'To, Cc and Bcc kept apart (issue 41)',
    );
    t.same(a[0].attachments, [{ name: 'quarterly-revenue-eur-2026.png', size: PNG.length }]);
    t.notOk(JSON.stringify(h.body).includes(BODY), 'never the body');
    const ev = await ann2.request('GET', `/api/chat/sessions/${sid}/turns/${h.body.turns[0].turn_id}/events`);
    const events = (await ev.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.same(
      events.map((e) => e.type),
      ['tool_start', 'approval_request', 'approval_result', 'tool_end', 'done'],
      'the replayed events: the approval after the call that sent it, then its decision',
    );
    t.match(events[2], { approval_id: seen.request.approval_id, decision: 'approved', scope: 'once' });
    t.same(events[1].fields, a[0].fields, 'the replayed request keeps them apart too');
    t.same(seen.request.fields, a[0].fields, 'as the live request had them');
    // The admin's turn audit shows them apart as well.
    await addUser(again.app.database, 'audit-root', 'audit-root-password', { superuser: true });
    const admin = again.app.client();
    t.equal((await admin.login('audit-root', 'audit-root-password')).status, 200);
    const audit = await admin.json('GET', `/api/admin/turns/${h.body.turns[0].turn_id}`);
    t.equal(audit.status, 200);
    t.same(audit.body.mail_holds[0].fields, a[0].fields, 'the turn audit keeps To, Cc and Bcc apart');
    const gone = await ann2.json('GET', `${seen.base}/preview`);
    t.equal(gone.status, 410, 'after a restart, still gone');
    const rows = await again.app.database.sql.selectFrom('mail_holds').selectAll().execute();
    t.notOk(JSON.stringify(rows).includes(BODY), 'the database never had the body');
  },
);

t.test('a denied send: the history says so; the preview answered while it waited and not after', async (t) => {
  const rig = await startMailRig(t, tempDir(t));
  const ann = await loginAs(rig.app, 'ann', true);
  let during = 0;
  let base = '';
  const r = await streamTurn(ann, { message: 'Denied one' }, async (e, _all, sid) => {
    if (e.type !== 'approval_request') return;
    base = `/api/chat/sessions/${sid}/approvals/${e.approval_id}`;
    during = (await ann.request('GET', `${base}/preview`)).status;
    await ann.json('POST', base, { decision: 'deny' });
  });
  t.equal(during, 200);
  t.equal((await ann.request('GET', `${base}/preview`)).status, 410);
  const h = await ann.json('GET', `/api/chat/sessions/${r.sessionId}/messages`);
  t.match(h.body.turns[0].approvals, [{ subject: 'Denied one', state: 'denied' }]);
  t.equal(rig.upstream.requests.filter((x) => x.path === '/gmail/v1/users/me/messages/send').length, 0, 'nothing sent');
});
