/**
 * Issue #33 in a real browser against the real web app, each at 1280 px light and 390 px dark with
 * an axe-core scan: sharing a chat (the owner's dialog, the read-only page a colleague opens after
 * signing in, a stranger's and a revoked link's "not found"), feedback on answers, the keyboard
 * shortcuts and their help dialog, the phone header (≤ 64 px, its functions in a Menu) and the
 * account connect that comes back to the chat it started from. The turn runner is scripted.
 */
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { createOrganisation, setMember } from '../../domain/identity/orgs.js';
import { start as startOAuth } from '../../emulator/google-oauth.js';
import { addUser, startTestAppWithOrigin, type TestApp } from '../helpers/app.js';
import { axeProblems, browserUnavailable, checkNarrow, launch, screenshot, settled } from '../helpers/browser.js';

t.setTimeout(420_000);
const PASSWORD = 'pw-share-123456';
const VIEWS = [
  [1280, 'light'],
  [390, 'dark'],
] as const;

class ScriptedRunner implements TurnRunner {
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    if (req.prompt === 'hold') {
      req.onEvent({ type: 'tool_start', call_id: 'c1', tool: 'slow_tool', input: {} });
      await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
      return { stop_reason: 'cancelled' };
    }
    req.onEvent({ type: 'text_delta', text: `You said: ${req.prompt}` });
    return { stop_reason: 'end_turn' };
  }
}

async function open(
  browser: Browser,
  url: string,
  width: number,
  scheme: 'light' | 'dark',
  hash = '#/login',
): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 }, colorScheme: scheme });
  await page.goto(`${url}/${hash}`);
  return page;
}

