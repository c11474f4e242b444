/**
 * The hourly mail limit reserved atomically (domain/mail/store.ts reserveHold, domain/mail/gate.ts,
 * docs/proxy.md#send-policy), on both engines: a burst of 25 concurrent sends of one user with a
 * limit of 20 lets exactly 20 through; on PostgreSQL the burst is split over two gates on two
 * connection pools to the database (two nodes; a fleet needs PostgreSQL, a SQLite install is one
 * process on one connection, where the burst goes through one gate); a send held
 * for the user's approval takes a slot while it waits and gives it back when it is denied.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { DaemonEvent, MailHold, MailSummary } from '../../core/sandbox-protocol.js';
import type { TurnRequest } from '../../core/index.js';
import { TurnCalls } from '../../core/turn-calls.js';
import { MailGate } from '../../domain/mail/index.js';
import { openDatabase } from '../../domain/db/index.js';
import { updateServerMailPolicy } from '../../domain/mail/server-policy.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { dbRows } from '../helpers/db.js';

const summary = (to: string, subject: string): MailSummary => ({
  recipients: [to],
  to: 1,
  cc: 0,
  bcc: 0,
  subject,
  attachments: [],
  bytes: 100,
});
const hold = (
  to: string,
  subject: string,
  verdict: 'allow' | 'ask' = 'allow',
  turnId: string | null = null,
): MailHold => ({
  hold_id: randomUUID(),
  verdict,
  ask: verdict === 'ask' ? [to] : [],
  summary: summary(to, subject),
  call_id: null,
  turn_id: turnId,
});

t.test('a burst of 25 sends with a limit of 20, over two nodes, sends exactly 20', async (t) => {
  const app = await startTestApp(t, {
    env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example', AIRLOCK_MAIL_MAX_PER_HOUR: '20' },
  });
  const user = await addUser(app.database, 'burst', 'burst-password');
  const gates = [new MailGate(app.database.sql, app.config, app.log)];
  const url = app.config.databaseUrl?.reveal();
  if (url) {
    // A second node: its own connection pool to the same database.
    const other = await openDatabase({ url });
    t.teardown(() => other.close());
    gates.push(new MailGate(other.sql, app.config, app.log));
  }
  const s = { sessionId: 'burst-session', userId: user.id };
  const answers = await Promise.all(
    Array.from({ length: 25 }, (_, i) => gates[i % gates.length].hold(s, hold(`r${i}@corp.example`, `burst ${i}`))),
  );
  t.equal(answers.filter((a) => a.allow).length, 20, 'exactly 20 let through');
  const refused = answers.filter((a) => !a.allow);
  t.equal(refused.length, 5);
  t.ok(
    refused.every((a) => !a.allow && a.code === 'ERR_MAIL_RATE_LIMITED'),
    'the rest refused as rate limited',
  );
  const rows = await dbRows<{ state: string; n: number | string }>(
    app.database.sql,
    'SELECT state, COUNT(*) AS n FROM mail_holds WHERE user_id = ? GROUP BY state ORDER BY state',
    user.id,
  );
  t.same(
    rows.map((r) => [r.state, Number(r.n)]),
    [
      ['refused', 5],
      ['sent', 20],
    ],
    'the database agrees',
  );
});

t.test('a held send takes a slot while it waits; denied, it gives it back', async (t) => {
  const app = await startTestApp(t, { env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example' } });
  const user = await addUser(app.database, 'holder', 'holder-password');
  // The limit comes from the server-wide policy in the database, changed after the start.
  await updateServerMailPolicy(app.database.sql, app.config.mail, { max_per_hour: 3 }, user.id);
  const gate = new MailGate(app.database.sql, app.config, app.log);
  const s = { sessionId: 'held-session', userId: user.id };
  const asked: DaemonEvent[] = [];
  let onAsked: () => void = () => {};
  const askedOnce = new Promise<void>((resolve) => (onAsked = resolve));
  const turn: TurnRequest = {
    ...s,
    turnId: 'turn-held',
    prompt: '',
    signal: new AbortController().signal,
    onEvent: () => {},
    onDaemonEvent: (e) => {
      asked.push(e);
      if (e.type === 'approval_request') onAsked();
    },
  };
  // The send is made by a send_email call the turn runs (core/turn-calls.ts), and its message can be shown.
  const calls = new TurnCalls();
  calls.observe({ type: 'tool_start', call_id: 'call-held', tool: 'send_email', input: {} });
  const preview = {
    from: [],
    to: ['x@other.example'],
    cc: [],
    bcc: [],
    subject: 'held',
    text: 'hi',
    truncated: false,
    text_from: 'plain' as const,
    html: null,
    parts_differ: false,
    attachments: [],
  };
  const waiting = gate.hold(
    { ...s, turn, calls },
    { ...hold('x@other.example', 'held', 'ask', 'turn-held'), call_id: 'call-held', preview: () => preview },
  );
  await askedOnce;
  const burst = await Promise.all([0, 1, 2].map((i) => gate.hold(s, hold(`r${i}@corp.example`, `after hold ${i}`))));
  t.same(
    burst.map((a) => a.allow).sort(),
    [false, true, true],
    'the held send counts: 1 held + 2 sent = 3 (which of the three is refused is up to the race)',
  );
  const approvalId = (asked[0] as { approval_id: string }).approval_id;
  await gate.decide({ userId: user.id, sessionId: s.sessionId, approvalId, decision: 'deny', scope: 'once' });
  t.match(await waiting, { allow: false, code: 'ERR_MAIL_DENIED' });
  t.match(
    await gate.hold(s, hold('r9@corp.example', 'after deny')),
    { allow: true },
    'the denied send gave its slot back',
  );
  t.match(await gate.hold(s, hold('r10@corp.example', 'one too many')), {
    allow: false,
    code: 'ERR_MAIL_RATE_LIMITED',
  });
});
