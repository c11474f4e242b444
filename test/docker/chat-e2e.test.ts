/**
 * The whole path with real parts: browser-like client → web app → session manager → a real
 * hardened container (supervisor, credential-injection proxy, agent child, MCP tool servers)
 * → egress gateway → Google-shaped and OpenAI-shaped servers on 127.0.0.1.
 */
import t from 'tap';
import { createLogger, Encryptor, loadOrCreateEncryptionKey, hashPassword, WORKSPACE_SCOPES } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { AccountStore } from '../../domain/accounts.js';
import { serve } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as googleOAuth from '../../emulator/google-oauth.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { logSink } from '../helpers/app.js';
import { shape, streamTurn, waitFor } from '../helpers/chat.js';
import { responseClosed } from '../helpers/wait.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, runtimeConfig, SANDBOX_RUNTIME, sweep, uniqueOwner } from './helpers.js';
import { simpleParser } from 'mailparser';
import { NOT_CONNECTED_MESSAGE } from '../../tools/result.js';
import { TestClock } from '../helpers/clock.js';
import { dbInsertId, dbRun } from '../helpers/db.js';

const MODEL_KEY = 'sk-real-model-key-e2e-0123456789abcdef';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  async function start(t: { teardown(fn: () => unknown): void }, env: Record<string, string>, opts: { connected?: boolean; clock?: TestClock } = {}) {
    const dir = dataDir(t);
    const owner = uniqueOwner('e2e');
    t.teardown(() => sweep(docker!, owner));
    const g = await google.start({
      userEmail: 'alice@example.test',
      seed: {
        spreadsheets: [
          {
            id: 'sheet-sample-1',
            name: 'Sample sales 2026',
            sheets: {
              Sales: [
                ['Month', 'Sales'],
                ['Jan', 3],
                ['Feb', 5],
                ['Mar', 8],
              ],
            },
          },
        ],
      },
    });
    t.teardown(() => g.close());
    const oauth = await googleOAuth.start();
    t.teardown(() => oauth.close());
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_LOG_LEVEL: 'debug',
      AGENT_USER_TOKEN_SECRET: 'e2e-agent-user-token-secret-0123',
      MCP_INTERNAL_SECRET: 'e2e-mcp-internal-secret-0123456789',
      AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
      AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
      AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
      AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
      ...env,
    });
    const logs = logSink();
    const d = await serve(config, { log: createLogger({ level: 'debug', destination: logs.stream }), runtime: { owner }, clock: opts.clock });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    const user = await createUser(d.database.sql, { username: 'alice', email: 'alice@example.test', passwordHash: await hashPassword('alice-password') });
    // A completed "connect workspace account" (the OAuth flow itself is tested in account.test.ts).
    const connect = () =>
      new AccountStore(d.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey))).connect(user.id, {
        email: 'alice@example.test',
        scopes: [...WORKSPACE_SCOPES],
        accessToken: g.token,
        expiresAt: Date.now() + 3600_000,
      });
    if (opts.connected !== false) await connect();
    const c = new Client(d.web.url);
    const login = await c.login('alice', 'alice-password');
    if (login.status !== 200) throw new Error(`login failed: ${login.status}`);
    return { d, g, c, logs, oauth, connect };
  }

  t.test('OpenAI-shaped model through the proxy: two tool calls stream in order; warm reuse; the model sees the earlier turn', async (t) => {
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        { kind: 'reply', text: 'Let me look. ', tool_calls: [{ name: 'search_spreadsheets', arguments: { query: 'sample' } }] },
        { kind: 'reply', tool_calls: [{ name: 'render_chart', arguments: { type: 'bar', title: 'Sales', labels: ['Jan', 'Feb', 'Mar'], datasets: [{ label: 'Sales', data: [3, 5, 8] }] } }] },
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
    t.match(JSON.stringify(ends[0].output), /Sample sales 2026/, 'the Drive listing came back through proxy and egress');
    const done = ev[ev.length - 1];
    t.equal(done.stop_reason, 'end_turn');
    const sessionId = done.session_id;
    t.ok(sessionId);

    // The real credentials arrived upstream; the placeholders never did.
    t.ok(model.requests.length >= 3);
    for (const r of model.requests) t.equal(r.headers.authorization, `Bearer ${MODEL_KEY}`, 'real model key injected by the proxy');
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
  });

  t.test('demo model: chart the sample spreadsheet and e-mail it; the mail arrives with the inline chart', async (t) => {
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
    const metricLine = (text: string, route: string, outcome: string) => Number(new RegExp(`^airlock_proxy_decisions_total\\{route="${route}",outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
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
    t.match(refusal, { sessionId, route: 'mail', outcome: 'refused', status: 401, code: 'ERR_PROXY_PLACEHOLDER' }, 'logged with the session id');
  });

  t.test('model failures through the sandbox (500, malformed stream, stall) end the turn with a coded done; the container lives on', async (t) => {
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [{ kind: 'error', status: 500, times: 4 }, { kind: 'malformed' }, { kind: 'stall', text: 'thinking…' }, { kind: 'reply', text: 'back again' }],
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
    for (const r of model.requests) t.equal(r.headers.authorization, `Bearer ${MODEL_KEY}`, 'every attempt went through the proxy with the real key');
    t.notOk(logs.text().includes(MODEL_KEY), 'no key in the logs');
  });

  t.test('token rotation: an expired token gives a clear tool error; after rotation the warm session mails again', async (t) => {
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
    const expired = await streamTurn(c, { message: 'chart 4 5 and email the chart to x@example.test', session_id: sessionId });
    const failed = expired.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
    t.equal(failed.ok, false);
    t.match(failed.error, /expired/, 'the user is told the access token expired');

    // The token service pushes the refreshed token into the warm supervisor (rotate-token).
    await d.tokenService.pushToUser(before.userId!, fresh);
    const after = await streamTurn(c, { message: 'chart 6 7 and email the chart to x@example.test', session_id: sessionId });
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
  });

  t.test('disconnecting the account revokes it at the provider and ends the warm sandbox; the next turn has no account', async (t) => {
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
    t.notOk(d.tokenService.tracked().includes(sessionId), 'the ended sandbox is no longer tracked for token rotation');
    await t.rejects(docker!.getContainer(before.containerId).inspect(), { statusCode: 404 } as unknown as Error, 'its container is gone');

    const after = await streamTurn(c, { message: 'chart 4 5 and email the chart to x@example.test', session_id: sessionId });
    t.equal(after.status, 200, 'the chat session goes on in a fresh sandbox');
    const mail = after.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
    t.equal(mail?.ok, false, 'mail is refused without an account');
    t.match(mail?.error, /connect/i, 'the user is told to connect the account');
    t.equal(g.mailbox.length, 1, 'only the mail from before the disconnect');
  });

  t.test('an agent policy forbidding the model: the turn ends with ERR_POLICY_MODEL_DENIED and no container is used', async (t) => {
    const { d, c } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_POOL_SIZE: '1' });
    const org = await dbInsertId(d.database.sql, "INSERT INTO organisations (name) VALUES ('Acme')");
    await dbRun(d.database.sql, 'INSERT INTO organisation_members (organisation_id, user_id) VALUES (?, 1)', org);
    await dbRun(d.database.sql, `INSERT INTO agent_policies (organisation_id, name, applies_to, allowed_models) VALUES (?, 'big model only', 'all', '["gpt-big"]')`, org);
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
  });

  /** The daemon with an OpenAI-shaped model that says "Thinking" and then never finishes its first answer; `reply` is its second. */
  async function startStalling(t: { teardown(fn: () => unknown): void }, reply: string) {
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        { kind: 'stall', text: 'Thinking' },
        { kind: 'reply', text: reply },
      ],
    });
    t.teardown(() => model.close());
    const started = await start(t, {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-e2e',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      // Only the stop API (or the kill) ends the stalled turn, never the model timeout.
      AIRLOCK_MODEL_TIMEOUT_S: '600',
    });
    return { ...started, model };
  }

  /** A recorded request's conversation as role:text lines (the system prompt left out). */
  const said = (body: any): string[] => body.messages.filter((m: any) => m.role !== 'system').map((m: any) => `${m.role}:${m.content}`);

  t.test('a client disconnect leaves the turn running; the stop API cancels it inside the sandbox; the session stays usable', async (t) => {
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
    t.equal((await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns[0]?.status, 'running', 'still running after the server saw the client leave');
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
    t.same(said(model.requests.at(-1)!.body), ['user:take your time', 'assistant:Thinking\n\n[The user stopped this answer here.]', 'user:are you there?']);
    t.equal(d.runtime!.sessions.list().filter((s) => s.sessionId === sid).length, 1, 'still one sandbox for the session');
  });

  t.test('the container killed from outside mid-turn: the stream ends with one done ERR_SANDBOX_LOST; the next prompt gets a new container and the whole conversation', async (t) => {
    // The model starts answering and never finishes, so only the kill can end the turn.
    const { d, c, model } = await startStalling(t, 'Fresh sandbox here.');
    let killed: string | undefined;
    let guard: NodeJS.Timeout | undefined;
    const turn = streamTurn(c, { message: 'take your time' }, async (e, _all, sessionId) => {
      if (e.type !== 'text_delta' || killed) return;
      // The model's first words arrived: the turn is under way inside the container.
      const sb = d.runtime!.sessions.list().find((s) => s.sessionId === sessionId);
      killed = sb!.containerId;
      await docker!.getContainer(killed).kill();
    });
    const r = await Promise.race([turn, new Promise<'hang'>((res) => (guard = setTimeout(() => res('hang'), 60_000)))]);
    clearTimeout(guard);
    t.not(r, 'hang', 'the stream ended (hang guard)');
    if (r === 'hang') return;
    t.ok(killed, 'the container was killed mid-turn');
    t.equal(r.status, 200);
    t.same(
      r.events.map((e) => e.seq),
      r.events.map((_, i) => i + 1),
      'seq increases by one',
    );
    t.equal(r.events.filter((e) => e.type === 'done').length, 1, 'exactly one done');
    const done = r.events.at(-1);
    t.match(done, { type: 'done', stop_reason: 'error', error: { code: 'ERR_SANDBOX_LOST' } }, 'the turn ends naming the lost sandbox');
    t.equal(
      r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join(''),
      'Thinking',
      'the words before the kill were delivered',
    );
    const sid = done.session_id;
    const stored = (await c.json('GET', `/api/chat/sessions/${sid}/messages`)).body.turns;
    t.match(stored[0], { stop_reason: 'error', error: { code: 'ERR_SANDBOX_LOST' } }, 'stored with the same outcome');

    const next = await streamTurn(c, { message: 'hello again', session_id: sid });
    t.equal(next.status, 200);
    t.notOk(
      next.events.some((e) => e.type === 'text_delta' && /stopped unexpectedly|context/.test(e.text)),
      'no notice: the model simply continues',
    );
    t.same(said(model.requests.at(-1)!.body), ['user:take your time', 'assistant:Thinking\n\n[This answer ended early with an error.]', 'user:hello again'], "the new sandbox's first request holds the conversation");
    t.match(next.events.at(-1), { type: 'done', stop_reason: 'end_turn', session_id: sid });
    t.match(
      next.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join(''),
      /Fresh sandbox here/,
    );
    const now = d.runtime!.sessions.list().filter((s) => s.sessionId === sid);
    t.equal(now.length, 1, 'one sandbox for the session');
    t.not(now[0]?.containerId, killed, 'served by a new container');
    await t.rejects(docker!.getContainer(killed!).inspect(), { statusCode: 404 } as unknown as Error, 'the killed container was removed');
  });
  t.test('the conversation outlives every sandbox: idle reap, pool claim, operator restart, docker kill', async (t) => {
    // The demo model says how many user messages its request held ("message N of this conversation").
    // The daemon's clock is the test's: the session goes idle when the test advances it.
    const clock = new TestClock();
    const { d, c } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_POOL_SIZE: '1', AIRLOCK_SESSION_IDLE_S: '600' }, { clock });
    const sessions = d.runtime!.sessions;
    const said = (r: { events: any[] }) =>
      r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join('');
    const first = await streamTurn(c, { message: 'hello one' });
    const sid = first.events.at(-1).session_id;
    t.match(said(first), /message 1 of this conversation/);
    t.match(said(await streamTurn(c, { message: 'hello two', session_id: sid })), /message 2 of this conversation/, 'warm');
    const live = () => sessions.list().find((s) => s.sessionId === sid);
    const before = live()!.containerId;
    // Idle reap (AIRLOCK_SESSION_IDLE_S=600, passed on the clock): the sandbox goes; the next prompt claims the pool member.
    t.same(await sessions.reap(), [], 'not idle yet');
    clock.advance(601_000);
    await sessions.reap(); // (the daemon's own reaper may have got there first: either removes it)
    t.notOk(live(), 'reaped when idle');
    await sessions.poolReady(); // the member the first prompt claimed has been replaced
    const afterReap = await streamTurn(c, { message: 'hello three', session_id: sid });
    t.match(said(afterReap), /message 3 of this conversation/, 'after the idle reap, in a pool member: the whole conversation');
    t.not(live()?.containerId, before);
    // Under gVisor the pool is off (docs/runtime.md): there a new sandbox cold-starts.
    if (SANDBOX_RUNTIME === 'runc') t.equal(live()?.fromPool, true, 'a pool member claimed for an old chat');
    // Operator restart.
    const restarted = await sessions.restart(sid);
    t.match(said(await streamTurn(c, { message: 'hello four', session_id: sid })), /message 4 of this conversation/, 'after an operator restart');
    t.equal(live()?.containerId, restarted.containerId);
    // Killed from outside.
    await docker!.getContainer(restarted.containerId).kill();
    await waitFor(() => !live() || live()?.state === 'dead', 'the runtime to see the sandbox die');
    const afterKill = await streamTurn(c, { message: 'hello five', session_id: sid });
    t.match(said(afterKill), /message 5 of this conversation/, 'after a docker kill');
    t.notMatch(said(afterKill), /stopped unexpectedly|context/, 'no notice');
  });

  t.test('an account connected during a warm session: that session keeps asking to connect; a new session mails', async (t) => {
    const { d, g, c, connect } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo' }, { connected: false });
    const ask = 'chart 1 2 3 and email the chart to x@example.test';
    const mailTool = (r: { events: any[] }) => r.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
    const first = await streamTurn(c, { message: ask });
    const sessionId = first.events.at(-1).session_id;
    t.equal(mailTool(first)?.ok, false, 'no account: send_email fails');
    t.match(mailTool(first)?.error, NOT_CONNECTED_MESSAGE, 'and tells the user to connect, then start a new chat session');
    const [warm] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);

    await connect();
    const again = await streamTurn(c, { message: ask, session_id: sessionId });
    t.equal(again.events.at(-1).stop_reason, 'end_turn');
    t.equal(mailTool(again)?.ok, false, 'the warm session has no mail route (docs/rules.md#states: proxy not attached)');
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
  });
}
