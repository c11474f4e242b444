/**
 * The chat page in a real browser against the real web app: markdown answers (and hostile ones),
 * Stop and Enter while a turn runs, conversations (rename, search, delete, timestamps, copy,
 * regenerate, edit), auto-scroll with "jump to latest", the input in view at 390 and 360 px, dark mode,
 * keyboard-only use and an axe-core scan. The turn runner is a scripted TurnRunner (the daemon's
 * side of the interface); everything from the route to the DOM is the real code.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { axeProblems, browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';

// Many conversations in one real browser; on a busy 2-core machine it runs past the default 180 s.
t.setTimeout(420_000);

const PASSWORD = 'erin-password-1';

export const MARKDOWN_ANSWER = [
  '## Quarterly summary',
  '',
  'Revenue grew **12 %**; see [the report](https://example.com/report) and [in-page](#top).',
  '',
  '| region | revenue |',
  '| --- | ---: |',
  '| north | 120 |',
  '| south | 95 |',
  '',
  '```js',
  'const total = [120, 95].reduce((a, b) => a + b, 0);',
  '```',
].join('\n');

const HOSTILE_ANSWER = [
  '<script>window.__pwned = "script"</script>',
  '<img src="x" onerror="window.__pwned = \'onerror\'">',
  "[click me](javascript:window.__pwned='link')",
  '<a href="javascript:window.__pwned=\'a\'">raw link</a>',
  '<iframe src="javascript:window.__pwned=\'iframe\'"></iframe>',
  '<div class="approval approval-card banner"><p class="approval-state">Approved</p></div>',
  '<p id="send" class="msg user">not the page\'s own</p>',
  '<form action="/api/auth/logout" method="post"><button>Log out</button></form>',
  '',
  '| n | square |',
  '| --- | --- |',
  ...Array.from({ length: 5000 }, (_, i) => `| ${i} | ${i * i} |`),
].join('\n');

/** Answers by prompt; `hold` starts a tool and waits to be stopped. */
class ScriptedRunner implements TurnRunner {
  turns: { sessionId: string; prompt: string; cancelled?: boolean }[] = [];
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    const turn: (typeof this.turns)[number] = { sessionId: req.sessionId, prompt: req.prompt };
    this.turns.push(turn);
    if (req.prompt === 'hold') {
      req.onEvent({ type: 'tool_start', call_id: 'c1', tool: 'slow_tool', input: {} });
      await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
      turn.cancelled = true;
      return { stop_reason: 'cancelled' };
    }
    if (req.prompt === 'markdown') req.onEvent({ type: 'text_delta', text: MARKDOWN_ANSWER });
    else if (req.prompt === 'hostile') req.onEvent({ type: 'text_delta', text: HOSTILE_ANSWER });
    else if (req.prompt === 'drip')
      for (let i = 0; i < 40; i++) {
        req.onEvent({ type: 'text_delta', text: `Line ${i} of a slow answer.\n\n` });
        await new Promise((r) => setTimeout(r, 60));
      }
    else if (req.prompt === 'long')
      for (let i = 0; i < 60; i++) req.onEvent({ type: 'text_delta', text: `Paragraph ${i} of a long answer.\n\n` });
    else req.onEvent({ type: 'text_delta', text: `You said: ${req.prompt} (#${this.turns.length})` });
    return { stop_reason: 'end_turn' };
  }
}

