/**
 * The chat page when the answer stream breaks: the connection drops mid-turn (the real route,
 * its socket destroyed while a tool runs: the page reattaches with after=SEQ and the turn runs
 * on), the body ends mid-line, or a line is not JSON (no turn to reattach to: the page says so in
 * an alert, marks the running tool as interrupted, throws nothing uncaught and takes the next prompt).
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'dana-password-1';

/** A runner the test steers: `hold` turns start a tool and wait until the client goes away. */
class SteeredRunner implements TurnRunner {
  turns: { sessionId: string; prompt: string; cancelled?: boolean }[] = [];
  private toolStarted?: () => void;

  /** Resolves once a `hold` turn has sent its tool_start. */
  whenToolStarted(): Promise<void> {
    return new Promise((resolve) => (this.toolStarted = resolve));
  }

  async runTurn(req: TurnRequest): Promise<TurnResult> {
    const turn: (typeof this.turns)[number] = { sessionId: req.sessionId, prompt: req.prompt };
    this.turns.push(turn);
    if (req.prompt === 'hold') {
      req.onEvent({ type: 'tool_start', call_id: 'call-1', tool: 'slow_tool', input: { n: 1 } });
      this.toolStarted?.();
      await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
      turn.cancelled = true;
      return { stop_reason: 'cancelled' };
    }
    req.onEvent({ type: 'text_delta', text: `You said: ${req.prompt}` });
    return { stop_reason: 'end_turn' };
  }
}

async function login(page: Page, url: string): Promise<void> {
  await page.goto(url + '/#/login');
  await page.fill('#username', 'dana');
  await page.fill('#password', PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#prompt');
}

/** Uncaught errors and unhandled rejections in the page. */
function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

async function send(page: Page, text: string, turns: number): Promise<void> {
  await page.fill('#prompt', text);
  await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done]').length === n, turns, {
    timeout: 15_000,
  });
}

const lastTurn = '.msg.assistant:last-child';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('the connection drops while a tool runs: the page reattaches, the turn runs on, Stop ends it', async (t) => {
    const runner = new SteeredRunner();
    const app = await startTestApp(t, { services: { chat: { runner } } });
    await addUser(app.database, 'dana', PASSWORD);
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors = pageErrors(page);
    await login(page, app.url);

    await page.fill('#prompt', 'hold');
    const started = runner.whenToolStarted();
    await page.click('#send');
    await started;
    await page.waitForSelector('.tool[data-call=call-1]');
    t.equal(await page.textContent('.tool[data-call=call-1] .status'), 'running…', 'the tool shows as running');
    t.ok(await page.isVisible('#stop'), 'a Stop button replaces Send while the turn runs');
    const reads: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/events?after=')) reads.push(new URL(r.url()).search);
    });
    // The daemon's side of the connection goes away mid-turn: the page's reader.read() rejects.
    app.web.server.closeAllConnections();
    await page.waitForFunction(
      () =>
        document.querySelector('.msg.assistant:last-child .banner.info') !== null ||
        document.querySelector('.msg.assistant[data-done]') !== null,
    );
    await waitFor(() => reads.length, 'the page to read the events again');
    t.same(reads.slice(0, 1), ['?after=1'], 'the page reattached after the last event it saw');
    t.notOk(runner.turns[0].cancelled, 'the server did not cancel the turn');
    await page.waitForFunction(() => !document.querySelector('.msg.assistant:last-child .banner.info'));
    t.equal(await page.textContent('.tool[data-call=call-1] .status'), 'running…', 'still running after the reattach');
    await screenshot(page, 'chat-stream-reattached');

    await page.click('#stop');
    await page.waitForSelector(`${lastTurn}[data-done]`, { timeout: 15_000 });
    t.ok(runner.turns[0].cancelled, 'Stop cancelled the turn on the server');
    t.equal(await page.getAttribute(lastTurn, 'data-done'), 'cancelled');
    t.equal(await page.getAttribute('.tool[data-call=call-1]', 'data-status'), 'cancelled');
    t.notOk(await page.isDisabled('#send'), 'send is back');
    // The page learnt the session from the response headers, so the next prompt continues it.
    const sid = runner.turns[0].sessionId;
    t.match(page.url(), new RegExp(`#/chat/${sid}$`), 'the URL names the session of the turn');
    await send(page, 'are you there?', 2);
    t.equal(await page.getAttribute(lastTurn, 'data-done'), 'end_turn', 'the next turn runs normally');
    t.match(await page.textContent(lastTurn), /You said: are you there\?/);
    t.equal(runner.turns[1].sessionId, sid, 'in the same chat session');
    t.same(errors, [], 'nothing uncaught in the page');
  });

  t.test('a body cut off mid-line, and a line that is not JSON', async (t) => {
    const app = await startTestApp(t, { services: { chat: { runner: new SteeredRunner() } } });
    await addUser(app.database, 'dana', PASSWORD);
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors = pageErrors(page);
    await login(page, app.url);

    const toolStart = (id: string) =>
      JSON.stringify({ type: 'tool_start', seq: 1, call_id: id, tool: 'render_chart', input: {} }) + '\n';
    const done =
      JSON.stringify({ type: 'done', seq: 3, session_id: 'sess-x', turn_id: 'turn-x', stop_reason: 'end_turn' }) + '\n';
    const bodies = [
      // The server went away after half a line: the body ends without `done`.
      toolStart('cut-1') + '{"type":"tool_end","seq":2,"call_id":"cut-1","to',
      // A garbled line, then a `done` the page must not trust.
      toolStart('bad-1') + 'this is not JSON\n' + done,
    ];
    await page.route('**/api/chat/messages', (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/x-ndjson; charset=utf-8' },
        body: bodies.shift()!,
      }),
    );

    await send(page, 'first', 1);
    t.equal(await page.getAttribute(lastTurn, 'data-done'), 'interrupted', 'cut off: the turn is interrupted');
    t.match(await page.textContent(`${lastTurn} [role=alert]`), /connection .*dropped.*incomplete/i);
    t.equal(await page.getAttribute('.tool[data-call=cut-1]', 'data-status'), 'interrupted');
    t.notOk(await page.isDisabled('#send'), 'send is enabled again');

    await send(page, 'second', 2);
    t.equal(
      await page.getAttribute(lastTurn, 'data-done'),
      'interrupted',
      'not JSON: interrupted, the later done is ignored',
    );
    t.match(await page.textContent(`${lastTurn} [role=alert]`), /connection .*dropped.*incomplete/i);
    t.equal(await page.getAttribute('.tool[data-call=bad-1]', 'data-status'), 'interrupted');
    t.notOk(await page.isDisabled('#send'), 'send is enabled again');
    t.equal(bodies.length, 0, 'both scripted bodies were used');
    t.same(errors, [], 'nothing uncaught in the page');
  });
}
