/**
 * The settings page (#/settings), the users page (#/admin/users) and a new chat's title in the
 * list, in a real Chromium against the real web app: each works, and axe-core finds no serious or
 * critical issue at 1280 px light and 390 px dark.
 */
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { adminRig, openAdmin, ROOT_PW } from '../helpers/admin-browser.js';
import { axeProblems, browserUnavailable, checkNarrow, launch, screenshot } from '../helpers/browser.js';
import { startChatHarness } from '../helpers/chat.js';
import { addUser } from '../helpers/app.js';
import { atRestEncryptor } from '../../core/index.js';
import { createChatModel } from '../../domain/chat/models.js';

async function darkNarrow(t: Test, page: Page, name: string): Promise<void> {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 900 });
  t.same(await axeProblems(page), [], `axe: ${name}, 390 px dark`);
  await checkNarrow(t, page, name);
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('settings: theme system/light/dark before first paint, model for new chats, password', async (t) => {
    const { app, page } = await adminRig(t);
    await page.click('#settings-link');
    await page.waitForSelector('#password-form');
    t.ok(await page.isChecked('#theme-system'), 'system by default');
    await page.check('#theme-dark');
    t.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    t.equal(await page.getAttribute('#theme-toggle', 'aria-pressed'), 'true', "the header's switch follows");
    await page.reload();
    await page.waitForSelector('#password-form');
    t.equal(
      await page.evaluate(() => document.documentElement.dataset.theme),
      'dark',
      'kept across a reload (applied by theme.ts)',
    );
    await page.check('#theme-system');
    t.equal(
      await page.evaluate(() => document.documentElement.dataset.theme ?? null),
      null,
      'system: the media query decides',
    );
    t.equal(await page.evaluate(() => localStorage.getItem('airlock-theme')), 'system');

    await page.fill('#pw-current', 'not-the-password');
    await page.fill('#pw-new', 'short');
    await page.fill('#pw-again', 'short');
    await page.click('#pw-save');
    t.match(await page.textContent('#pw-problem'), /at least 8 characters/, 'found by the page');
    await page.fill('#pw-new', 'a-new-root-password');
    await page.fill('#pw-again', 'a-new-root-password');
    await page.click('#pw-save');
    await page.waitForSelector('#pw-status .banner');
    t.match(await page.textContent('#pw-status'), /current password is wrong/, "the server's refusal");
    await page.fill('#pw-current', ROOT_PW);
    await page.click('#pw-save');
    await page.waitForSelector('#pw-status [role=status]');
    t.match(await page.textContent('#pw-status'), /Password changed/);
    t.equal((await app.client().login('root', 'a-new-root-password')).status, 200, 'the new password works');
    t.equal(await page.inputValue('#pw-current'), '', 'the fields are emptied');
    // The model new chats start with: chosen here, preselected by the chat page's picker.
    await createChatModel(app.database.sql, atRestEncryptor(app.config), {
      id: 'second',
      label: 'Second model',
      provider: 'demo',
      model: 'demo',
      context_tokens: 50_000,
    });
    await page.reload();
    await page.waitForSelector('#settings-model option[value="second"]', { state: 'attached' });
    await page.selectOption('#settings-model', 'second');
    await page.waitForSelector('#settings-model-status [role=status]');
    t.equal(
      (
        await app.database.sql
          .selectFrom('users')
          .select('default_model_id')
          .where('username', '=', 'root')
          .executeTakeFirstOrThrow()
      ).default_model_id,
      'second',
      'stored for the user',
    );
    t.same(await axeProblems(page), [], 'axe: settings, 1280 px light');
    await screenshot(page, 'settings');
    await page.goto(`${app.url}/#/chat`);
    await page.waitForFunction(
      () => (document.querySelector('#model-picker') as HTMLSelectElement | null)?.value === 'second',
    );
    t.pass('the chat page preselects it for a new chat');
    await page.goto(`${app.url}/#/settings`);
    await page.waitForSelector('#password-form');
    await darkNarrow(t, page, 'settings-dark');
  });

  t.test('settings: a single sign-on account is told why there is no password form', async (t) => {
    const { app, page, root } = await adminRig(t);
    await app.database.sql.updateTable('users').set({ password_hash: null }).where('id', '=', root).execute();
    await page.goto(`${app.url}/#/settings`);
    await page.waitForSelector('#settings-no-password');
    t.equal(await page.locator('#password-form').count(), 0);
    t.match(await page.textContent('#settings-no-password'), /single sign-on/);
  });

  t.test('users page: search, deactivate, promote, reset password shown once; self refused', async (t) => {
    const { app, page, bob, root, dialogs } = await adminRig(t);
    await openAdmin(page, app.url, 'users', '#users-table');
    t.match(await page.textContent('#users-count'), /1–2 of 2/);
    // A synced account: its username is its e-mail, shown once.
    await addUser(app.database, 'cy@example.test', 'cy-password-123', { email: 'cy@example.test' });
    await page.fill('#users-q', 'cy@');
    await page.click('form[role=search] button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#users-count')?.textContent?.includes('of 1'));
    const cyRow = (await page.locator('#users-table tbody tr').first().textContent()) ?? '';
    t.equal(cyRow.split('cy@example.test').length - 1, 1, `a synced user's e-mail shows once (${cyRow})`);
    await page.fill('#users-q', '');
    await page.fill('#users-q', 'bob');
    await page.click('form[role=search] button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#users-count')?.textContent?.includes('of 1'));
    await page.click('button[aria-label="Deactivate bob"]');
    await page.waitForSelector('button[aria-label="Reactivate bob"]');
    t.match(await page.textContent('#users-status'), /bob is deactivated/);
    t.equal((await app.client().login('bob', 'bob-password-123')).status, 401, 'bob can no longer log in');
    await page.click('button[aria-label="Reactivate bob"]');
    await page.click('button[aria-label="Promote bob"]');
    await page.waitForSelector('button[aria-label="Demote bob"]');
    // Bob signs in by single sign-on only (no password) until the reset below gives him one.
    await app.database.sql.updateTable('users').set({ password_hash: null }).where('id', '=', bob).execute();
    await page.reload();
    await page.waitForSelector('#users-table tr:has-text("bob@")');
    t.match(
      await page.locator('#users-table tr', { hasText: 'bob@' }).textContent(),
      /single sign-on only \(no password\)/,
      'an account without a password is marked',
    );
    t.notMatch(
      await page.locator('#users-table tr', { hasText: 'root@' }).textContent(),
      /single sign-on/,
      'one with a password is not',
    );
    // The reset from a search: asked in the page (no native confirm()), the search stays, the
    // one-time password has a Copy button (issue 41).
    await page.fill('#users-q', 'bob');
    await page.click('form[role=search] button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#users-count')?.textContent?.includes('of 1'));
    const nativeBefore = dialogs.length;
    await page.click('button[aria-label="Reset password of bob"]');
    await page.waitForSelector('#users-reset-dialog[open] #users-reset-confirm');
    t.match(await page.textContent('#users-reset-dialog'), /Reset the password of bob/, 'asked in an in-page dialog');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#users-reset-dialog[open]', { state: 'detached' });
    t.equal(await page.locator('#users-new-password').count(), 0, 'Esc cancels: nothing reset');
    await page.click('button[aria-label="Reset password of bob"]');
    await page.click('#users-reset-confirm');
    await page.waitForSelector('#users-new-password code');
    t.equal(dialogs.length, nativeBefore, 'no native dialog');
    const pw = (await page.textContent('#users-new-password code')) ?? '';
    t.equal((await app.client().login('bob', pw)).status, 200, 'the password shown works');
    t.equal(await page.inputValue('#users-q'), 'bob', 'the search box keeps its text after the reset');
    await page.waitForFunction(() => document.querySelector('#users-count')?.textContent?.includes('of 1'));
    t.equal(await page.locator('#users-table tbody tr').count(), 1, 'the list stays filtered after the reset');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url });
    await page.click('#users-copy-password');
    await page.waitForSelector('#users-copy-password:text-is("Copied")');
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), pw, 'Copy puts the password on the clipboard');
    await page.waitForFunction(() => !/single sign-on/.test(document.querySelector('#users-table')?.textContent ?? ''));
    t.pass('with a password now, bob is no longer marked single sign-on only');
    t.same(await axeProblems(page), [], 'axe: users, 1280 px light');
    await screenshot(page, 'admin-users');

    await page.fill('#users-q', 'root');
    await page.click('form[role=search] button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#users-count')?.textContent?.includes('of 1'));
    await page.click('button[aria-label="Demote root"]');
    await page.waitForSelector('#users-status .banner.error');
    t.match(await page.textContent('#users-status'), /your own account/, 'self-demotion refused, said so');
    const log = await app.database.sql
      .selectFrom('action_log')
      .select('event')
      .where('subject_id', '=', bob)
      .where('actor_id', '=', root)
      .execute();
    t.ok(
      ['identity.user_deactivated', 'identity.user_reactivated', 'identity.user_promoted', 'auth.password_reset'].every(
        (e) => log.some((l) => l.event === e),
      ),
      'every change in the action log',
    );
    await darkNarrow(t, page, 'admin-users-dark');
  });

  t.test('a new chat gets its title from the first exchange, in the list', async (t) => {
    const h = await startChatHarness(t, {
      chatModels: true,
      title: () => ({ kind: 'reply', text: 'Offsite planning' }),
    });
    await h.login('tess');
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${h.app.url}/#/login`);
    await page.fill('#username', 'tess');
    await page.fill('#password', 'tess-password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#session-list');
    h.model.push({ kind: 'reply', text: 'Sure, here is a plan.' });
    await page.fill('textarea', 'can you help me plan the team offsite in May for twelve people');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() =>
      document.querySelector('#session-list')?.textContent?.includes('Offsite planning'),
    );
    t.pass('the title made by the model reached the open page');
    t.same(await axeProblems(page), [], 'axe: chat with its title, 1280 px light');
    await darkNarrow(t, page, 'chat-title-dark');
  });
}
