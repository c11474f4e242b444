import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import {
  browserUnavailable,
  checkNarrow,
  FOCUS_RING,
  focusRing,
  launch,
  screenshot,
  tabTo,
  unlabelledControls,
} from '../helpers/browser.js';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('password login in a real browser, wrong password shown plainly, keyboard only', async (t) => {
    const app = await startTestApp(t);
    await addUser(app.database, 'alice', 'alice-password-1', { superuser: false });
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(app.url + '/');
    await page.waitForSelector('#username');
    t.equal(await page.locator('label[for=username]').textContent(), 'Username', 'inputs are labelled');
    t.same(await unlabelledControls(page), [], 'every control on the login page has an accessible name');
    await screenshot(page, 'login');
    await checkNarrow(t, page, 'login');

    // Keyboard: from the username field, Tab reaches the Sign in button, drawn with the project's ring.
    await page.focus('#username');
    t.ok(await tabTo(page, 'button[type=submit]'), 'Sign in reachable with Tab');
    const ring = await focusRing(page);
    t.equal(ring?.text, 'Sign in');
    t.ok(ring?.focusVisible, 'keyboard focus: :focus-visible applies');
    t.match(ring, FOCUS_RING, 'the button shows the 3px amber focus ring of style.css');

    await page.fill('#username', 'alice');
    await page.fill('#password', 'wrong-password');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('#login-error')?.textContent !== '');
    t.match(await page.textContent('#login-error'), /Wrong username or password/);

    await page.fill('#password', 'alice-password-1');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');
    t.match(await page.textContent('#who'), /alice/, 'header shows the user');
    t.match(page.url(), /#\/chat/);

    // Narrow screen still usable.
    t.same(await unlabelledControls(page), [], 'every control on the chat page has an accessible name');
    await page.setViewportSize({ width: 390, height: 800 });
    t.ok(await page.isVisible('#prompt'), 'composer visible at 390px');
    await page.setViewportSize({ width: 1280, height: 800 });
    await checkNarrow(t, page, 'chat-empty');

    await page.click('#logout');
    await page.waitForSelector('#username');
    const me = await page.evaluate(async () => (await fetch('/api/auth/me')).status);
    t.equal(me, 401, 'logged out');
  });
}
