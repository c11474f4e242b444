/**
 * Settings → Connectors in a real browser (docs/connectors.md, "OAuth per user"): the demo
 * tracker is listed, Connect goes through its authorization server's login and consent forms and
 * comes back to Settings connected; Disconnect asks first, revokes and shows the result.
 */
import t from 'tap';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { dbRows } from '../helpers/db.js';
import { PASSWORD, signedIn, signInAndAllow, startOAuthRig } from '../helpers/connector-oauth.js';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('connect and disconnect an OAuth connector from Settings', async (t) => {
    const rig = await startOAuthRig(t);
    await signedIn(rig, 'alice');
    const grants = async () => (await dbRows(rig.app.database.sql, 'SELECT user_id FROM connector_tokens')).length;

    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    await page.goto(rig.app.url + '/#/login');
    await page.fill('#username', 'alice');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/chat/);
    await page.goto(rig.app.url + '/#/settings');
    const row = '#connectors li[data-connector="tickets"]';
    await page.waitForSelector(`${row} button`);
    t.match(await page.textContent(row), /Acme Tickets\s*Connect/, 'listed, not connected');

    await page.click(`${row} button`);
    // The tracker's authorization server: its login form, then its consent form.
    t.equal(await signInAndAllow(page, 'alice'), rig.tickets.auth.url, 'at the authorization server');
    await page.waitForURL(`${rig.app.url}/?connected=tickets#/settings`);
    await page.waitForSelector(`${row} .ok`);
    t.match(await page.textContent(row), /Connected/, 'back in Settings, connected');
    t.equal(await grants(), 1);
    await screenshot(page, 'settings-connectors');

    await page.click(`${row} button:has-text("Disconnect")`);
    await page.waitForSelector('#connectors ~ .banner, .panel .banner');
    t.match(dialogs[0], /Disconnect Acme Tickets\?/, 'asks first');
    t.match(
      await page.textContent('.panel .banner'),
      /Disconnected Acme Tickets\./,
      'the server confirmed the revocation',
    );
    await page.waitForSelector(`${row} button:has-text("Connect")`);
    t.equal(await grants(), 0, 'the grant is gone');
  });
}
