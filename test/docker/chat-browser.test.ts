/**
 * The chat page in a real browser against the real daemon and a real sandbox container:
 * with a scripted OpenAI-shaped model, the page draws frames showing a tool running while its
 * Drive call is held open upstream, and the tool rows are on the page while the model stalls
 * after them; with the offline demo model, the tool rows also appear as running before the
 * turn ends (seen in the DOM; how long a frame shows them depends on the tool), render_chart is
 * drawn with chart.js, a finished row shows its duration and opens to its input and output, a
 * rasterized attachment is shown as an image, the page fits 390 px, and an admin restarts and
 * kills the session from the Live sessions page. A page reloaded mid-turn reattaches to the turn
 * running on in the sandbox and sees the mail go out.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import {
  Encryptor,
  createLogger,
  hashPassword,
  loadOrCreateEncryptionKey,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { queryActionLog } from '../../domain/action-log.js';
import { createUser, getUserByEmail } from '../../domain/users.js';
import { AccountStore } from '../../domain/accounts.js';
import { serve } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { browserUnavailable, checkNarrow, launch, screenshot } from '../helpers/browser.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const MODEL_KEY = 'sk-ui-model-key-0123456789abcdef';
/** How long the scripted model waits between the tool result and the final answer. */
const STALL_MS = 3000;

/** What the page showed of one turn, as noted by watchNextTurn(). */
interface Seen {
  /** performance.now() when a tool row of the turn first existed while the turn had not ended. */
  toolWhileRunning: number | null;
  /** That row's tool and status text at that moment. */
  tool: string | null;
  toolStatus: string | null;
  /** performance.now() when the turn ended on the page (`data-done`). */
  done: number | null;
  /** Frames drawn while a row of the turn showed a running tool and the turn had not ended. */
  runningFrames: number;
  /** The tools those frames showed running. */
  runningTools: string[];
}

/**
 * Watch the next assistant turn on the page: in every DOM change, note the first moment a tool
 * row exists while the turn has not ended (no `data-done` yet), and the moment it ends; before
 * every frame, note whether a row shows its tool running. A page that showed events only at the
 * end would have both in the same change and never the first, and would draw no such frame.
 */
