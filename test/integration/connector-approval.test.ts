/**
 * A connector tool marked ask, approved in the chat (docs/connectors.md "Approval binding"), over
 * real HTTP: the web app's chat routes and its approval route, the daemon's ConnectorApprovals
 * as `airlock serve` wires it (one decider with the MailGate), the agent's own connector client →
 * the in-sandbox proxy → the egress gateway's connector side → a real MCP server (official SDK).
 *
 * Covered: the `approval_request` (kind `connector`) carries the connector, the tool and the exact
 * arguments and the turn's tool call id; approve → the server receives exactly those arguments;
 * deny → nothing forwarded; a second tools/call under the approved call id with other arguments is
 * refused with ERR_CONNECTOR_APPROVAL_MISMATCH and no card, the same arguments again with
 * ERR_CONNECTOR_APPROVAL_DENIED (one approval, one call); a second click says already decided;
 * another user cannot decide it. Each card is kept with its turn: the history and a stored turn's
 * events carry it with its decision (a pending one on a turn that ended reads as denied), and it
 * goes with the chat. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { streamTurn } from '../helpers/chat.js';
import { loginAs } from '../helpers/mail-rig.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/sandbox-protocol.js';
import type { ToolOutcome } from '../../agent/mcp.js';
import { ToolHost } from '../../agent/mcp.js';
import { approvalDecider, ConnectorApprovals } from '../../daemon/host/connector-approvals.js';
import { MailGate } from '../../domain/mail/index.js';
import { recordConnectorAsk } from '../../domain/chat/approvals.js';

const ARGS = { title: 'Printer on fire <script>alert("x")</script> — café', priority: 'high' };

t.test(`a connector tool marked ask: the card, approve, deny, changed arguments (${TEST_ENGINE})`, async (t) => {
  let current: TurnRequest | undefined;
  let turnBody: (req: TurnRequest) => Promise<void> = async () => undefined;
  const runner: TurnRunner = {
    async runTurn(req): Promise<TurnResult> {
      current = req;
      try {
        await turnBody(req);
        return { stop_reason: 'end_turn' };
      } finally {
        current = undefined;
      }
    },
  };
  let approvals!: ConnectorApprovals;
  const app = await startTestApp(t, {
    env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' },
    services: (a) => {
      approvals = new ConnectorApprovals({ db: a.database.sql, log: a.log, timeoutMs: 20_000 });
      return { chat: { runner }, approvals: approvalDecider(new MailGate(a.database.sql, a.config, a.log), approvals) };
    },
  });
  const bob = await loginAs(app, 'bob', true);
  const eve = await loginAs(app, 'eve', true);
  const bobId = (
    await app.database.sql.selectFrom('users').select('id').where('username', '=', 'bob').executeTakeFirstOrThrow()
  ).id;

  const up = await startMcpUpstream();
  t.teardown(() => up.close());
  const svc = new ConnectorService({ db: app.database.sql, enc: atRestEncryptor(app.config), allowHttpLoopback: true });
  await svc.create({ id: 'acme', label: 'Acme Tickets', url: up.url, auth_kind: 'none' }, null);
  const rig = await startConnectorRig(t, app, bobId, { approve: approvals.approve, turn: () => current });
  const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
  host.setRemote(rig.agent);
  t.teardown(() => host.close());
  await host.refresh();
  const tickets = () => up.calls.filter((c) => c.name === 'create_ticket');

  // Turn 1: the card; approve; then the same call id again with a changed argument, and unchanged.
  const outcomes: ToolOutcome[] = [];
  turnBody = async (req) => {
    const call = (args: Record<string, unknown>) =>
      host.call('acme__create_ticket', args, req.signal, 30_000, 'call-1');
    outcomes.push(await call(ARGS));
    outcomes.push(await call({ ...ARGS, priority: 'low' }));
    outcomes.push(await call(ARGS));
  };
  const seen: Record<string, any> = {};
  const r1 = await streamTurn(bob, { message: 'file it' }, async (e, _all, sid) => {
    if (e.type !== 'approval_request') return;
    const base = `/api/chat/sessions/${sid}/approvals/${e.approval_id}`;
    seen.eve = await eve.json('POST', base, { decision: 'approve' });
    t.same(tickets(), [], 'nothing forwarded while the card waits');
    seen.approve = await bob.json('POST', base, { decision: 'approve' });
    seen.base = base;
  });
  t.equal(r1.status, 200);
  const cards = r1.events.filter((e) => e.type === 'approval_request');
  t.equal(cards.length, 1, 'one card for the three calls under one call id');
  t.match(cards[0], {
    kind: 'connector',
    call_id: 'call-1',
    connector: { id: 'acme', label: 'Acme Tickets' },
    tool: 'create_ticket',
  });
  t.same(cards[0].arguments, ARGS, 'the card carries the exact arguments');
  t.same(
    [seen.eve.status, seen.eve.body.error.code],
    [404, 'ERR_CHAT_SESSION_NOT_FOUND'],
    'another user cannot decide it',
  );
  t.same(
    [seen.approve.status, seen.approve.body],
    [200, { approval_id: cards[0].approval_id, decision: 'approved', scope: 'once' }],
  );
  t.match(
    r1.events.find((e) => e.type === 'approval_result'),
    { approval_id: cards[0].approval_id, decision: 'approved' },
  );
  t.same(
    tickets(),
    [{ name: 'create_ticket', args: ARGS }],
    'the server received exactly the approved arguments, once',
  );
  t.match(outcomes[0], { ok: true });
  t.match(outcomes[1], { ok: false, text: /ERR_CONNECTOR_APPROVAL_MISMATCH|differ from the ones the user approved/ });
  t.match(outcomes[2], { ok: false, text: /already approved and made once/ });
  t.match(
    rig.calls.map((c) => [c.callId, c.status, c.code ?? null]),
    [
      ['call-1', 'ok', null],
      ['call-1', 'refused', 'ERR_CONNECTOR_APPROVAL_MISMATCH'],
      ['call-1', 'refused', 'ERR_CONNECTOR_APPROVAL_DENIED'],
    ],
  );
  const again = await bob.json('POST', seen.base, { decision: 'deny' });
  t.same([again.status, again.body.error.code], [409, 'ERR_APPROVAL_DECIDED'], 'a second click: already decided');

  // Turn 2: deny → never forwarded; the model is told.
  outcomes.length = 0;
  turnBody = async (req) => {
    outcomes.push(await host.call('acme__create_ticket', { title: 'Second' }, req.signal, 30_000, 'call-2'));
  };
  const r2 = await streamTurn(bob, { message: 'file another', session_id: r1.sessionId }, async (e, _all, sid) => {
    if (e.type === 'approval_request')
      await bob.json('POST', `/api/chat/sessions/${sid}/approvals/${e.approval_id}`, { decision: 'deny' });
  });
  t.equal(r2.status, 200);
  t.match(
    r2.events.find((e) => e.type === 'approval_request'),
    { kind: 'connector', call_id: 'call-2', arguments: { title: 'Second' } },
  );
  t.match(
    r2.events.find((e) => e.type === 'approval_result'),
    { decision: 'denied' },
  );
  t.match(outcomes[0], { ok: false, text: /did not approve/ });
  t.equal(tickets().length, 1, 'the denied call never reached the server');

  // Kept with the turns (docs/connectors.md "Approval binding"): the history after a reload, and a
  // turn's events read back from the store, carry each card with its decision.
  const history = await bob.json('GET', `/api/chat/sessions/${r1.sessionId}/messages`);
  t.equal(history.status, 200);
  t.same(
    history.body.turns.map((turn: any) =>
      (turn.approvals ?? []).map((a: any) => [
        a.kind,
        a.approval_id,
        a.call_id,
        a.connector,
        a.tool,
        a.arguments,
        a.state,
      ]),
    ),
    [
      [
        [
          'connector',
          cards[0].approval_id,
          'call-1',
          { id: 'acme', label: 'Acme Tickets' },
          'create_ticket',
          ARGS,
          'approved',
        ],
      ],
      [
        [
          'connector',
          r2.events.find((e) => e.type === 'approval_request').approval_id,
          'call-2',
          { id: 'acme', label: 'Acme Tickets' },
          'create_ticket',
          { title: 'Second' },
          'denied',
        ],
      ],
    ],
    'each turn keeps its card, the exact arguments and the decision',
  );
  const replay = await bob.request(
    'GET',
    `/api/chat/sessions/${r1.sessionId}/turns/${history.body.turns[0].turn_id}/events?after=0`,
  );
  const replayed = (await replay.text())
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  t.match(
    replayed.filter((e) => e.type.startsWith('approval_')),
    [
      {
        type: 'approval_request',
        kind: 'connector',
        approval_id: cards[0].approval_id,
        call_id: 'call-1',
        connector: { id: 'acme', label: 'Acme Tickets' },
        tool: 'create_ticket',
        arguments: ARGS,
      },
      { type: 'approval_result', approval_id: cards[0].approval_id, decision: 'approved' },
    ],
    'a stored turn replays the card and its decision',
  );
  // A card still pending on a turn that no longer runs (the daemon stopped while it waited) was
  // never forwarded: it reads as denied.
  await recordConnectorAsk(app.database.sql, {
    id: 'cut-off-1',
    sessionId: r1.sessionId!,
    turnId: history.body.turns[1].turn_id,
    callId: 'call-9',
    userId: bobId,
    connector: { id: 'acme', label: 'Acme Tickets' },
    tool: 'create_ticket',
    arguments: { title: 'Cut off' },
  });
  const after = await bob.json('GET', `/api/chat/sessions/${r1.sessionId}/messages`);
  t.match(after.body.turns[1].approvals.at(-1), {
    approval_id: 'cut-off-1',
    state: 'denied',
    arguments: { title: 'Cut off' },
  });
  t.same(
    (await eve.json('GET', `/api/chat/sessions/${r1.sessionId}/messages`)).status,
    404,
    'another user cannot read them',
  );

  // Outside a turn nobody can be asked: refused, not run.
  const outside = await host.call(
    'acme__create_ticket',
    { title: 'No turn' },
    new AbortController().signal,
    30_000,
    'call-3',
  );
  t.match(outside, { ok: false, text: /did not approve/ });
  t.equal(tickets().length, 1);
  const logged = await app.database.sql
    .selectFrom('action_log')
    .select(['event', 'data'])
    .where('event', 'like', 'connector.call_%')
    .orderBy('id')
    .execute();
  t.same(
    logged.map((l) => l.event),
    ['connector.call_approved', 'connector.call_denied'],
  );
  t.notOk(
    logged.some((l) => String(l.data).includes('Printer')),
    'the action log never holds the arguments',
  );
  // Deleting the chat deletes its held calls (their arguments are the chat's).
  t.equal((await bob.request('DELETE', `/api/chat/sessions/${r1.sessionId}`)).status, 204);
  t.same(
    await app.database.sql.selectFrom('connector_approvals').select('id').execute(),
    [],
    'no held call outlives its chat',
  );
});
