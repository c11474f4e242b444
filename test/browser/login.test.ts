import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('password login in a real browser, wrong password shown plainly, keyboard only', async (t) => {
    const app = await startTestApp(t);
    await addUser(app.db, 'alice', 'alice-password-1', { superuser: false });
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(app.url + '/');
    await page.waitForSelector('#username');
    t.equal(await page.locator('label[for=username]').textContent(), 'Username', 'inputs are labelled');
    await screenshot(page, 'login');

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
    await page.setViewportSize({ width: 390, height: 800 });
    t.ok(await page.isVisible('#prompt'), 'composer visible at 390px');
    await screenshot(page, 'chat-empty-390');

    await page.click('#who button');
    await page.waitForSelector('#username');
    const me = await page.evaluate(async () => (await fetch('/api/auth/me')).status);
    t.equal(me, 401, 'logged out');
  });
}