async function login(page: Page, url: string): Promise<void> {
  await page.goto(url + '/#/login');
  await page.fill('#username', 'erin');
  await page.fill('#password', PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#prompt');
}

/** Type a prompt and press Enter (keyboard only); wait for the n-th finished answer. */
async function ask(page: Page, text: string, n: number): Promise<void> {
  await page.focus('#prompt');
  await page.keyboard.insertText(text);
  await page.keyboard.press('Enter');
  // Done when this prompt is the last one shown and n answers are done (a view of another chat
  // that is still on screen right after navigating must not count).
  await page.waitForFunction(
    ([k, p]) => {
      const users = document.querySelectorAll('.msg.user .bubble');
      return (
        users[users.length - 1]?.textContent === p &&
        document.querySelectorAll('.msg.assistant[data-done]').length === k
      );
    },
    [n, text] as const,
    { timeout: 15_000 },
  );
}

/** The prompt box lies fully inside the viewport. */
async function promptInView(page: Page): Promise<{ top: number; bottom: number; vh: number }> {
  return page.$eval('#prompt', (el) => {
    const r = el.getBoundingClientRect();
    return { top: Math.round(r.top), bottom: Math.round(r.bottom), vh: window.innerHeight };
  });
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  let url = '';
  let runner: ScriptedRunner;
  t.before(async () => {
    runner = new ScriptedRunner();
    const app = await startTestApp(t, { services: { chat: { runner } } });
    await addUser(app.database, 'erin', PASSWORD);
    url = app.url;
  });

  for (const scheme of ['light', 'dark'] as const) {
    t.test(`markdown answers, hostile answers inert, copy code (1280 px, ${scheme})`, async (t) => {
      const browser = await launch(t);
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
      await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await login(page, url);
      await ask(page, 'markdown', 1);
      const md = '.msg.assistant .markdown';
      t.equal(await page.textContent(`${md} h2`), 'Quarterly summary', 'heading');
      t.equal(await page.$$eval(`${md} table tbody tr`, (r) => r.length), 2, 'table');
      t.equal(
        await page.$eval(`${md} tbody td:nth-child(2)`, (e) => getComputedStyle(e).textAlign),
        'right',
        'a column marked ---: is right-aligned',
      );
      t.ok(await page.$(`${md} pre code.hljs span[class^=hljs-]`), 'the code block is highlighted');
      t.match(
        await page.getAttribute(`${md} a[href^="https:"]`, 'rel'),
        /noopener/,
        'outside links open without a handle on the page',
      );
      t.equal(await page.getAttribute(`${md} a[href^="https:"]`, 'target'), '_blank');
      t.equal(await page.getAttribute(`${md} a[href="#top"]`, 'target'), null, 'in-page anchors stay in the page');
      await page.click(`${md} button.copy-code`);
      t.equal(
        await page.evaluate(() => navigator.clipboard.readText()),
        'const total = [120, 95].reduce((a, b) => a + b, 0);\n',
        'Copy code copies the code',
      );
      const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      t.equal(
        bg,
        scheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(246, 247, 249)',
        `the page follows the system's ${scheme} setting`,
      );
      const problems = await axeProblems(page);
      t.same(problems, [], `axe: no serious or critical issue (${scheme})`);
      await screenshot(page, `chat-markdown-${scheme}`, { fullPage: false });

      const t0 = Date.now();
      await ask(page, 'hostile', 2);
      const ms = Date.now() - t0;
      t.ok(ms < 5000, `a hostile answer with a 5,000-row table renders in ${ms} ms`);
      const last = '.msg.assistant:last-of-type';
      t.equal(
        await page.evaluate(() => (window as any).__pwned),
        undefined,
        'no script, handler or javascript: link ran',
      );
      t.equal(
        await page.$$eval(
          `${last} [onerror], ${last} script, ${last} iframe, ${last} form, ${last} .markdown button:not(.copy-code)`,
          (x) => x.length,
        ),
        0,
        'no script, handler, iframe or form in the DOM',
      );
      t.equal(await page.$$eval(`${last} a[href^="javascript:" i]`, (x) => x.length), 0, 'no javascript: link');
      t.equal(
        await page.$$eval(
          `${last} .markdown [class]:not(code):not(.table-wrap):not(.table-note):not(.copy-code):not(.code-head):not([class^="hljs"])`,
          (x) => x.map((e) => e.className).filter((c) => /approval|banner|msg|state/.test(c)).length,
        ),
        0,
        "the answer wears none of the page's own classes (no fake approval card)",
      );
      t.equal(await page.$$eval(`${last} .markdown [id]`, (x) => x.length), 0, 'nor its ids');
      t.equal(
        await page.$$eval(`${last} table tbody tr`, (x) => x.length),
        200,
        'a huge table shows its first 200 rows',
      );
      // (The route caps one text_delta at 64 KiB, so fewer than 5,000 rows arrive.)
      t.match(await page.textContent(`${last} .table-note`), /^\d{3,} more rows not shown/);
      // Clicking where the hostile link was does nothing either.
      const links = await page.$$(`${last} .markdown a`);
      for (const a of links) await a.click({ modifiers: [] }).catch(() => undefined);
      t.equal(await page.evaluate(() => (window as any).__pwned), undefined, 'clicking the links ran nothing');
      t.same(errors, [], 'nothing uncaught');
    });
  }

  // The turn controls at desktop width in light and at phone width in dark.
  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const) {
    t.test(
      `Enter while a turn runs keeps the prompt; Stop (keyboard) ends the turn; the kept prompt sends after (${width} px, ${scheme})`,
      async (t) => {
        const browser = await launch(t);
        const page = await browser.newPage({ viewport: { width, height: 900 }, colorScheme: scheme });
        await login(page, url);
        const before = runner.turns.length;
        await page.focus('#prompt');
        await page.keyboard.insertText('hold');
        await page.keyboard.press('Enter');
        await page.waitForSelector('#stop:not([disabled])');
        await page.keyboard.insertText('my next question');
        await page.keyboard.press('Enter');
        t.equal(await page.inputValue('#prompt'), 'my next question', 'the prompt is still in the box');
        t.match(await page.textContent('#composer-hint'), /still running/);
        t.equal(runner.turns.length, before + 1, 'nothing was sent');
        await page.focus('#stop');
        await page.keyboard.press('Enter');
        await page.waitForSelector('.msg.assistant[data-done=cancelled]');
        t.ok(runner.turns[before].cancelled, 'the turn was cancelled on the server');
        t.match(await page.textContent('.msg.assistant[data-done=cancelled]'), /Stopped|cancel/i);
        await page.focus('#prompt');
        await page.keyboard.press('Enter');
        await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done]').length === 2);
        t.equal(runner.turns.at(-1)!.prompt, 'my next question', 'the kept prompt was sent');
        t.equal(await page.inputValue('#prompt'), '');
      },
    );
  }

  t.test('conversations: timestamps, copy, regenerate, edit, rename, search, delete (keyboard)', async (t) => {
    const browser = await launch(t);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
    const page = await ctx.newPage();
    await login(page, url);
    await ask(page, 'alpha question', 1);
    await ask(page, 'beta question', 2);
    const sid = page.url().split('#/chat/')[1];
    t.ok(sid, 'the URL names the chat');
    t.equal(
      await page.$$eval('.msg time', (x) => x.filter((e) => (e as HTMLTimeElement).dateTime && e.textContent).length),
      4,
      'each message has its time',
    );
    t.ok(await page.$eval('#session-list .session-date time', (e) => !!e.textContent), 'the list shows dates');
    t.same(
      await page.$$eval('#session-list .session-group-name', (x) => x.map((e) => e.textContent)),
      ['Today'],
      'grouped by day',
    );
    // Pin the chat: it moves to a "Pinned" group at the top; unpin puts it back.
    await page.click(`#session-list li.session-item:has(a[href="#/chat/${sid}"]) button.pin`);
    await page.waitForFunction(
      () => document.querySelector('#session-list .session-group-name')?.textContent === 'Pinned',
    );
    t.equal(
      await page.getAttribute(`#session-list li.session-item:has(a[href="#/chat/${sid}"]) button.pin`, 'aria-pressed'),
      'true',
      'pinned',
    );
    await page.click(`#session-list li.session-item:has(a[href="#/chat/${sid}"]) button.pin`);
    await page.waitForFunction(
      () => document.querySelector('#session-list .session-group-name')?.textContent === 'Today',
    );

    await page.click('.msg.assistant:last-of-type .copy-answer');
    t.match(await page.evaluate(() => navigator.clipboard.readText()), /^You said: beta question/, 'copy an answer');

    const n = runner.turns.length;
    await page.focus('.msg.assistant:last-of-type .regenerate');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (k) =>
        document.querySelectorAll('.msg.assistant[data-done]').length === 2 &&
        document.querySelector('.msg.assistant:last-of-type')!.textContent!.includes(`#${k}`),
      n + 1,
    );
    t.equal(runner.turns.at(-1)!.prompt, 'beta question', 'regenerate asks again with the same prompt');
    t.equal(await page.$$eval('.msg.user', (x) => x.length), 2, 'the old answer was replaced on screen, not added to');
    const lastPos = () =>
      page.evaluate(
        () =>
          Array.from(document.querySelectorAll('.msg.user')).at(-1)?.querySelector('.branch-pos')?.textContent ?? null,
      );
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('.msg.user')).at(-1)?.querySelector('.branch-pos')?.textContent === '2/2',
    );
    t.pass('the regenerated answer shows 2/2 (the old one is kept)');

    await page.focus('.edit-last');
    await page.keyboard.press('Enter');
    t.equal(await page.inputValue('#prompt'), 'beta question', 'Edit puts the last prompt in the box');
    await page.fill('#prompt', 'gamma question');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () =>
        document.querySelector('.msg.user:nth-last-of-type(2) .bubble, .msg.user:last-of-type .bubble') !== null &&
        Array.from(document.querySelectorAll('.msg.user .bubble'))
          .map((e) => e.textContent)
          .join('|') === 'alpha question|gamma question',
    );
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done]').length === 2);
    t.equal(runner.turns.at(-1)!.prompt, 'gamma question');
    await page.reload();
    await page.waitForSelector('.msg.assistant[data-done]');
    t.same(
      await page.$$eval('.msg.user .bubble', (x) => x.map((e) => e.textContent)),
      ['alpha question', 'gamma question'],
      'the edit is stored',
    );
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('.msg.user')).at(-1)?.querySelector('.branch-pos')?.textContent === '3/3',
    );
    t.equal(await lastPos(), '3/3', 'three versions of the second message');
    // Back to an older version: the page shows that branch, and it is what the server keeps.
    await page.locator('.msg.user').last().locator('button[aria-label="Previous version"]').click();
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('.msg.user .bubble'))
          .map((e) => e.textContent)
          .join('|') === 'alpha question|beta question',
    );
    t.equal(await lastPos(), '2/3');
    t.match(
      await page.textContent('.msg.assistant:last-of-type'),
      /You said: beta question \(#\d+\)/,
      'the regenerated answer of that version',
    );
    t.same(await axeProblems(page), [], 'axe: the page with a version switcher');
    await page.reload();
    await page.waitForSelector('.msg.assistant[data-done]');
    t.equal(await lastPos(), '2/3', 'the switch is stored');
    // Edit a middle message: the later turns leave the screen; the edit starts a new version.
    await page.locator('.msg.user').first().locator('.edit').click();
    t.equal(await page.inputValue('#prompt'), 'alpha question', 'Edit works on any message');
    await page.fill('#prompt', 'alpha, edited');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('.msg.user .bubble'))
          .map((e) => e.textContent)
          .join('|') === 'alpha, edited',
    );
    await page.waitForFunction(() => document.querySelector('.msg.user .branch-pos')?.textContent === '2/2');
    t.equal(runner.turns.at(-1)!.prompt, 'alpha, edited');
    // Back to the first version of the first message: its branch comes back, at its newest continuation.
    await page.locator('.msg.user').first().locator('button[aria-label="Previous version"]').click();
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('.msg.user .bubble'))
          .map((e) => e.textContent)
          .join('|') === 'alpha question|gamma question',
    );

    // Rename with the keyboard.
    await page.focus(`#session-list li.session-item:has(a[href="#/chat/${sid}"]) button:text("Rename")`);
    await page.keyboard.press('Enter');
    // The page focuses and selects the title field once it has rendered it: type only then.
    await page.waitForFunction(() => document.activeElement?.id.startsWith('rename-') === true);
    const box = await page.evaluate(() => {
      const input = document.activeElement as HTMLInputElement;
      const buttons = Array.from(input.form!.querySelectorAll('button')).map((b) => ({
        text: b.textContent,
        cut: b.scrollWidth > b.clientWidth,
      }));
      return {
        width: input.getBoundingClientRect().width,
        side: document.querySelector('#chat-list-panel')!.getBoundingClientRect().width,
        buttons,
      };
    });
    t.ok(
      box.width >= box.side * 0.7,
      `the title field takes the panel's width (${Math.round(box.width)} of ${Math.round(box.side)} px)`,
    );
    t.same(
      box.buttons,
      [
        { text: 'Save', cut: false },
        { text: 'Cancel', cut: false },
      ],
      'Save and Cancel whole, not cut',
    );
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('Greek letters');
    await page.keyboard.press('Enter');
    await page
      .waitForFunction(() => document.querySelector('#chat-heading')?.textContent === 'Greek letters', undefined, {
        timeout: 5000,
      })
      .catch(async () => {
        t.fail(
          `heading after rename: ${await page.textContent('#chat-heading')}; list: ${await page.textContent('#session-list')}`,
        );
      });
    t.equal(
      await page.evaluate(() => document.activeElement?.textContent),
      'Rename',
      'focus returns to the Rename button',
    );

    // A second chat, then search by title and by content.
    await page.click('#new-session');
    await page.waitForFunction(() => document.querySelector('#chat-heading')?.textContent === 'New chat');
    await ask(page, 'delta topic', 1);
    await page.waitForFunction(
      () => document.querySelector('#session-list .session-title')?.textContent === 'delta topic',
    );
    const count = () => page.$$eval('#session-list .session-item', (x) => x.length);
    const total = await count();
    await page.fill('#chat-search', 'greek');
    await page.waitForFunction(() => document.querySelectorAll('#session-list .session-item').length === 1);
    t.equal(await page.textContent('#session-list .session-title'), 'Greek letters', 'search by title');
    await page.fill('#chat-search', 'You said: delta');
    await page.waitForFunction(
      () => document.querySelector('#session-list .session-title')?.textContent === 'delta topic',
    );
    t.equal(await page.$$eval('#session-list .session-item', (x) => x.length), 1, 'search by answer text');
    await page.fill('#chat-search', '');
    await page.waitForFunction((n) => document.querySelectorAll('#session-list .session-item').length === n, total);

    // Delete asks first; Cancel keeps it, OK deletes it.
    const dialogs: string[] = [];
    let accept = false;
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void (accept ? d.accept() : d.dismiss());
    });
    const del = `#session-list li.session-item:has(a[href="#/chat/${sid}"]) button:text("Delete")`;
    await page.focus(del);
    await page.keyboard.press('Enter');
    await settled(page);
    t.equal(await count(), total, 'Cancel keeps the chat');
    accept = true;
    await page.focus(del);
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => document.querySelectorAll('#session-list .session-item').length === n, total - 1);
    t.notOk(await page.$(`#session-list a[href="#/chat/${sid}"]`), 'the deleted chat is gone from the list');
    t.equal(dialogs.length, 2, 'each delete asked');
    t.match(dialogs[0], /Greek letters.*sandbox/);
  });

  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const)
    t.test(
      `auto-scroll follows the answer, stops when the reader scrolls up; jump to latest (${width} px, ${scheme})`,
      async (t) => {
        const browser = await launch(t);
        const page = await browser.newPage({ viewport: { width, height: 700 }, colorScheme: scheme });
        await login(page, url);
        await ask(page, 'long', 1);
        await settled(page);
        const gap = () => page.$eval('#transcript', (el) => el.scrollHeight - el.scrollTop - el.clientHeight);
        t.ok((await gap()) < 48, 'scrolled to the newest content');
        t.notOk(await page.$('#jump-latest'), 'no jump control at the bottom');
        await page.focus('#prompt');
        await page.keyboard.insertText('drip');
        await page.keyboard.press('Enter');
        await page.waitForFunction(() =>
          document.querySelector('.msg.assistant:last-of-type')?.textContent?.includes('Line 3 '),
        );
        const box = (await page.$('#transcript'))!;
        const b = (await box.boundingBox())!;
        await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
        await page.mouse.wheel(0, -2000);
        await page.waitForSelector('#jump-latest');
        await page.waitForSelector('.msg.assistant:last-of-type[data-done]');
        await settled(page);
        t.ok((await gap()) > 200, 'the answer going on does not pull a reader who scrolled up');
        await page.focus('#jump-latest');
        await page.keyboard.press('Enter');
        await settled(page);
        t.ok((await gap()) < 48, 'jump to latest goes to the bottom');
        const v = await promptInView(page);
        t.ok(v.bottom <= v.vh && v.top >= 0, `the input stays in view (${v.top}–${v.bottom} of ${v.vh})`);
        // A reopened chat opens at its end.
        await page.reload();
        await page.waitForSelector('.msg.assistant[data-done]');
        await settled(page);
        t.ok((await gap()) < 48, 'a reopened chat starts at the newest message');
      },
    );

  // 390 px (a common phone) and 360 px (the narrowest the page promises), light and dark.
  for (const [width, scheme] of [
    [390, 'light'],
    [390, 'dark'],
    [360, 'light'],
    [360, 'dark'],
  ] as const) {
    t.test(
      `${width} px (${scheme}): the input is in view on a new chat and a long one; the chats list is a drawer`,
      async (t) => {
        const browser = await launch(t);
        const page = await browser.newPage({ viewport: { width, height: 800 }, colorScheme: scheme });
        await login(page, url);
        // At phone widths New chat sits in the folded drawer (not clickable) and the page opens on a new
        // chat anyway; waiting for the hidden button cost playwright's whole 30 s click timeout.
        if (await page.isVisible('#new-session')) await page.click('#new-session');
        let v = await promptInView(page);
        t.ok(v.top >= 0 && v.bottom <= v.vh, `new chat: input at ${v.top}–${v.bottom} of ${v.vh}`);
        t.ok(v.bottom > v.vh * 0.5, 'near the bottom of the screen, not under a list');
        await ask(page, 'long', 1);
        v = await promptInView(page);
        t.ok(v.top >= 0 && v.bottom <= v.vh, `long chat: input at ${v.top}–${v.bottom} of ${v.vh}`);
        const w = await page.evaluate(() => document.documentElement.scrollWidth);
        t.ok(w <= width + 1, `no sideways scrolling (${w})`);
        t.notOk(await page.isVisible('#session-list'), 'the list is folded away');
        await page.click('.list-toggle[aria-controls]');
        t.ok(await page.isVisible('#session-list'), 'Chats opens it');
        t.same(await axeProblems(page), [], `axe at ${width} px (${scheme})`);
        await page.click('#chat-list-panel .list-toggle');
        await screenshot(page, `chat-${width}-${scheme}`, { fullPage: false });
      },
    );
  }

  t.test('dark mode can be switched and is remembered', async (t) => {
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await login(page, url);
    const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    t.equal(await bg(), 'rgb(246, 247, 249)');
    await page.focus('#theme-toggle');
    await page.keyboard.press('Enter');
    t.equal(await bg(), 'rgb(13, 17, 23)', 'switched to dark');
    t.equal(await page.getAttribute('#theme-toggle', 'aria-pressed'), 'true');
    await page.reload();
    await page.waitForSelector('#prompt');
    t.equal(await bg(), 'rgb(13, 17, 23)', 'still dark after a reload');
    t.same(await axeProblems(page), [], 'axe: dark chat page');
  });

  t.test('log out and in again in the same tab: the next prompt goes through (no CSRF error)', async (t) => {
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await login(page, url);
    await ask(page, 'before logout', 1);
    await page.click('#logout');
    await page.waitForSelector('#username');
    await page.fill('#username', 'erin');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');
    await page.click('#new-session');
    await ask(page, 'after login again', 1);
    t.equal(await page.getAttribute('.msg.assistant[data-done]', 'data-done'), 'end_turn');
    t.notOk(await page.$('#composer-hint'), 'no error shown');
    t.equal(runner.turns.at(-1)!.prompt, 'after login again');
  });
}