async function signIn(page: Page, name: string, then = '#prompt'): Promise<void> {
  await page.waitForSelector('#username');
  await page.fill('#username', name);
  await page.fill('#password', PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForSelector(then);
}

async function ask(page: Page, text: string): Promise<void> {
  const n = await page.locator('.msg.assistant[data-done]').count();
  await page.focus('#prompt');
  await page.keyboard.insertText(text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((k) => document.querySelectorAll('.msg.assistant[data-done]').length === k + 1, n);
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  let app: TestApp;
  let url = '';
  t.before(async () => {
    const oauth = await startOAuth({ email: 'ann@example.test' });
    t.teardown(() => oauth.close());
    ({ app } = await startTestAppWithOrigin(t, {
      services: { chat: { runner: new ScriptedRunner() } },
      env: {
        AIRLOCK_GOOGLE_CLIENT_ID: oauth.options.clientId!,
        AIRLOCK_GOOGLE_CLIENT_SECRET: oauth.options.clientSecret!,
        AIRLOCK_GOOGLE_AUTH_URL: oauth.authorizeUrl,
        AIRLOCK_GOOGLE_TOKEN_URL: oauth.tokenUrl,
        AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
      },
    }));
    url = app.url;
    const db = app.database.sql;
    const [ann, ben, cid] = await Promise.all(['ann', 'ben', 'cid'].map((n) => addUser(app.database, n, PASSWORD)));
    const acme = await createOrganisation(db, 'Acme');
    const other = await createOrganisation(db, 'Other');
    await setMember(db, acme.id, ann.id, 'member');
    await setMember(db, acme.id, ben.id, 'member');
    await setMember(db, other.id, cid.id, 'member');
  });

  t.test(
    'share a chat: make a link, a colleague reads it (read-only), a stranger and a revoked link get "not found"',
    async (t) => {
      const browser = await launch(t);
      const owner = await open(browser, url, 1280, 'light');
      await signIn(owner, 'ann');
      await ask(owner, 'hello share');
      await owner.click('#share-open');
      await owner.waitForSelector('#share-dialog[open] #share-create:not([disabled])');
      t.match(await owner.textContent('#share-status'), 'Not shared.');
      await owner.click('#share-create');
      const link = await (await owner.waitForSelector('#share-url')).inputValue();
      t.match(link, /\/#\/share\/[A-Za-z0-9_-]{43}$/, 'the link is shown');
      t.match(await owner.textContent('#share-status'), /^Shared since /, 'the owner sees the chat is shared');
      t.same(await axeProblems(owner), [], 'axe: the share dialog, 1280 light');
      await owner.keyboard.press('Escape');
      t.notOk(await owner.isVisible('#share-dialog'), 'Esc closes the dialog');
      const hash = link.slice(link.indexOf('#'));

      for (const [width, scheme] of VIEWS) {
        const page = await open(browser, url, width, scheme, hash);
        await signIn(page, 'ben', '#shared-heading');
        t.match(
          await page.textContent('#shared-note'),
          /Shared by ann/,
          `${width}: the colleague lands on the shared chat after signing in`,
        );
        t.match(await page.textContent('.shared-transcript'), /You said: hello share/);
        for (const sel of [
          '#prompt',
          '.composer',
          '.regenerate',
          '.edit',
          '.edit-last',
          '.feedback',
          '.approval-actions button',
        ])
          t.equal(await page.locator(sel).count(), 0, `${width}: read-only: no ${sel}`);
        t.same(await axeProblems(page), [], `axe: the shared page, ${width} ${scheme}`);
        if (width === 390) await checkNarrow(t, page, 'chat-shared-390-dark');
        await screenshot(page, `chat-shared-${width}-${scheme}`, { fullPage: false });
        await page.close();
      }

      const stranger = await open(browser, url, 1280, 'light', hash);
      await signIn(stranger, 'cid', '.shared[role=alert]');
      t.match(await stranger.textContent('.shared'), /Shared chat not found/, 'another organisation: not found');

      // The owner on a phone: Share is in the Menu; Stop sharing ends the link.
      await owner.setViewportSize({ width: 390, height: 800 });
      await owner.emulateMedia({ colorScheme: 'dark' });
      await owner.click('#chat-menu-button');
      await owner.click('#menu-share');
      await owner.waitForSelector('#share-dialog[open] #share-revoke');
      t.same(await axeProblems(owner), [], 'axe: the share dialog, 390 dark');
      await owner.click('#share-revoke');
      await owner.waitForFunction(() => document.querySelector('#share-status')?.textContent === 'Not shared.');
      const late = await open(browser, url, 1280, 'light', hash);
      await signIn(late, 'ben', '.shared[role=alert]');
      t.match(await late.textContent('.shared'), /Shared chat not found/, 'revoked: not found');
    },
  );

  t.test('feedback on an answer: thumbs up with a note, kept after a reload', async (t) => {
    const browser = await launch(t);
    for (const [width, scheme] of VIEWS) {
      const page = await open(browser, url, width, scheme);
      await signIn(page, 'ann');
      await ask(page, `rate me ${width}`);
      await page.locator('.msg.assistant[data-done]').last().locator('.thumb.up').click();
      await page.waitForSelector('.thumb.up[aria-pressed="true"]');
      await page.fill('.feedback-note textarea', `clear answer at ${width}`);
      await page.click('.feedback-note button[type=submit]');
      await page.waitForSelector('.feedback-note-open');
      t.same(await axeProblems(page), [], `axe: feedback, ${width} ${scheme}`);
      await page.reload();
      await page.waitForSelector('.thumb.up[aria-pressed="true"]');
      t.equal(
        await page.locator('.feedback-note-open').textContent(),
        'Edit note',
        `${width}: the rating and its note are kept`,
      );
      const row = await app.database.sql
        .selectFrom('chat_feedback')
        .selectAll()
        .where('note', '=', `clear answer at ${width}`)
        .executeTakeFirst();
      t.equal(row?.rating, 'up', 'stored');
      // Pressing the chosen thumb again takes it back.
      await page.locator('.msg.assistant[data-done]').last().locator('.thumb.up').click();
      await page.waitForSelector('.thumb.up[aria-pressed="false"]');
      await page.close();
    }
  });

  t.test(
    'keyboard shortcuts: help dialog (focus kept inside, Esc closes), new chat, search, composer, stop',
    async (t) => {
      const browser = await launch(t);
      for (const [width, scheme] of VIEWS) {
        const page = await open(browser, url, width, scheme);
        await signIn(page, 'ann');
        await ask(page, `keys ${width}`);
        await page.focus('#transcript');
        await page.keyboard.press('?');
        await page.waitForSelector('#shortcuts-dialog[open]');
        const inside = () => page.evaluate(() => !!document.activeElement?.closest('#shortcuts-dialog'));
        t.ok(await inside(), `${width}: focus moves into the dialog`);
        for (let i = 0; i < 4; i++) {
          await page.keyboard.press(i % 2 ? 'Shift+Tab' : 'Tab');
          t.ok(await inside(), `${width}: focus stays inside (${i})`);
        }
        t.match(await page.textContent('#shortcuts-dialog'), /New chat.*Search chats.*message box.*Stop the answer/s);
        t.same(await axeProblems(page), [], `axe: the shortcuts dialog, ${width} ${scheme}`);
        await screenshot(page, `chat-shortcuts-${width}-${scheme}`, { fullPage: false });
        await page.keyboard.press('Escape');
        await page.waitForSelector('#shortcuts-dialog:not([open])', { state: 'attached' });
        t.equal(await page.evaluate(() => document.activeElement?.id), 'transcript', `${width}: focus goes back`);
        await page.focus('#prompt');
        await page.keyboard.press('Control+Slash');
        await page.waitForSelector('#shortcuts-dialog[open]');
        await page.keyboard.press('Escape');
        await page.waitForSelector('#shortcuts-dialog:not([open])', { state: 'attached' });

        await page.keyboard.press('Alt+Shift+KeyS');
        await page.waitForFunction(() => document.activeElement?.id === 'chat-search');
        t.pass(`${width}: Alt+Shift+S goes to the search`);
        if (width === 390) await page.click('#chat-list-panel .list-toggle');
        await page.keyboard.press('Alt+Shift+KeyC');
        await page.waitForFunction(() => document.activeElement?.id === 'prompt');
        t.pass(`${width}: Alt+Shift+C goes to the message box`);
        await page.keyboard.insertText('hold');
        await page.keyboard.press('Enter');
        await page.waitForSelector('#stop:not([disabled])');
        await page.keyboard.press('Alt+Shift+KeyX');
        await page.waitForSelector('.msg.assistant[data-done="cancelled"]');
        t.pass(`${width}: Alt+Shift+X stops the answer`);
        await page.keyboard.press('Alt+Shift+KeyN');
        await page.waitForFunction(
          () => location.hash === '#/chat' && document.querySelector('#chat-heading')?.textContent === 'New chat',
        );
        t.pass(`${width}: Alt+Shift+N starts a new chat`);
        await page.close();
      }
    },
  );

  t.test(
    'the phone header is one row (≤ 64 px) with a Menu; a wide screen keeps its header; connecting comes back to the chat',
    async (t) => {
      const browser = await launch(t);
      const page = await open(browser, url, 390, 'dark');
      await signIn(page, 'ann');
      await ask(page, 'phone chrome');
      await settled(page);
      const top = await page.$eval('#transcript', (el) => Math.round(el.getBoundingClientRect().top));
      t.ok(top <= 64, `the conversation starts ${top} px from the top at 390 px`);
      await page.click('#chat-menu-button');
      for (const sel of [
        'a[href="#/chat"]',
        '#menu-model',
        '#menu-share',
        '#menu-shortcuts',
        '#menu-theme',
        '#menu-logout',
        'a[download]',
      ])
        t.ok(await page.locator(`#chat-menu ${sel}`).first().isVisible(), `the menu has ${sel}`);
      t.same(await axeProblems(page), [], 'axe: the phone menu, 390 dark');
      await screenshot(page, 'chat-phone-menu-390-dark', { fullPage: false });
      await page.keyboard.press('Escape');
      t.equal(
        await page.evaluate(() => document.activeElement?.id),
        'chat-menu-button',
        'Esc closes the menu, focus back on its button',
      );
      t.notOk(await page.isVisible('#model-picker'), 'the model row is folded away');
      await page.click('#chat-menu-button');
      await page.click('#menu-model');
      await page.waitForSelector('#model-picker');
      t.pass('Model shows the model picker');
      await checkNarrow(t, page, 'chat-phone-header-390-dark');

      // 1280 px light: the header, Share and the shortcuts button are there; no Menu.
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.emulateMedia({ colorScheme: 'light' });
      for (const sel of ['#logout', '#theme-toggle', '#share-open', '#shortcuts-open', '#export-md'])
        t.ok(await page.isVisible(sel), `1280: ${sel} shown`);
      t.notOk(await page.isVisible('#chat-menu-button'), '1280: no Menu');
      t.same(await axeProblems(page), [], 'axe: the chat page, 1280 light');

      // Connecting the account from this chat comes back to it.
      const sid = decodeURIComponent((await page.evaluate(() => location.hash)).split('/')[2] ?? '');
      t.ok(sid, 'in a chat');
      await page.click('#connect-account');
      await page.waitForURL(`${url}/?account=connected#/chat/${sid}`);
      await page.waitForSelector('#disconnect-account');
      t.equal(await page.textContent('#chat-heading'), 'phone chrome', 'back in the chat it started from');
    },
  );
}
