/**
 * A send that repeats one already sent from the same chat (docs/proxy.md#repeated-sends): the same
 * recipients, subject and attachments within the hour. A model that never learnt the outcome of its
 * send (its turn was cut by a crash) may send it again; the mail gate recognises the repeat and
 * sends it only with the user's approval, whatever the policy or an earlier "approve for these
 * recipients in this chat" says. Over the real mail path: web app, MailGate, credential proxy with
 * the send policy, egress gateway, fake Google upstream (test/helpers/mail-rig.ts).
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { tempDir } from '../helpers/app.js';
import { streamTurn } from '../helpers/chat.js';
import { loginAs, startMailRig } from '../helpers/mail-rig.js';

const SEND_PATH = '/gmail/v1/users/me/messages/send';

t.test(
  'a repeated send from the same chat is asked about, even when its recipients were approved for the chat',
  async (t) => {
    const rig = await startMailRig(t, tempDir(t));
    const ann = await loginAs(rig.app, 'ann', true);
    const sends = () => rig.upstream.requests.filter((x) => x.path === SEND_PATH).length;
    /** One turn; each approval request is answered with `answer` and kept. */
    const turn = async (
      subject: string,
      sessionId: string | undefined,
      answer: { decision: 'approve' | 'deny'; scope?: 'once' | 'recipient' },
    ) => {
      const asked: any[] = [];
      const r = await streamTurn(
        ann,
        { message: subject, ...(sessionId ? { session_id: sessionId } : {}) },
        async (e, _all, sid) => {
          if (e.type !== 'approval_request') return;
          asked.push(e);
          const d = await ann.json('POST', `/api/chat/sessions/${sid}/approvals/${e.approval_id}`, answer);
          t.equal(d.status, 200, `${subject}: the decision is taken`);
        },
      );
      t.equal(r.status, 200);
      return { sessionId: r.sessionId!, asked, toolEnd: r.events.find((e) => e.type === 'tool_end') };
    };

    const first = await turn('Weekly report', undefined, { decision: 'approve', scope: 'recipient' });
    t.equal(first.asked.length, 1, 'the first send asks about the outside recipient');
    t.notOk(first.asked[0].repeat_of, 'and is no repeat');
    t.equal(sends(), 1);
    const sid = first.sessionId;

    const other = await turn('Another subject', sid, { decision: 'deny' });
    t.equal(other.asked.length, 0, 'another message to the same recipients: approved for this chat, not asked');
    t.equal(sends(), 2);

    const again = await turn('Weekly report', sid, { decision: 'approve', scope: 'once' });
    t.equal(again.asked.length, 1, 'the same message again is asked about');
    t.match(again.asked[0].repeat_of, /^\d{4}-\d\d-\d\dT/, 'named as a repeat of the first send, with its time');
    t.same(again.asked[0].ask, again.asked[0].recipients, 'about every recipient, not only the outside one');
    t.equal(sends(), 3, 'approved: sent again');

    const denied = await turn('Weekly report', sid, { decision: 'deny' });
    t.equal(denied.asked.length, 1, 'a third time: asked again');
    t.equal(sends(), 3, 'denied: not sent');
    t.equal(denied.toolEnd.ok, false, 'the tool is told it was not sent');

    const elsewhere = await turn('Weekly report', undefined, { decision: 'deny' });
    t.equal(elsewhere.asked.length, 1, 'in another chat the outside recipient is asked about as usual');
    t.notOk(elsewhere.asked[0].repeat_of, 'and it is no repeat: repeats are per chat');

    // Outside a turn nobody can be asked: a repeat is refused with a message that says why.
    const h = await rig.gate.hold(
      { sessionId: sid, userId: (await ann.json('GET', '/api/auth/me')).body.id },
      {
        hold_id: randomUUID(),
        turn_id: null,
        call_id: null,
        verdict: 'allow',
        ask: [],
        summary: {
          recipients: again.asked[0].recipients,
          to: 1,
          cc: 1,
          bcc: 1,
          subject: 'Weekly report',
          attachments: again.asked[0].attachments,
          bytes: 100,
        },
      },
    );
    t.match(
      h,
      { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: /already sent from this chat at/ },
      'outside a turn: refused as a repeat',
    );
    t.equal(sends(), 3);
  },
);
