/**
 * The whole path with real parts: browser-like client → web app → session manager → a real
 * hardened container (supervisor, credential-injection proxy, agent child, MCP tool servers)
 * → egress gateway → Google-shaped and OpenAI-shaped servers on 127.0.0.1. The conversation
 * outliving its sandbox is in chat-e2e-sandbox-lost.test.ts.
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import { shape, streamTurn, waitFor } from '../helpers/chat.js';
import { responseClosed } from '../helpers/wait.js';
import { dockerOrSkip, ensureTestImage, execIn, SANDBOX_RUNTIME } from './helpers.js';
import { simpleParser } from 'mailparser';
import { NOT_CONNECTED_MESSAGE } from '../../tools/result.js';
import { dbInsertId, dbRun } from '../helpers/db.js';
import { chatRig, MODEL_KEY, said } from './chat-e2e-rig.js';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start, startStalling } = chatRig(docker, image);

  t.test(
    'OpenAI-shaped model through the proxy: two tool calls stream in order; warm reuse; the model sees the earlier turn',
    async (t) => {
      const model = await openaiModel.start({
        apiKey: MODEL_KEY,
        script: [
          {
            kind: 'reply',
            text: 'Let me look. ',
            tool_calls: [{ name: 'search_spreadsheets', arguments: { query: 'sample' } }],
          },
          {
            kind: 'reply',
            tool_calls: [
              {
                name: 'render_chart',
                arguments: {
                  type: 'bar',
                  title: 'Sales',
                  labels: ['Jan', 'Feb', 'Mar'],
                  datasets: [{ label: 'Sales', data: [3, 5, 8] }],
                },
              },
            ],
          },
          { kind: 'reply', text: 'Here is your chart of Sample sales 2026.' },
          { kind: 'reply', text: 'You asked about sales before.' },
        ],
      });
      t.teardown(() => model.close());
      const { d, g, c, logs } = await start(t, {
        AIRLOCK_MODEL_PROVIDER: 'openai',
        AIRLOCK_MODEL: 'gpt-e2e',
        AIRLOCK_MODEL_BASE_URL: model.url,
        AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      });

      const first = await streamTurn(c, { message: 'chart my sample sales' });
      t.equal(first.status, 200);
      const ev = first.events;
      t.same(shape(ev), ['text_delta', 'tool_start', 'tool_end', 'tool_start', 'tool_end', 'text_delta', 'done']);
      t.same(
        ev.map((e) => e.seq),
        ev.map((_, i) => i + 1),
        'seq increases by one',
      );
      const ends = ev.filter((e) => e.type === 'tool_end');
      t.same(
        ends.map((e) => [e.tool, e.ok]),
        [
          ['search_spreadsheets', true],
          ['render_chart', true],
        ],
      );
      t.match(
        JSON.stringify(ends[0].output),
        /Sample sales 2026/,
        'the Drive listing came back through proxy and egress',
      );
      const done = ev[ev.length - 1];
      t.equal(done.stop_reason, 'end_turn');
      const sessionId = done.session_id;
      t.ok(sessionId);

      // The real credentials arrived upstream; the placeholders never did.
      t.ok(model.requests.length >= 3);
      for (const r of model.requests)
        t.equal(r.headers.authorization, `Bearer ${MODEL_KEY}`, 'real model key injected by the proxy');
      const drive = g.requests.filter((r) => r.path.startsWith('/drive/v3/files'));
      t.equal(drive.length, 1);
      t.equal(drive[0].headers.authorization, `Bearer ${g.token}`, 'real workspace token injected');

      const [sb] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.ok(sb?.containerId, 'a live sandbox');
      const second = await streamTurn(c, { message: 'what did I ask before?', session_id: sessionId });
      t.equal(second.events.at(-1).stop_reason, 'end_turn');
      const [sb2] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.equal(sb2.containerId, sb.containerId, 'the second prompt reuses the container');
      const last = model.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
      t.ok(
        last.some((m) => m.role === 'user' && m.content === 'chart my sample sales'),
        'the model sees the earlier turn',
      );

      const all = logs.text() + JSON.stringify(first.events) + JSON.stringify(second.events);
      t.notOk(all.includes(MODEL_KEY), 'model key in no log or event');
      t.notOk(all.includes(g.token), 'workspace token in no log or event');
    },
  );

  t.test(
    'demo model: chart the sample spreadsheet and e-mail it; the mail arrives with the inline chart',
    async (t) => {
      const { d, g, c, logs } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo' });
      const r = await streamTurn(c, { message: 'chart the sample spreadsheet and email it to bob@example.test' });
      t.equal(r.status, 200);
      const ends = r.events.filter((e) => e.type === 'tool_end');
      t.same(
        ends.map((e) => [e.tool, e.ok]),
        [
          ['search_spreadsheets', true],
          ['fetch_sheet', true],
          ['rasterize_chart', true],
          ['send_email', true],
        ],
        JSON.stringify(ends.filter((e) => !e.ok)),
      );
      t.equal(r.events.at(-1).stop_reason, 'end_turn');
      t.equal(g.mailbox.length, 1, 'one mail sent');
      const m = g.mailbox[0];
      t.same(m.to, ['bob@example.test']);
      const parsed = await simpleParser(m.raw, { keepCidLinks: true });
      t.same(
        parsed.from?.value.map((a) => a.address),
        ['alice@example.test'],
        'From is the connected account',
      );
      t.equal(parsed.subject !== undefined && parsed.subject.length > 0, true, 'a subject');
      const png = parsed.attachments.find((a) => a.contentType === 'image/png');
      t.ok(png, 'an inline PNG');
      t.match(parsed.html || '', new RegExp(`cid:${png!.cid}`), 'the HTML shows it by cid');
      t.same([...png!.content.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
      const send = g.requests.find((q) => q.method === 'POST' && q.path.startsWith('/gmail/v1/users/me/messages/send'));
      t.ok(send, 'Gmail saw the send at its real path (the proxy rewrote /mail/v1 → /gmail/v1)');
      t.equal(send!.headers.authorization, `Bearer ${g.token}`);

      // The in-container proxy's decisions reach the daemon's /metrics, refusals its log.
      const sessionId = r.events.at(-1).session_id;
      const [sb] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      const probe = await execIn(docker!, sb.containerId, [
        '/usr/local/bin/node',
        '-e',
        "fetch('http://127.0.0.1:8700/gmail/mail/v1/users/me/messages/send',{method:'POST',headers:{authorization:'Bearer not-the-placeholder'},body:'{}'}).then(r=>console.log(r.status))",
      ]);
      t.equal(probe.stdout.trim(), '401', 'a wrong placeholder from inside the sandbox is refused');
      const metricLine = (text: string, route: string, outcome: string) =>
        Number(
          new RegExp(`^airlock_proxy_decisions_total\\{route="${route}",outcome="${outcome}"\\} (\\d+)`, 'm').exec(
            text,
          )?.[1] ?? 0,
        );
      let metrics = '';
      await waitFor(async () => {
        metrics = await (await fetch(`${d.web.url}/metrics`)).text();
        return metricLine(metrics, 'mail', 'refused');
      }, 'the refused probe in /metrics');
      t.equal(metricLine(metrics, 'mail', 'forwarded'), 1, 'the mail send counted');
      t.equal(metricLine(metrics, 'sheets', 'forwarded'), 1, 'the sheet read counted');
      t.equal(metricLine(metrics, 'search', 'forwarded'), 1, 'the Drive search counted');
      t.equal(metricLine(metrics, 'mail', 'refused'), 1, 'the refusal counted');
      const refusal = logs.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'sandbox proxy refused a request');
      t.match(
        refusal,
        { sessionId, route: 'mail', outcome: 'refused', status: 401, code: 'ERR_PROXY_PLACEHOLDER' },
        'logged with the session id',
      );
    },
  );

  t.test(
    'model failures through the sandbox (500, malformed stream, stall) end the turn with a coded done; the container lives on',
    async (t) => {
      const model = await openaiModel.start({
        apiKey: MODEL_KEY,
        script: [
          { kind: 'error', status: 500, times: 4 },
          { kind: 'malformed' },
          { kind: 'stall', text: 'thinking…' },
          { kind: 'reply', text: 'back again' },
        ],
      });
      t.teardown(() => model.close());
      const { d, c, logs } = await start(t, {
        AIRLOCK_MODEL_PROVIDER: 'openai',
        AIRLOCK_MODEL: 'gpt-e2e',
        AIRLOCK_MODEL_BASE_URL: model.url,
        AIRLOCK_MODEL_API_KEY: MODEL_KEY,
        AIRLOCK_MODEL_TIMEOUT_S: '2',
      });
      let sessionId: string | undefined;
      const outcomes: unknown[] = [];
      const containers = new Set<string>();
      for (const message of ['one', 'two', 'three', 'four']) {
        const r = await streamTurn(c, { message, ...(sessionId ? { session_id: sessionId } : {}) });
        t.equal(r.status, 200);
        t.equal(r.events.filter((e) => e.type === 'done').length, 1, 'exactly one done');
        const done = r.events.at(-1);
        t.equal(done.type, 'done', 'done is last');
        sessionId = done.session_id;
        outcomes.push([done.stop_reason, done.error?.code]);
        containers.add(d.runtime!.sessions.list().find((s) => s.sessionId === sessionId)!.containerId!);
        t.notOk(JSON.stringify(r.events).includes(MODEL_KEY), 'no key in the events');
      }
      t.same(
        outcomes,
        [
          ['error', 'ERR_MODEL_HTTP'],
          ['error', 'ERR_MODEL_STREAM'],
          ['error', 'ERR_MODEL_TIMEOUT'],
          ['end_turn', undefined],
        ],
        'each failure ends with stop_reason error and its code, then a normal turn without an error',
      );
      t.equal(containers.size, 1, 'one warm container throughout');
      for (const r of model.requests)
        t.equal(
          r.headers.authorization,
          `Bearer ${MODEL_KEY}`,
          'every attempt went through the proxy with the real key',
        );
      t.notOk(logs.text().includes(MODEL_KEY), 'no key in the logs');
    },
  );

  t.test(
    'token rotation: an expired token gives a clear tool error; after rotation the warm session mails again',
    async (t) => {
      const { d, g, c } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo' });
      const first = await streamTurn(c, { message: 'chart 1 2 3 and email the chart to x@example.test' });
      t.same(
        first.events.filter((e) => e.type === 'tool_end').map((e) => e.ok),
        [true, true],
      );
      const sessionId = first.events.at(-1).session_id;
      const [before] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);

      // The provider stops accepting the old token (it expired).
      const fresh = 'ya29.rotated-access-token-0123456789';
      g.acceptTokens([fresh]);
      const expired = await streamTurn(c, {
        message: 'chart 4 5 and email the chart to x@example.test',
        session_id: sessionId,
      });
      const failed = expired.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
      t.equal(failed.ok, false);
      t.match(failed.error, /expired/, 'the user is told the access token expired');

      // The token service pushes the refreshed token into the warm supervisor (rotate-token).
      await d.tokenService.pushToUser(before.userId!, fresh);
      const after = await streamTurn(c, {
        message: 'chart 6 7 and email the chart to x@example.test',
        session_id: sessionId,
      });
      t.same(
        after.events.filter((e) => e.type === 'tool_end').map((e) => [e.tool, e.ok]),
        [
          ['rasterize_chart', true],
          ['send_email', true],
        ],
      );
      const [now] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.equal(now.containerId, before.containerId, 'same warm container, not recreated');
      t.equal(g.mailbox.length, 2, 'mail before and after the rotation');
      const sends = g.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/gmail/'));
      t.equal(sends.at(-1)!.headers.authorization, `Bearer ${fresh}`, 'the rotated token went upstream');
    },
  );

  t.test(
    'disconnecting the account revokes it at the provider and ends the warm sandbox; the next turn has no account',
    async (t) => {
      const { d, g, c, oauth } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo' });
      const first = await streamTurn(c, { message: 'chart 1 2 3 and email the chart to x@example.test' });
      t.same(
        first.events.filter((e) => e.type === 'tool_end').map((e) => e.ok),
        [true, true],
      );
      const sessionId = first.events.at(-1).session_id;
      const [before] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.ok(before, 'a warm sandbox holds the token');
      t.ok(d.tokenService.tracked().includes(sessionId), 'tracked for token rotation');

      const del = await c.json('DELETE', '/api/account');
      t.equal(del.status, 200);
      t.equal(del.body.connected, false);
      t.same(
        oauth.requests.filter((r) => r.path === '/revoke').map((r) => r.params.token),
        [g.token],
        'the provider was asked to revoke the token',
      );
      t.same(
        d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId),
        [],
        'no sandbox keeps the old token',
      );
      t.notOk(
        d.tokenService.tracked().includes(sessionId),
        'the ended sandbox is no longer tracked for token rotation',
      );
      await t.rejects(
        docker!.getContainer(before.containerId).inspect(),
        { statusCode: 404 } as unknown as Error,
        'its container is gone',
      );

      const after = await streamTurn(c, {
        message: 'chart 4 5 and email the chart to x@example.test',
        session_id: sessionId,
      });
      t.equal(after.status, 200, 'the chat session goes on in a fresh sandbox');
      const mail = after.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
      t.equal(mail?.ok, false, 'mail is refused without an account');
      t.match(mail?.error, /connect/i, 'the user is told to connect the account');
      t.equal(g.mailbox.length, 1, 'only the mail from before the disconnect');
    },
  );

  t.test(
    'an agent policy forbidding the model: the turn ends with ERR_POLICY_MODEL_DENIED and no container is used',
    async (t) => {
      const { d, c } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_POOL_SIZE: '1' });
      const org = await dbInsertId(d.database.sql, "INSERT INTO organisations (name) VALUES ('Acme')");
      await dbRun(d.database.sql, 'INSERT INTO organisation_members (organisation_id, user_id) VALUES (?, 1)', org);
      await dbRun(
        d.database.sql,
        `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_models) VALUES (?, 'big model only', 'all', '["gpt-big"]')`,
        org,
      );
      // Under runsc there is no pool (docs/runtime.md): then nothing at all may be started.
      const poolBefore =
        SANDBOX_RUNTIME === 'runsc'
          ? []
          : await waitFor(() => {
              const ids = d
                .runtime!.sessions.list()
                .filter((s) => !s.sessionId && s.state === 'pool')
                .map((s) => s.containerId);
              return ids.length ? ids : undefined;
            }, 'the pool container');
      const r = await streamTurn(c, { message: 'chart 1 2 3' });
      t.equal(r.status, 200);
      const done = r.events.at(-1);
      t.match(done, { type: 'done', stop_reason: 'error', error: { code: 'ERR_POLICY_MODEL_DENIED' } });
      t.match(done.error.message, /agent policy does not allow the model demo/, 'the user is told why');
      t.same(
        d.runtime!.sessions.list().filter((s) => s.sessionId),
        [],
        'no sandbox was claimed',
      );
      t.same(
        d
          .runtime!.sessions.list()
          .filter((s) => !s.sessionId)
          .map((s) => s.containerId),
        poolBefore,
        'the pool container was not spent',
      );
    },
  );

  t.test(
    'a client disconnect leaves the turn running; the stop API cancels it inside the sandbox; the session stays usable',
    async (t) => {
      const { d, c, model } = await startStalling(t, 'Back again.');
      let sid: string | undefined;
      const left = responseClosed(d.web.server, '/api/chat/messages');
      const cut = await streamTurn(c, { message: 'take your time' }, (e, _all, sessionId) => {
        sid = sessionId;
        if (e.type === 'text_delta') return 'abort';
      });
      t.equal(cut.events.filter((e) => e.type === 'done').length, 0, 'the client left before done');
      t.ok(sid);
      const turnId = cut.headers.get('x-chat-turn-id');
      await left;
      t.equal(
        (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns[0]?.status,
        'running',
        'still running after the server saw the client leave',
      );
      const stop = await c.json('POST', `/api/chat/sessions/${sid}/turns/${turnId}/cancel`);
      t.equal(stop.status, 202, 'the stop API accepted');
      // The daemon records the turn as cancelled once the sandbox confirms it.
      let turns: any[] = [];
      await waitFor(async () => {
        turns = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
        return turns[0]?.stop_reason;
      }, 'the cancelled turn to be stored');
      t.equal(turns[0]?.stop_reason, 'cancelled', 'turn stored as cancelled');
      const next = await streamTurn(c, { message: 'are you there?', session_id: sid });
      t.equal(next.status, 200, 'not busy: the sandbox ended the cancelled turn');
      t.equal(next.events.at(-1).stop_reason, 'end_turn');
      t.match(
        next.events
          .filter((e) => e.type === 'text_delta')
          .map((e) => e.text)
          .join(''),
        /Back again/,
      );
      // The model's next request holds the stopped answer as the user saw it, marked.
      t.same(said(model.requests.at(-1)!.body), [
        'user:take your time',
        'assistant:Thinking\n\n[The user stopped this answer here.]',
        'user:are you there?',
      ]);
      t.equal(
        d.runtime!.sessions.list().filter((s) => s.sessionId === sid).length,
        1,
        'still one sandbox for the session',
      );
    },
  );

  t.test(
    'an account connected during a warm session: that session keeps asking to connect; a new session mails',
    async (t) => {
      const { d, g, c, connect } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo' }, { connected: false });
      const ask = 'chart 1 2 3 and email the chart to x@example.test';
      const mailTool = (r: { events: any[] }) => r.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
      const first = await streamTurn(c, { message: ask });
      const sessionId = first.events.at(-1).session_id;
      t.equal(mailTool(first)?.ok, false, 'no account: send_email fails');
      t.match(
        mailTool(first)?.error,
        NOT_CONNECTED_MESSAGE,
        'and tells the user to connect, then start a new chat session',
      );
      const [warm] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);

      await connect();
      const again = await streamTurn(c, { message: ask, session_id: sessionId });
      t.equal(again.events.at(-1).stop_reason, 'end_turn');
      t.equal(
        mailTool(again)?.ok,
        false,
        'the warm session has no mail route (docs/rules.md#states: proxy not attached)',
      );
      t.match(mailTool(again)?.error, NOT_CONNECTED_MESSAGE, 'same message until a new session');
      const [still] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.equal(still.containerId, warm.containerId, 'the same warm container answered');
      t.equal(g.mailbox.length, 0, 'nothing was sent');

      const fresh = await streamTurn(c, { message: ask });
      t.not(fresh.events.at(-1).session_id, sessionId, 'a new chat session');
      t.equal(mailTool(fresh)?.ok, true, `the new session mails ${JSON.stringify(mailTool(fresh))}`);
      t.equal(g.mailbox.length, 1, 'the mail arrived');
      const sends = g.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/gmail/'));
      t.equal(sends.at(-1)!.headers.authorization, `Bearer ${g.token}`, "with the connected account's token");
    },
  );
}