async function watchNextTurn(page: Page): Promise<void> {
  await page.evaluate(() => {
    const n = document.querySelectorAll('.msg.assistant').length; // the turn about to start
    const turn = () => document.querySelectorAll('.msg.assistant')[n] as HTMLElement | undefined;
    const seen: Seen = {
      toolWhileRunning: null,
      tool: null,
      toolStatus: null,
      done: null,
      runningFrames: 0,
      runningTools: [],
    };
    (window as unknown as { seen: Seen }).seen = seen;
    new MutationObserver(() => {
      const now = performance.now();
      const el = turn();
      if (!el) return;
      const done = el.hasAttribute('data-done');
      const tool = el.querySelector<HTMLElement>('.tool');
      if (seen.toolWhileRunning === null && tool && !done) {
        seen.toolWhileRunning = now;
        seen.tool = tool.dataset.tool ?? null;
        seen.toolStatus = tool.querySelector('.status')?.textContent ?? null;
      }
      if (seen.done === null && done) seen.done = now;
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    // requestAnimationFrame callbacks run just before a frame is drawn: what is in the DOM then is
    // what that frame shows.
    const frame = () => {
      const el = turn();
      if (el?.hasAttribute('data-done')) return;
      for (const row of Array.from(el?.querySelectorAll<HTMLElement>('.tool') ?? [])) {
        if (!row.querySelector('.status.running')) continue;
        seen.runningFrames++;
        if (row.dataset.tool && !seen.runningTools.includes(row.dataset.tool)) seen.runningTools.push(row.dataset.tool);
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
}

function seenOf(page: Page): Promise<Seen> {
  return page.evaluate(() => (window as unknown as { seen: Seen }).seen);
}

const why = browserUnavailable();
const docker = why ? null : await dockerOrSkip(t);
if (why) t.plan(0, why);
else if (docker) {
  const image = await ensureTestImage(docker);

  async function start(t: { teardown(fn: () => unknown): void }, env: Record<string, string> = {}) {
    const dir = dataDir(t);
    const owner = uniqueOwner('ui');
    t.teardown(() => sweep(docker!, owner));
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AGENT_USER_TOKEN_SECRET: 'ui-agent-user-token-secret-0123',
      MCP_INTERNAL_SECRET: 'ui-mcp-internal-secret-0123456789',
      ...env,
    });
    const d = await serve(config, { log: createLogger({ level: 'silent' }), runtime: { owner } });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    await createUser(d.database.sql, {
      username: 'carol',
      email: 'carol@example.test',
      passwordHash: await hashPassword('carol-password'),
    });
    return d;
  }

  async function login(page: Page, url: string, username: string): Promise<void> {
    await page.goto(url + '/#/login');
    await page.fill('#username', username);
    await page.fill('#password', `${username}-password`);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');
  }

  const modelEnv = (url: string) => ({
    AIRLOCK_MODEL_PROVIDER: 'openai',
    AIRLOCK_MODEL: 'gpt-ui',
    AIRLOCK_MODEL_BASE_URL: url,
    AIRLOCK_MODEL_API_KEY: MODEL_KEY,
  });
  const googleEnv = (url: string) => ({
    AIRLOCK_GOOGLE_MAIL_BASE_URL: url,
    AIRLOCK_GOOGLE_SHEETS_BASE_URL: url,
    AIRLOCK_GOOGLE_DRIVE_BASE_URL: url,
  });

  /** Connect the user's workspace account with the emulator's token. */
  async function connectWorkspace(d: Awaited<ReturnType<typeof start>>, email: string, token: string): Promise<void> {
    const user = (await getUserByEmail(d.database.sql, email))!;
    await new AccountStore(
      d.database.sql,
      new Encryptor(loadOrCreateEncryptionKey(d.config.dataDir, d.config.encryptionKey)),
    ).connect(user.id, {
      email: user.email,
      scopes: [...WORKSPACE_SCOPES],
      accessToken: token,
      expiresAt: Date.now() + 3600_000,
    });
  }

  t.test('tool rows reach the page while the turn is still running', async (t) => {
    // The Drive call behind search_spreadsheets is held open until the page has drawn frames
    // showing the tool running: what is proven does not hang on how fast a tool happens to be.
    let release!: () => void;
    let arrived!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    t.teardown(() => release());
    const hold = (r: google.RecordedRequest) => {
      if (!r.path.startsWith('/drive/')) return;
      arrived();
      return held;
    };
    const g = await google.start({
      userEmail: 'carol@example.test',
      seed: { spreadsheets: [{ id: 'sheet-ui-1', name: 'Sales 2026', sheets: { Sheet1: [['a', 3]] } }] },
      before: hold,
    });
    t.teardown(() => g.close());
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        { kind: 'reply', tool_calls: [{ name: 'search_spreadsheets', arguments: { query: 'Sales' } }] },
        {
          kind: 'reply',
          tool_calls: [
            {
              name: 'render_chart',
              arguments: {
                type: 'bar',
                title: 'Chart',
                labels: ['a', 'b', 'c'],
                datasets: [{ label: 'Chart', data: [3, 5, 8] }],
              },
            },
          ],
        },
        // The turn goes on for STALL_MS after the tools: the rows must be on the page meanwhile.
        { kind: 'reply', text: 'Here is your chart.', delay_ms: STALL_MS },
      ],
    });
    t.teardown(() => model.close());
    const d = await start(t, { ...modelEnv(model.url), ...googleEnv(g.url) });
    await connectWorkspace(d, 'carol@example.test', g.token);
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await login(page, d.web.url, 'carol');

    await watchNextTurn(page);
    await page.fill('#prompt', 'chart 3 5 8');
    await page.click('#send');
    await reached;
    const before = (await seenOf(page)).runningFrames;
    await page.waitForFunction((n) => (window as unknown as { seen: Seen }).seen.runningFrames >= n + 2, before, {
      timeout: 120_000,
    });
    const drawn = await seenOf(page);
    const open = g.requests.filter((r) => r.path.startsWith('/drive/') && r.status === 0).length;
    release();
    t.equal(open, 1, 'the Drive call was still open upstream when the page had drawn those frames');
    t.same(
      drawn.runningTools,
      ['search_spreadsheets'],
      `the browser drew frames (${drawn.runningFrames - before} after the call arrived) showing search_spreadsheets running`,
    );
    await page.waitForSelector('[data-done]', { timeout: 120_000 });
    const seen = await seenOf(page);
    t.not(seen.toolWhileRunning, null, 'a tool row was on the page before the turn ended');
    t.equal(seen.tool, 'search_spreadsheets');
    t.equal(seen.toolStatus, 'running…', 'first seen as running: tool_start arrived before tool_end');
    const lead =
      seen.toolWhileRunning === null || seen.done === null ? -1 : Math.round(seen.done - seen.toolWhileRunning);
    t.ok(lead >= STALL_MS - 500, `the row was there ${lead} ms before the end (the model stalled ${STALL_MS} ms)`);
    t.equal(await page.getAttribute('.tool[data-tool=search_spreadsheets]', 'data-status'), 'ok');
    t.equal(await page.getAttribute('.tool[data-tool=render_chart]', 'data-status'), 'ok');
    t.equal(await page.getAttribute('[data-done]', 'data-done'), 'end_turn');
    t.match(await page.textContent('.msg.assistant'), /Here is your chart\./);
    t.equal(model.requests.length, 3, 'the model was asked three times (two tool calls, then the answer)');
  });

  t.test('chat with the demo model in the browser', async (t) => {
    const d = await start(t);
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await login(page, d.web.url, 'carol');

    await watchNextTurn(page);
    await page.fill('#prompt', 'chart 3 5 8');
    await page.click('#send');
    await page.waitForSelector('[data-done]', { timeout: 120_000 });
    const seen = await seenOf(page);
    t.not(seen.toolWhileRunning, null, 'demo model: a tool row was on the page before the turn ended');
    t.equal(seen.tool, 'render_chart');
    t.equal(seen.toolStatus, 'running…', 'first seen as running: tool_start arrived before tool_end');
    t.ok(
      seen.done !== null && seen.toolWhileRunning !== null && seen.done > seen.toolWhileRunning,
      'the turn ended after that',
    );
    t.equal(await page.getAttribute('.tool[data-tool=render_chart]', 'data-status'), 'ok');
    t.equal(await page.getAttribute('[data-done]', 'data-done'), 'end_turn');
    // chart.js drew on the canvas: some pixels are not transparent.
    const painted = await page.$eval('[data-chart=render_chart] canvas', (c) => {
      const cv = c as HTMLCanvasElement;
      const px = cv.getContext('2d')!.getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
      return n;
    });
    t.ok(painted > 1000, `chart drawn (${painted} painted pixels)`);
    t.match(page.url(), /#\/chat\/[A-Za-z0-9-]+$/, 'the URL names the new session');
    await screenshot(page, 'chat-render-chart');

    // The finished row shows the duration the server stored, and opens to its input and output.
    const row = '.tool[data-tool=render_chart]';
    const history = await page.evaluate(
      async (u) => (await fetch(`/api/chat/sessions/${u.split('#/chat/')[1]}/messages`)).json(),
      page.url(),
    );
    const call = history.turns[0].tool_calls[0];
    t.equal(call.tool, 'render_chart');
    t.match(
      await page.textContent(`${row} summary`),
      /^render_chart\s*done\s*\d+ ms$/,
      'name, status and duration in the row',
    );
    t.equal(
      await page.textContent(`${row} summary .muted`),
      `${call.duration_ms} ms`,
      'the duration is the tool_end duration_ms',
    );
    t.notOk(await page.isVisible(`${row} pre`), 'input and output are folded away at first');
    await page.click(`${row} summary`);
    t.equal(await page.getAttribute(row, 'open'), '', 'clicking the row opens it');
    t.same(
      await page.$$eval(`${row} .body > div`, (els) => els.map((e) => e.textContent)),
      ['Input', 'Output'],
      'headed Input and Output',
    );
    const pres = await page.$$eval(`${row} .body pre`, (els) =>
      els.map((e) => ((e as HTMLElement).checkVisibility() ? (e.textContent ?? '') : null)),
    );
    t.equal(pres.length, 2, 'two <pre> blocks, both visible');
    t.same(
      JSON.parse(pres[0] ?? 'null'),
      { type: 'bar', title: 'Chart', labels: ['#1', '#2', '#3'], datasets: [{ label: 'Chart', data: [3, 5, 8] }] },
      'Input: the arguments the model gave the tool',
    );
    t.same(JSON.parse(pres[1] ?? 'null'), call.output, 'Output: what the tool returned (as stored)');
    t.match(call.output, { spec: { datasets: [{ data: [3, 5, 8] }] } });
    await page.click(`${row} summary`);
    t.equal(await page.getAttribute(row, 'open'), null, 'and clicking again folds it');

    // Same session: a rasterized chart is shown as an image from the user's workspace.
    await watchNextTurn(page);
    await page.fill('#prompt', 'chart 2 4 6 and email the chart to dave@example.test');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('[data-done]').length === 2, undefined, {
      timeout: 120_000,
    });
    const seen2 = await seenOf(page);
    t.equal(seen2.tool, 'rasterize_chart', 'the rasterize_chart row was on the page before the turn ended');
    t.equal(seen2.toolStatus, 'running…', 'first seen as running');
    const rows = await page.$$eval('.tool', (els) =>
      els.map((e) => [(e as HTMLElement).dataset.tool, (e as HTMLElement).dataset.status]),
    );
    t.same(
      rows.slice(1),
      [
        ['rasterize_chart', 'ok'],
        ['send_email', 'failed'],
      ],
      'no workspace account: send_email fails plainly',
    );
    await page.waitForFunction(() => {
      const img = document.querySelector('img.attachment') as HTMLImageElement | null;
      return !!img && img.complete && img.naturalWidth > 0;
    });
    t.equal(
      await page.$eval('img.attachment', (i) => (i as HTMLImageElement).naturalWidth),
      800,
      'the PNG loaded (800 px wide)',
    );
    t.match(
      await page.textContent('.tool[data-tool=send_email]'),
      /connect your workspace account/,
      'the tool error tells the user what to do',
    );
    await screenshot(page, 'chat-attachment');
    // At 390 px, with a row opened (send_email's long input): nothing widens the page.
    await page.click('.tool[data-tool=send_email] summary');
    await checkNarrow(t, page, 'chat-tools');
    await page.click('.tool[data-tool=send_email] summary');

    // Another user cannot read that attachment.
    await createUser(d.database.sql, {
      username: 'eve',
      email: 'eve@example.test',
      passwordHash: await hashPassword('eve-password'),
    });
    const src = await page.getAttribute('img.attachment', 'src');
    const ctx2 = await browser.newContext();
    const p2 = await ctx2.newPage();
    await p2.goto(d.web.url + '/#/login');
    await p2.fill('#username', 'eve');
    await p2.fill('#password', 'eve-password');
    await p2.keyboard.press('Enter');
    await p2.waitForSelector('#prompt');
    t.equal(
      await p2.evaluate(async (u) => (await fetch(u!)).status, src),
      404,
      "another user's attachment is not found",
    );
    await ctx2.close();

    // An admin sees the live session on the admin page, restarts it, then kills it.
    await createUser(d.database.sql, {
      username: 'root',
      email: 'root@example.test',
      passwordHash: await hashPassword('root-password'),
      isSuperuser: true,
    });
    const ctx3 = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p3 = await ctx3.newPage();
    p3.on('dialog', (dlg) => void dlg.accept());
    await login(p3, d.web.url, 'root');
    await p3.goto(d.web.url + '/#/admin/sessions');
    await p3.waitForSelector('#sessions-table');
    const sid = page.url().split('#/chat/')[1];
    const containerOf = () => d.runtime!.sessions.list().find((s) => s.sessionId === sid)?.containerId;
    const first = containerOf();
    t.ok(first, 'the session has a live sandbox');
    t.match(await p3.textContent('#sessions-table'), 'carol', 'the session is listed with its user');
    // Ids show short on one line; the whole id is the tooltip (docs/ui-admin.md, "Live sessions").
    const shownIds = () => p3.$$eval('#sessions-table code.sid', (els) => els.map((e) => e.getAttribute('title')));
    t.same(await shownIds(), [sid], 'the session is listed by its id');
    t.same(
      await p3.$$eval('#sessions-table code.container-id', (els) => els.map((e) => e.textContent)),
      [first!.slice(0, 12)],
      'and its container',
    );
    await screenshot(p3, 'admin-sessions');

    await p3.click(`button[aria-label="Restart session ${sid}"]`);
    await p3.waitForFunction(
      (old) => {
        const ids = Array.from(document.querySelectorAll('#sessions-table code.container-id'), (e) => e.textContent);
        return ids.length === 1 && ids[0] !== old;
      },
      first!.slice(0, 12),
      { timeout: 120_000 },
    );
    const second = containerOf();
    t.ok(second && second !== first, 'the session got a new container');
    t.same(
      await p3.$$eval('#sessions-table code.container-id', (els) => els.map((e) => e.textContent)),
      [second!.slice(0, 12)],
      'the page shows the new container',
    );
    t.same(await shownIds(), [sid], 'still the same session');
    t.equal(await p3.locator('#sess-status [role=alert]').count(), 0, 'no error shown');
    await t.rejects(docker.getContainer(first!).inspect(), 'the old container is gone');
    // The chat goes on in the new sandbox.
    await page.fill('#prompt', 'chart 1 2');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('[data-done]').length === 3, undefined, {
      timeout: 120_000,
    });
    t.equal(
      await page.getAttribute('.msg.assistant:last-child', 'data-done'),
      'end_turn',
      'a prompt after the restart runs',
    );
    t.equal(containerOf(), second, 'in the restarted container');

    await p3.click(`button[aria-label="Kill session ${sid}"]`);
    await p3.waitForFunction(() =>
      /No live sessions/.test(document.querySelector('#sessions-table')?.textContent ?? ''),
    );
    t.same(
      d.runtime!.sessions.list().filter((s) => s.sessionId),
      [],
      'killed',
    );
    await ctx3.close();
  });

  t.test('reload mid-turn: the turn runs on in the sandbox, the page reattaches and sees the mail sent', async (t) => {
    const g = await google.start({ userEmail: 'frida@example.test' });
    t.teardown(() => g.close());
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        {
          kind: 'reply',
          text: 'Drawing the chart. ',
          tool_calls: [
            {
              name: 'rasterize_chart',
              arguments: {
                type: 'bar',
                title: 'Sales',
                labels: ['a', 'b'],
                datasets: [{ label: 'Sales', data: [3, 5] }],
              },
            },
          ],
        },
        // Time for the reload: the page goes away while the model "thinks" before mailing.
        {
          kind: 'reply',
          text: 'Mailing it now. ',
          delay_ms: STALL_MS,
          tool_calls: [
            {
              name: 'send_email',
              arguments: { to: ['bob@example.test'], subject: 'Sales chart', text: 'Here is the chart.' },
            },
          ],
        },
        { kind: 'reply', text: 'Sent the chart to bob@example.test.' },
      ],
    });
    t.teardown(() => model.close());
    const d = await start(t, { ...modelEnv(model.url), ...googleEnv(g.url) });
    await createUser(d.database.sql, {
      username: 'frida',
      email: 'frida@example.test',
      passwordHash: await hashPassword('frida-password'),
    });
    await connectWorkspace(d, 'frida@example.test', g.token);
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await login(page, d.web.url, 'frida');
    await page.fill('#prompt', 'chart a=3 b=5 and email it to bob@example.test');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.tool[data-tool=rasterize_chart][data-status=ok]', { timeout: 120_000 });
    t.equal(g.mailbox.length, 0, 'no mail yet');
    await page.reload();
    await page.waitForSelector('#stop', { timeout: 15_000 });
    t.ok(await page.isVisible('#stop'), 'after the reload the page shows the turn running, with Stop');
    await page.waitForSelector('.msg.assistant[data-done]', { timeout: 120_000 });
    t.equal(
      await page.getAttribute('.msg.assistant[data-done]', 'data-done'),
      'end_turn',
      'the turn finished normally',
    );
    t.equal(await page.getAttribute('.tool[data-tool=send_email]', 'data-status'), 'ok', 'send_email done on the page');
    t.match(await page.textContent('.msg.assistant'), /Sent the chart to bob@example\.test\./);
    t.equal(g.mailbox.length, 1, 'the mail arrived');
    const log = await queryActionLog(d.database.sql, { event: 'chat.mail_sent' });
    t.equal(log.length, 1, 'the action log has the mail');
    t.same(log[0].data.recipients, 1, 'with its recipients count');
    t.notOk(JSON.stringify(log[0].data).includes('bob@'), 'never the addresses or the body');
    await screenshot(page, 'chat-reload-mail', { fullPage: false });

    // Deleting the chat (confirmed) ends its sandbox.
    const sid = page.url().split('#/chat/')[1];
    t.equal(
      d.runtime!.sessions.list().filter((s) => s.sessionId === sid).length,
      1,
      'a live sandbox before the delete',
    );
    page.on('dialog', (dlg) => void dlg.accept());
    await page.click(`#session-list li.session-item:has(a[href="#/chat/${sid}"]) button:text("Delete")`);
    await page.waitForFunction(() => location.hash === '#/chat');
    t.same(
      d.runtime!.sessions.list().filter((s) => s.sessionId === sid),
      [],
      'deleting the chat ended its sandbox',
    );
    t.equal(
      (await queryActionLog(d.database.sql, { event: 'chat.deleted' }))[0]?.data.sandbox_ended,
      true,
      'logged with sandbox_ended',
    );
  });
}
