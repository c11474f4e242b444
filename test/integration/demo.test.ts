import t from 'tap';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { startDemo } from '../../daemon/dev/demo.js';
import { dockerOrSkip, ensureTestImage, sweep, uniqueOwner, unmountUnder } from '../docker/helpers.js';
import { Client } from '../helpers/client.js';
import { streamTurn } from '../helpers/chat.js';
import { logSink } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { ssoLogin, type SsoSetup } from '../helpers/identity.js';

/**
 * The newcomer's path over HTTP, exactly: start the demo, log in as the demo user with the
 * printed password, ask for a chart of the sample spreadsheet emailed to someone, approve the
 * send on its approval card (the default send policy asks about any domain not allowed), read that
 * mail with its inline chart in the emulator's mailbox (JSON and the HTML page).
 */

t.test('airlock demo: log in, chart the sample spreadsheet, read the mail in the mailbox', async (t) => {
  const docker = await dockerOrSkip(t);
  if (!docker) return;
  const image = await ensureTestImage(docker);
  const dir = mkdtempSync(join(tmpdir(), 'airlock-demo-'));
  t.teardown(() => {
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  const owner = uniqueOwner('demo');
  t.teardown(() => sweep(docker, owner));
  const printed: string[] = [];
  const sink = logSink();
  const demo = await startDemo({
    env: { AIRLOCK_DATA_DIR: dir, AIRLOCK_PORT: '0', AIRLOCK_IMAGE: image, AIRLOCK_POOL_SIZE: '0' },
    owner,
    print: (l) => printed.push(l),
    log: createLogger({ level: 'info', destination: process.env.DEMO_TEST_LOG ? process.stderr : sink.stream }),
  });
  t.teardown(() => demo.close({ removeContainers: true }));

  // What it printed is what a newcomer reads.
  const out = printed.join('\n');
  t.match(out, demo.url, 'prints the URL');
  t.match(out, demo.mailboxUrl, 'prints the mailbox URL');
  t.ok(
    out.includes(`${demo.users.user.username} / ${demo.users.user.password}`),
    'prints how to log in as the demo user',
  );
  t.ok(out.includes(`${demo.users.admin.username} / ${demo.users.admin.password}`), 'prints the admin login');
  const secrets = join(dir, 'demo-secrets.json');
  t.equal(statSync(secrets).mode & 0o777, 0o600, 'generated secrets are 0600');
  t.equal(JSON.parse(readFileSync(secrets, 'utf8')).userPassword, demo.users.user.password);
  t.notOk(sink.text().includes(demo.users.user.password), 'the password is not in the logs');

  // The login page offers the demo IdP.
  const providers = await fetch(`${demo.url}/api/auth/sso-providers`).then((r) => r.json());
  t.match(JSON.stringify(providers), /Google \(demo\)/, 'the demo IdP is offered');

  const c = new Client(demo.url);
  const login = await c.login(demo.users.user.username, demo.users.user.password);
  t.equal(login.status, 200, 'the demo user logs in with the printed password');
  const account = await c.json('GET', '/api/account');
  t.equal(account.status, 200);
  t.match(JSON.stringify(account.body), /demo@example\.com/, 'the workspace account is connected');
  // The demo connector with OAuth per user (docs/connectors.md): offered, not yet connected.
  t.same(
    (await c.json('GET', '/api/connections')).body,
    { connectors: [{ connector_id: 'tickets', label: 'Acme Tickets', connected: false }] },
    'Acme Tickets is offered to connect',
  );

  // The default send policy asks about every domain not allowed: the demo shows the approval card
  // for someone@example.com once, and the user approves it for this recipient.
  const asked: any[] = [];
  const turn = await streamTurn(
    c,
    { message: 'chart the sample spreadsheet and email it to someone@example.com' },
    async (e, _all, sid) => {
      if (e.type !== 'approval_request') return;
      asked.push(e);
      const r = await c.json('POST', `/api/chat/sessions/${sid}/approvals/${e.approval_id}`, {
        decision: 'approve',
        scope: 'recipient',
      });
      t.equal(r.status, 200, `approved: ${JSON.stringify(r.body)}`);
    },
  );
  t.equal(turn.status, 200, JSON.stringify(turn.error ?? ''));
  t.same(
    asked.map((e) => e.ask),
    [['someone@example.com']],
    'one approval card, for the outside recipient',
  );
  t.match(
    turn.events.find((e) => e.type === 'approval_result'),
    { decision: 'approved', scope: 'recipient' },
  );
  const done = turn.events.at(-1);
  t.equal(done?.type, 'done');
  t.equal(done?.stop_reason, 'end_turn', JSON.stringify(done));
  const ends = turn.events.filter((e) => e.type === 'tool_end');
  t.same(
    ends.map((e) => e.tool),
    ['search_spreadsheets', 'fetch_sheet', 'rasterize_chart', 'send_email'],
  );
  for (const e of ends) t.equal(e.ok, true, `${e.tool} ok ${e.ok ? '' : JSON.stringify(e.error)}`);

  // The recipient's view: the emulator's mailbox.
  const box = (await fetch(demo.mailboxUrl + '.json').then((r) => r.json())) as { messages: any[] };
  const mail = box.messages.find((m) => m.to.includes('someone@example.com'));
  t.ok(mail, 'a mail to someone@example.com arrived');
  const png = mail.attachments.find((a: any) => a.contentType === 'image/png');
  t.ok(png, 'it carries a PNG');
  t.ok(png.cid || png.contentId, 'the PNG is an inline part (Content-ID)');
  t.match(mail.html ?? '', /cid:/, 'the HTML body shows it inline');
  t.ok(png.size > 200, 'the chart has content');

  const list = await fetch(demo.mailboxUrl).then((r) => r.text());
  t.match(list, 'someone@example.com', 'the mailbox page lists it');
  const page = await fetch(`${demo.mailboxUrl}/${mail.id}`).then((r) => r.text());
  t.match(page, /data:image\/png;base64,/, 'the message page shows the chart inline');

  // The token service refreshes against the emulated OAuth server (the router's token URL).
  const me = await c.json('GET', '/api/auth/me');
  const fresh = await demo.daemon.tokenService.refresh(me.body.id);
  t.ok(demo.emulators.oauth.issued.access.includes(fresh.accessToken), 'refreshed through the emulated token endpoint');

  // "Sign in with Google (demo)" lands on the same demo user.
  const browser = new Client(demo.url);
  await browser.fetchCsrf();
  const cb = await ssoLogin({ origin: demo.url } as SsoSetup, browser, 'demo', `${demo.url}/`);
  t.equal(cb.status, 303, 'the SSO callback signs the user in');
  const ssoMe = await browser.json('GET', '/api/auth/me');
  t.equal(ssoMe.body.id, me.body.id, 'SSO matched the demo user by e-mail');

  // The admin can sync the sample directory through the demo connection's service account.
  const admin = new Client(demo.url);
  t.equal((await admin.login(demo.users.admin.username, demo.users.admin.password)).status, 200, 'the admin logs in');
  t.equal((await admin.json('POST', '/api/identity/directory-sync', {})).status, 202, 'sync started');
  let job: any;
  await waitFor(async () => {
    job = (await admin.json('GET', '/api/identity/directory-sync')).body.job;
    return ['succeeded', 'failed'].includes(job?.status);
  }, 'the directory sync to end');
  t.equal(job?.status, 'succeeded', `directory sync ${JSON.stringify(job?.error ?? '')}`);
  t.equal(job?.result?.fetched?.users, 5, 'the sample directory has five users');

  // Operators see the path in /metrics.
  const metrics = await fetch(`${demo.url}/metrics`).then((r) => r.text());
  t.match(metrics, /airlock_sessions_started_total\{kind="cold"\} 1/, 'one cold session start (pool disabled)');
  t.match(metrics, /airlock_session_start_seconds_count\{kind="cold"\} 1/, 'its start time observed');
  t.match(metrics, /airlock_sessions_live 1/, 'one live session');
  t.match(metrics, /airlock_turns_total\{stop_reason="end_turn"\} 1/, 'one end_turn turn');
  t.match(metrics, /airlock_logins_total\{outcome="ok"\} 2/, 'two password logins (user, admin)');
  t.match(metrics, /airlock_sync_jobs_total\{status="succeeded"\} 1/, 'one sync job');
  t.match(metrics, /airlock_token_refreshes_total\{outcome="ok"\} 1/, 'one token refresh');
});
